"""Score the scripted Crafter baselines (random, the collector) on the test panel, BALROG's way.

    .venv/bin/python scripts/crafter_baselines.py [SEEDS]   # the first SEEDS test seeds (default: all 256)

Each episode runs BALROG's 2000 steps (or until the player dies); the score is BALROG's: the share
of the 22 achievements unlocked, in %, averaged over episodes.  Prints one JSON line per agent:
the mean score, its standard error, the mean episode length and how often each achievement was
unlocked.  data/crafter/README.md records the numbers.
"""

from __future__ import annotations

import json
import random
import statistics
import sys
from collections import Counter
from collections.abc import Callable

import gymnasium

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import panels
from ragen_bench.data.crafter import BALROG_STEPS
from ragen_bench.envs.crafter.collector import Collector
from ragen_bench.envs.crafter.env import ACTION_NAMES, CrafterEnv

ID = "RAGEN/Crafter-v0"


def _random(seed: int) -> Callable[[CrafterEnv], int]:
    rng = random.Random(seed)
    return lambda env: rng.randrange(len(ACTION_NAMES))


AGENTS: dict[str, Callable[[int], Callable[[CrafterEnv], int]]] = {
    "random": _random, "collector": lambda seed: Collector(seed).act,
}


def score(agent: str, seeds: list[int]) -> dict[str, object]:
    """``agent``'s BALROG score over ``seeds``: mean, standard error, steps, achievement counts."""
    env = gymnasium.make(ID).unwrapped
    steps_cap = BALROG_STEPS
    scores, lengths, unlocked = [], [], Counter()
    for seed in seeds:
        policy = AGENTS[agent](seed)
        _, info = env.reset(seed=seed)
        steps = 0
        while not env.episode_finished and steps < steps_cap:
            info = env.step(policy(env))[4]
            steps += 1
        scores.append(100 * info["progress"])  # BALROG reports per cent
        lengths.append(steps)
        unlocked.update(name for name, count in info["achievements"].items() if count)
    error = statistics.stdev(scores) / len(scores) ** 0.5 if len(scores) > 1 else 0.0
    return {"agent": agent, "episodes": len(seeds), "score": round(statistics.mean(scores), 2),
            "stderr": round(error, 2), "mean_steps": round(statistics.mean(lengths), 1),
            "unlocked": dict(sorted(unlocked.items()))}


def main(argv: list[str]) -> int:
    seeds = list(panels.load(ID, "test").seeds)
    if argv:
        if not argv[0].isdigit() or not 1 <= int(argv[0]) <= len(seeds):
            print(f"SEEDS must be an int in 1..{len(seeds)}, got {argv[0]!r}", file=sys.stderr)
            return 2
        seeds = seeds[: int(argv[0])]
    for agent in AGENTS:
        print(json.dumps(score(agent, seeds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
