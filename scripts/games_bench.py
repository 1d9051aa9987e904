"""Speed of the games and their scripted players, beside PettingZoo's own classic games.

    python scripts/games_bench.py [seconds per measurement]

Steps/s: random legal moves (drawn from the action mask with a seeded generator) through
each game's wrapped ``env()`` (the Prisoner's Dilemma: ``parallel_env()``), ``reset``
included, for ours and -- in the same process, when PettingZoo's classic games import
(they need pygame) -- ``tictactoe_v3`` and ``connect_four_v3``.  Moves/s of the scripted
players: each plays both seats of whole games from the opening, its moves stepped through
the wrapped ``env()`` too.  Prints one JSON line per measurement.
(``tests/benchmarks/test_bench_games.py`` times the same with pytest-benchmark.)
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np


def _rate(play_game: Callable[[int], int], seconds: float) -> float:
    """Counted steps per second of whole games ``play_game(seed) -> steps``, seeds 0, 1, ... for ``seconds``."""
    steps, start, seed = 0, time.perf_counter(), 0
    while time.perf_counter() - start < seconds:
        steps += play_game(seed)
        seed += 1
    return steps / (time.perf_counter() - start)


def aec_steps_per_second(make: Callable[[], Any], seconds: float) -> float:
    env = make()
    rng = np.random.default_rng(0)

    def play(seed: int) -> int:
        env.reset(seed=seed)
        steps = 0
        for _ in env.agent_iter():
            observation, _, terminated, truncated, _ = env.last()
            if terminated or truncated:
                action = None
            else:
                legal = np.flatnonzero(observation["action_mask"])
                action = int(legal[rng.integers(len(legal))])
            env.step(action)
            steps += 1
        return steps

    return _rate(play, seconds)


def parallel_steps_per_second(make: Callable[[], Any], seconds: float) -> float:
    env = make()
    rng = np.random.default_rng(0)

    def play(seed: int) -> int:
        env.reset(seed=seed)
        steps = 0
        while env.agents:
            env.step({agent: int(rng.integers(2)) for agent in env.agents})
            steps += 1
        return steps

    return _rate(play, seconds)


def player_moves_per_second(make_env: Callable[[], Any], player: Any, seconds: float) -> float:
    env = make_env()
    game = env.unwrapped  # what the player reads; its moves go through env's wrappers

    def play(seed: int) -> int:
        env.reset(seed=seed)
        while not game.game_over:
            env.step(player.choose(game, game.agent_selection))
        return len(game.board.moves)

    return _rate(play, seconds)


def main(argv: list[str]) -> int:
    from ragen_bench.games import connect_four, prisoners_dilemma, tictactoe
    from ragen_bench.games.opponents import OPPONENTS, RandomPlayer

    seconds = float(argv[0]) if argv else 2.0
    rows: list[tuple[str, str, float]] = [
        ("steps/s", "RAGEN/TicTacToe-v0 env()", aec_steps_per_second(tictactoe.env, seconds)),
        ("steps/s", "RAGEN/ConnectFour-v0 env()", aec_steps_per_second(connect_four.env, seconds)),
        ("steps/s", "RAGEN/PrisonersDilemma-v0 parallel_env()",
         parallel_steps_per_second(prisoners_dilemma.parallel_env, seconds)),
    ]
    try:
        from pettingzoo.classic import connect_four_v3, tictactoe_v3
    except ImportError as missing:
        print(json.dumps({"note": f"PettingZoo's classic games are not importable ({missing})"}))
    else:
        rows += [
            ("steps/s", "pettingzoo tictactoe_v3 env()", aec_steps_per_second(tictactoe_v3.env, seconds)),
            ("steps/s", "pettingzoo connect_four_v3 env()", aec_steps_per_second(connect_four_v3.env, seconds)),
        ]
    rows += [
        ("moves/s", "tictactoe minimax", player_moves_per_second(tictactoe.env, OPPONENTS["tictactoe"]["minimax"](), seconds)),
        ("moves/s", "tictactoe random", player_moves_per_second(tictactoe.env, RandomPlayer(), seconds)),
        ("moves/s", "connect_four strong", player_moves_per_second(connect_four.env, OPPONENTS["connect_four"]["strong"](), seconds)),
        ("moves/s", "connect_four random", player_moves_per_second(connect_four.env, RandomPlayer(), seconds)),
    ]
    for unit, what, value in rows:
        print(json.dumps({"what": what, unit: round(value)}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
