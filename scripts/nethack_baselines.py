"""Measure two scripted baselines on the MiniHack and NetHack ids, scored as BALROG scores them.

    .venv-nethack/bin/python scripts/nethack_baselines.py [EPISODES]   # first EPISODES test seeds (default 32)

* ``random``: a uniform action each step (its generator seeded by the episode's seed).
* ``explore``: :class:`ragen_bench.envs.nethack.explorer.Explorer`, the envs' ``baseline_action()``:
  reads only the observation text, walks to a staircase down once one is drawn, else towards the unseen.

Each plays up to its id's chat budget of actions (100 in MiniHack, 1000 in NetHack).  Prints one
row per id and agent: mean BALROG score (success; NetHack's progression) and mean actions.
"""

from __future__ import annotations

import sys

import gymnasium
import numpy as np

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import panels
from ragen_bench.data.nethack import rows
from ragen_bench.envs.nethack.explorer import Explorer
from ragen_bench.registry import chat_budget


def play(env_id: str, seed: int, agent: str) -> tuple[float, int]:
    env = gymnasium.make(env_id).unwrapped
    rng = np.random.default_rng(seed)
    _, info = env.reset(seed=seed)
    explorer = Explorer(seed)  # the env's baseline_action() follows the same policy
    limit = chat_budget(env_id).max_actions_per_episode
    actions = 0
    while actions < limit:
        action = explorer.act(env) if agent == "explore" else int(rng.integers(len(env.action_names)))
        _, _, terminated, truncated, info = env.step(action)
        actions += 1
        if terminated or truncated:
            break
    return float(info["progress"]), actions


def main(argv: list[str]) -> int:
    episodes = int(argv[0]) if argv else 32
    print(f"{'id':40} {'agent':8} {'episodes':>8} {'score':>7} {'actions':>8}")
    for row, _ in rows():
        seeds = panels.load(row["id"], "test").seeds[:episodes]
        for agent in ("random", "explore"):
            results = [play(row["id"], seed, agent) for seed in seeds]
            score = sum(r[0] for r in results) / len(results)
            mean_actions = sum(r[1] for r in results) / len(results)
            print(f"{row['id']:40} {agent:8} {len(results):8d} {score:7.3f} {mean_actions:8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
