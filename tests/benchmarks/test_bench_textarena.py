"""Speed of the TextArena ids beside TextArena's own env, in one run.

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_textarena.py \\
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Two games, each twice: ``RAGEN/TA-<Game>-v0`` (ours: the game's own generator bound around
every call, stdout dropped, the messages laid out as text) and TextArena's own
``<Game>-v0-raw`` played as TextArena's loop plays it (``step`` then ``get_observation``: the
messages as a list, no text built).  TextArena's default wrappers (``textarena.make("<Game>-v0")``)
are not timed: their observation history is not cleared by ``reset`` in 0.7.4, so a step's
cost grows with every episode played before it.  A timed step is the
first move of a fresh episode of the test panel's first seed (the reset is not timed); a timed
reset deals that seed again.  Every result is checked: ours against the test panel's checksum
and against the library's text, the library's against a move it took.
"""

from __future__ import annotations

import itertools

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from tests.benchmarks.checks import PANEL_SEED, check_panel_reset, recorded, time_first_steps

textarena = pytest.importorskip("textarena", reason="needs the textarena extra: pip install 'ragen-bench[textarena]'")

# game -> its first move (2048's slide, Minesweeper's first reveal, which places the mines).
GAMES = {"2048-v0": "[up]", "Minesweeper-v0": "[3 3]"}


class LibraryLoop:
    """TextArena's raw env as its own loop drives a player: reset, then step and read the next observation."""

    def __init__(self, game: str) -> None:
        self.env = textarena.make(f"{game}-raw")

    def reset(self, seed: int) -> list:
        self.env.reset(num_players=1, seed=seed)
        return self.env.get_observation()[1]

    def step(self, action: str) -> tuple:
        done, info = self.env.step(action)
        return done, self.env.get_observation()[1]


def _ours(game: str) -> gymnasium.Env:
    return gymnasium.make(f"RAGEN/TA-{game.removesuffix('-v0')}-v0").unwrapped


@pytest.mark.parametrize("game", GAMES)
def test_reset_ours(benchmark, game):
    env, results = _ours(game), []
    benchmark.pedantic(recorded(lambda: env.reset(seed=PANEL_SEED), results), rounds=500, iterations=1, warmup_rounds=10)
    for observation, info in results:
        check_panel_reset(env.spec.id if env.spec else f"RAGEN/TA-{game[:-3]}-v0", observation, info, lengths=False)


@pytest.mark.parametrize("game", GAMES)
def test_reset_library(benchmark, game):
    env, results = LibraryLoop(game), []
    benchmark.pedantic(recorded(lambda: env.reset(PANEL_SEED), results), rounds=500, iterations=1, warmup_rounds=10)
    assert all(messages and messages == results[0] for messages in results)


@pytest.mark.parametrize("game", GAMES)
def test_step_ours(benchmark, game):
    env = _ours(game)
    results = time_first_steps(benchmark, env, itertools.repeat(GAMES[game]), rounds=1000)
    assert all(result == results[0] for result in results)
    assert results[0][4]["action_is_valid"] and not results[0][2]
    library = LibraryLoop(game)
    library.reset(PANEL_SEED)
    _, messages = library.step(GAMES[game])
    # The same messages, a player's own move after its name.
    texts = [(f"[Player {who}] " if who >= 0 else "") + text.strip() for who, text, _ in messages if text.strip()]
    assert results[0][0] == "\n\n".join(texts)


@pytest.mark.parametrize("game", GAMES)
def test_step_library(benchmark, game):
    library, results = LibraryLoop(game), []

    def fresh_episode() -> None:  # pedantic() would pass a returned value on as arguments
        library.reset(PANEL_SEED)

    benchmark.pedantic(recorded(lambda: library.step(GAMES[game]), results), setup=fresh_episode, rounds=1000,
                       iterations=1, warmup_rounds=10)
    assert all(result == results[0] for result in results) and results[0][0] is False
