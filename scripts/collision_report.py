"""Measure how many test-panel levels also occur among the first N train seeds.

Levels are compared by the SHA-256 of their initial observation (the panel hash).
Writes ``data/<family>/collisions.json``; the env card quotes it.

    python scripts/collision_report.py [--train-seeds 100000] [ids...]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import gymnasium
from tqdm import tqdm

import ragen_bench
from ragen_bench import panels


def measure(env_id: str, train_seeds: int) -> dict:
    test = panels.load(env_id, "test")
    test_levels = dict(zip(test.obs_sha256, test.seeds))
    env = gymnasium.make(env_id, **({"solve_on_reset": False} if "Sokoban" in env_id else {})).unwrapped
    start = panels.TRAIN_SEED_START
    hits: dict[int, list[int]] = {}
    began = time.perf_counter()
    for seed in tqdm(range(start, start + train_seeds), desc=env_id, mininterval=5):
        digest = panels.observation_sha256(env.reset(seed=seed)[0])
        if digest in test_levels:
            hits.setdefault(test_levels[digest], []).append(seed)
    return {
        "env_id": env_id,
        "test_checksum": test.checksum,
        "train_seeds_checked": [start, start + train_seeds - 1],
        "test_levels": len(test.seeds),
        "test_levels_seen_in_train": len(hits),
        "train_seeds_hitting_test_levels": sum(len(v) for v in hits.values()),
        "examples": {str(k): v[:5] for k, v in sorted(hits.items())[:10]},
        "seconds": round(time.perf_counter() - began, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--train-seeds", type=int, default=100_000)
    parser.add_argument("ids", nargs="*", default=[i for i in ragen_bench.ENV_IDS if "Sokoban" in i])
    args = parser.parse_args()
    for env_id in args.ids:
        report = measure(env_id, args.train_seeds)
        path = panels.data_dir() / panels.family(env_id) / "collisions.json"
        existing = json.loads(path.read_text()) if path.exists() else {}
        existing[env_id] = report
        path.write_text(json.dumps(existing, indent=1, sort_keys=True) + "\n")
        print(json.dumps(report))


if __name__ == "__main__":
    main()
