"""Measure 2048's reference search (the numbers in data/game_2048/README.md).

    python scripts/game_2048_strength.py [env id] [split] [max_steps] [seeds]

Plays ``optimal_action()`` (the expectimax search) on the seeds of the id's frozen panel
(default ``RAGEN/2048-v0``, ``test``: all 256, or its first ``seeds``), with the id's own
step cap or ``max_steps`` (16000 lets games run to their end, which is where RAGEN-2 can
record a success).  Prints one JSON line per game and a summary line: RAGEN-2's success rate,
mean and distribution of the max tile, mean score and moves, the search's time per move.
"""

from __future__ import annotations

import collections
import json
import sys
import time

import gymnasium

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import panels


def play(env, seed: int) -> dict:
    env.reset(seed=seed)
    moves, thinking = 0, 0.0
    while True:
        started = time.perf_counter()
        action = env.optimal_action()
        thinking += time.perf_counter() - started
        _, _, terminated, truncated, info = env.step(action)
        moves += 1
        if terminated or truncated:
            break
    return {
        "seed": seed, "moves": moves, "max_tile": info["max_tile"], "score": info["score"],
        "success": info["success"], "game_over": terminated, "ms_per_move": round(1000 * thinking / moves, 3),
    }


def main(argv: list[str]) -> int:
    env_id = argv[0] if argv else "RAGEN/2048-v0"
    split = argv[1] if len(argv) > 1 else "test"
    kwargs = {"max_steps": int(argv[2])} if len(argv) > 2 else {}
    env = gymnasium.make(env_id, **kwargs).unwrapped
    games = []
    seeds = panels.load(env_id, split).seeds
    for seed in seeds[: int(argv[3])] if len(argv) > 3 else seeds:
        games.append(play(env, seed))
        print(json.dumps(games[-1]), flush=True)
    count = len(games)
    summary = {
        "env_id": env_id, "split": split, "max_steps": env.max_steps, "games": count,
        "success_rate": sum(g["success"] for g in games) / count,
        "game_over_rate": sum(g["game_over"] for g in games) / count,
        "mean_max_tile": sum(g["max_tile"] for g in games) / count,
        "max_tiles": dict(sorted(collections.Counter(g["max_tile"] for g in games).items())),
        "mean_score": sum(g["score"] for g in games) / count,
        "mean_moves": sum(g["moves"] for g in games) / count,
        "ms_per_move": round(sum(g["ms_per_move"] * g["moves"] for g in games) / sum(g["moves"] for g in games), 3),
    }
    print(json.dumps({"summary": summary}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
