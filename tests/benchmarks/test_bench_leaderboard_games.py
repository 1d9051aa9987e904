"""How fast ``leaderboard verify`` replays a game entry: 1,024 TicTacToe games.

RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_leaderboard_games.py \
    --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

The entry is the random agent against TicTacToe's default opponent (minimax) on the whole
test panel, 4 samples a seed (256 x 4 = 1,024 games, both seats), made once with the real
harness.  One round is one ``verify`` of the folder: reading the log, replaying every game
(the agent's recorded replies through the chat layer, minimax choosing again from the
seed), comparing each record field by field and recomputing the summary with its games
table.  games/s = 1,024 / median.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pettingzoo")

from ragen_bench.leaderboard.verify import verify  # noqa: E402

from ..test_leaderboard import make_submission  # noqa: E402

GAMES = 1024


@pytest.fixture(scope="module")
def entry(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_submission(tmp_path_factory.mktemp("games") / "ttt", "ttt", "env=RAGEN/TicTacToe-v0", "agent=random",
                           "samples=4")


def test_bench_verify_1024_tictactoe_games(benchmark: Any, entry: Path) -> None:
    benchmark.group = "leaderboard verify: a game entry"
    run = benchmark.pedantic(verify, args=(entry,), rounds=5, warmup_rounds=1)
    assert len(run.rows) == GAMES and run.summary["games"][0]["games"] == GAMES
    assert run.summary["games"][0]["seat_player_0_games"] == GAMES // 2
    benchmark.extra_info["games"] = GAMES
    benchmark.extra_info["turns"] = run.turns
