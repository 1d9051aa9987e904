"""How fast the games' rating ladder is recomputed: 2,048 games, and 1,024 of one game.

RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_ladder.py \
    --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

One round is one :func:`ragen_bench.leaderboard.ladder.ladders` call on games already
verified (replay is ``leaderboard verify``'s benchmark): the sort into rounds, one openskill
Plackett-Luce update per game and the rows.  The games stand for a full games section:
4 entries' players against 2 opponents each on 128 seeds (1,024 games) of one game, and the
same on a second game (2,048 in all); outcomes follow a fixed rule, so every round rates the
same games.
"""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("openskill")

from ragen_bench.leaderboard.ladder import RatedGame, ladders  # noqa: E402

GAMES = ("RAGEN/TicTacToe-v0", "RAGEN/ConnectFour-v0")
PLAYERS = ("random", "smollm2", "trained", "human")
OPPONENTS = ("random", "minimax")
SEEDS = 128


def games_of(envs: tuple[str, ...]) -> list[RatedGame]:
    """Each player against each opponent on every seed; the outcome cycles with seed, player and opponent."""
    return [RatedGame(env, seed, 0, player, opponent, ("win", "draw", "loss")[(seed + i + 2 * j) % 3], player)
            for env in envs for seed in range(SEEDS)
            for i, player in enumerate(PLAYERS) for j, opponent in enumerate(OPPONENTS)]


@pytest.mark.parametrize("envs", [GAMES[:1], GAMES], ids=["1024-games-1-ladder", "2048-games-2-ladders"])
def test_bench_ladder(benchmark: Any, envs: tuple[str, ...]) -> None:
    benchmark.group = "leaderboard: the games' rating ladder"
    games = games_of(envs)
    assert len(games) == 1024 * len(envs)
    rows = benchmark.pedantic(ladders, args=(games,), rounds=10, warmup_rounds=1)
    assert len(rows) == len(envs) * (len(PLAYERS) + len(OPPONENTS))
    assert sum(row["games"] for row in rows) == 2 * len(games)  # each game counted for both its players
