"""Speed of TextArena's two-player games as PettingZoo ids beside TextArena's own env, in one run.

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_textarena_games.py \\
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Two games, each twice: ``RAGEN/TA-<Game>-v0`` through ``env()`` (what PettingZoo users get:
PettingZoo's order checks and ours, the game's generator bound around every call, each seat's
messages laid out as text, the moves the text shows read for the scripted players) and
TextArena's own ``<Game>-v0-raw`` played as its loop plays it (``step`` then
``get_observation``: the messages as a list, no text built).  A timed step is the first move of a
fresh game of the test panel's first seed (the reset is not timed; TextArena's game is a fresh copy
of the new game, as ours is at every reset); a timed reset deals that seed again (ours copies the
new game first, TextArena's does not).  Every result is checked: ours against the library's messages, the library's against a move
it took.
"""

from __future__ import annotations

import copy

import pytest

from tests.benchmarks.checks import PANEL_SEED, recorded

pytest.importorskip("pettingzoo")
textarena = pytest.importorskip("textarena", reason="needs the textarena extra: pip install 'ragen-bench[textarena]'")

from ragen_bench.games import make_multiagent  # noqa: E402

# game -> the first move of the seat on move at seed 123.
GAMES = {"TicTacToe-v0": "[4]", "KuhnPoker-v0": "[check]"}


class LibraryLoop:
    """TextArena's raw env as its own loop drives the players: reset, then step and read the next observation."""

    def __init__(self, game: str) -> None:
        self.new = textarena.make(f"{game}-raw")
        self.env = self.new

    def reset(self, seed: int) -> list:
        self.env.reset(num_players=2, seed=seed)
        return self.env.get_observation()[1]

    def fresh(self, seed: int) -> None:
        """A copy of the new game, reset (Kuhn poker's deck stays shuffled across resets of one object)."""
        self.env = copy.deepcopy(self.new)
        self.reset(seed)

    def step(self, action: str) -> tuple:
        done, info = self.env.step(action)
        return done, self.env.get_observation()[1]


def _ours(game: str):  # noqa: ANN202 (a PettingZoo AECEnv: PettingZoo is imported lazily)
    return make_multiagent(f"RAGEN/TA-{game.removesuffix('-v0')}-v0")


@pytest.mark.parametrize("game", GAMES)
def test_reset_ours(benchmark, game):
    env, results = _ours(game), []

    def deal() -> tuple[str, str]:
        env.reset(seed=PANEL_SEED)
        return env.observe("player_0"), env.observe("player_1")

    benchmark.pedantic(recorded(deal, results), rounds=500, iterations=1, warmup_rounds=10)
    assert all(result == results[0] for result in results) and "It is your" in results[0][0]


@pytest.mark.parametrize("game", GAMES)
def test_reset_library(benchmark, game):
    env, results = LibraryLoop(game), []
    benchmark.pedantic(recorded(lambda: env.reset(PANEL_SEED), results), rounds=500, iterations=1, warmup_rounds=10)
    # Kuhn poker deals from a deck its last game left shuffled: the same seed, other cards, in TextArena's own env.
    assert all(messages for messages in results)


@pytest.mark.parametrize("game", GAMES)
def test_step_ours(benchmark, game):
    env, results = _ours(game), []

    def fresh_game() -> None:  # pedantic() would pass a returned value on as arguments
        env.reset(seed=PANEL_SEED)

    def move() -> tuple[str, str, bool]:
        seat = env.agent_selection
        env.step(GAMES[game])
        return seat, env.observe(env.agent_selection), env.unwrapped.infos[seat]["move_refused"]

    benchmark.pedantic(recorded(move, results), setup=fresh_game, rounds=1000, iterations=1, warmup_rounds=10)
    assert all(result == results[0] for result in results) and results[0][2] is False
    library = LibraryLoop(game)
    library.fresh(PANEL_SEED)
    _, messages = library.step(GAMES[game])
    # The next seat's view holds the messages TextArena sends it (its own words after its name).
    texts = [(f"[Player {who}] " if who >= 0 else "") + text.strip() for who, text, _ in messages if text.strip()]
    assert all(text in results[0][1] for text in texts)


@pytest.mark.parametrize("game", GAMES)
def test_step_library(benchmark, game):
    library, results = LibraryLoop(game), []

    def fresh_game() -> None:
        library.fresh(PANEL_SEED)

    benchmark.pedantic(recorded(lambda: library.step(GAMES[game]), results), setup=fresh_game, rounds=1000,
                       iterations=1, warmup_rounds=10)
    assert all(result == results[0] for result in results) and results[0][0] is False
