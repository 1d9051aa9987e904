"""Speed of the multi-agent games, beside PettingZoo's own classic games in the same run.

RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_games.py \
    --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Every game is stepped through what PettingZoo users get: the wrapped ``env()`` of the board
games, ``parallel_env()`` of the Prisoner's Dilemma.  One round plays 20 whole games with
uniformly random legal moves (seeded, so every round plays the same moves):
steps/s = ``extra_info["steps"]`` / median.  ``python scripts/games_bench.py`` prints the
same rates without pytest.  PettingZoo's
``tictactoe_v3`` and ``connect_four_v3`` need pygame (the ``peers`` extra).
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from ragen_bench.games import connect_four, prisoners_dilemma, tictactoe  # noqa: E402
from ragen_bench.games.opponents import OPPONENTS  # noqa: E402

GAMES = 20


def _play_random_aec(make) -> int:
    """Steps taken by GAMES random games; every game must end (a draw or a win)."""
    env = make()
    rng = np.random.default_rng(0)
    steps = 0
    for seed in range(GAMES):
        env.reset(seed=seed)
        for agent in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            legal = np.flatnonzero(observation["action_mask"])
            env.step(None if terminated or truncated else int(legal[rng.integers(len(legal))]))
            steps += 1
        assert not env.agents  # the game is over
    return steps


def _peers():
    try:
        from pettingzoo.classic import connect_four_v3, tictactoe_v3
    except ImportError as missing:  # pygame absent
        pytest.skip(f"PettingZoo's classic games do not import: {missing}")
    return {"tictactoe_v3": tictactoe_v3.env, "connect_four_v3": connect_four_v3.env}


AEC = {"RAGEN/TicTacToe-v0": tictactoe.env, "RAGEN/ConnectFour-v0": connect_four.env}
# Moves per game (5..9 in Tic-Tac-Toe, 7..42 in Connect Four) plus one closing step per seat.
STEPS_PER_GAME = {"RAGEN/TicTacToe-v0": (7, 11), "tictactoe_v3": (7, 11), "RAGEN/ConnectFour-v0": (9, 44),
                  "connect_four_v3": (9, 44)}


@pytest.mark.parametrize("name", [*AEC, "tictactoe_v3", "connect_four_v3"])
def test_aec_random_games(benchmark, name):
    benchmark.group = "games: 20 random games (AEC env(), observation + mask each step)"
    make = AEC.get(name) or _peers()[name]
    assert make().unwrapped is not make()  # PettingZoo's wrappers are what is timed
    steps = benchmark(_play_random_aec, make)
    low, high = STEPS_PER_GAME[name]
    assert GAMES * low <= steps <= GAMES * high
    benchmark.extra_info["steps"] = steps


def test_parallel_prisoners_dilemma(benchmark):
    benchmark.group = "games: 20 random games (Parallel API)"
    env = prisoners_dilemma.parallel_env()

    def play() -> int:
        rng = np.random.default_rng(0)
        steps = 0
        for seed in range(GAMES):
            env.reset(seed=seed)
            while env.agents:
                env.step({agent: int(rng.integers(2)) for agent in env.agents})
                steps += 1
        return steps

    steps = benchmark(play)
    assert GAMES * 5 <= steps <= GAMES * 10  # the seed draws 5..10 rounds
    benchmark.extra_info["steps"] = steps


@pytest.mark.parametrize(("family", "player", "make"), [
    ("tictactoe", "minimax", tictactoe.env),
    ("connect_four", "strong", connect_four.env),
])
def test_scripted_player_self_play(benchmark, family, player, make):
    """The player reads the game under the wrappers; its moves go through ``env()``'s wrappers."""
    benchmark.group = "games: scripted player, one self-play game (wrapped env())"
    scripted = OPPONENTS[family][player]()
    env = make()
    game = env.unwrapped
    assert env is not game

    def play() -> int:
        env.reset(seed=0)
        moves = 0
        while not game.game_over:
            env.step(scripted.choose(game, game.agent_selection))
            moves += 1
        return moves

    moves = benchmark(play)
    if family == "tictactoe":
        assert moves == 9  # perfect play draws: the board fills
    benchmark.extra_info["moves"] = moves
