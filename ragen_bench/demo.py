"""The embedded default job: optimal vs random agents on RAGEN/Sokoban-6x6-v0's test panel.

Runs through the plain Gymnasium API (no model, no downloads) and prints one table.
"""

from __future__ import annotations

import random
import statistics

import gymnasium

import ragen_bench  # noqa: F401  (registers the RAGEN/ ids)
from ragen_bench import panels

ENV_ID = "RAGEN/Sokoban-6x6-v0"
MAX_ACTIONS = 100


def _play(env, seed: int, policy) -> dict:
    _, info = env.reset(seed=seed)
    optimal_length = info["optimal_length"]
    total, actions, success = 0.0, 0, False
    for actions in range(1, MAX_ACTIONS + 1):
        _, reward, terminated, truncated, info = env.step(policy(env))
        total += reward
        if terminated or truncated:
            break
    success = info["success"]
    return {"success": success, "return": total, "actions": actions, "optimal_length": optimal_length}


def main() -> None:
    panel = panels.load(ENV_ID, "test")
    env = gymnasium.make(ENV_ID).unwrapped
    rng = random.Random(0)
    policies = {"optimal": lambda e: e.optimal_action(), "random": lambda e: rng.randrange(4)}
    print(f"{ENV_ID}  test panel: {len(panel.seeds)} levels  checksum {panel.checksum[:16]}")
    print(f"{'agent':<10}{'success':>10}{'mean return':>14}{'mean actions':>14}{'vs optimal':>12}")
    for name, policy in policies.items():
        episodes = [_play(env, seed, policy) for seed in panel.seeds]
        solved = [e for e in episodes if e["success"]]
        ratio = statistics.mean(e["actions"] / e["optimal_length"] for e in solved) if solved else float("nan")
        print(
            f"{name:<10}{len(solved) / len(episodes):>10.1%}"
            f"{statistics.mean(e['return'] for e in episodes):>14.2f}"
            f"{statistics.mean(e['actions'] for e in episodes):>14.1f}"
            f"{ratio:>11.2f}x"
        )


if __name__ == "__main__":
    main()
