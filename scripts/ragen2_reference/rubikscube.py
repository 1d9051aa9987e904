"""Record RAGEN-2's own 2x2 Rubik's cube episodes: the reference ``tests/test_rubikscube.py`` checks ours against.

Run with an interpreter that has RAGEN-2's env dependencies (Gymnasium, numpy, omegaconf),
outside the project's venv, on a checkout of mll-lab-nu/RAGEN at 20daedc::

    /work/ragen2-venv/bin/python scripts/ragen2_reference/rubikscube.py /path/to/ragen2 \
        tests/fixtures/ragen2/rubikscube.jsonl.gz

Nothing of RAGEN-2 is installed or copied: ``ragen`` and ``ragen.env`` are registered as
empty packages whose search path is the checkout (its ``__init__`` files import veRL and
every env), so Python loads RAGEN-2's own ``ragen/env/rubikscube/``, ``ragen/env/base.py``
and ``ragen/utils.py`` from there.

One record per (scramble depth, seed): depths 1, 3 and 5 (``max_steps`` 20, RAGEN-2's
``rubikscube`` config), seeds 0-99 and the test panel's 123-378.  Each holds the reset
observation and one episode: seeds 0-99 of even number play the fixed sequence ``U, U',
D, ..., B'`` cycled until the episode ends (20 steps: truncation, unless it solves
first); the other seeds play the scramble's undo (each drawn turn inverted, in reverse
order), which solves the cube.  Per step: the action's name, the SHA-256 of the
observation (the full text for the last step), reward, done and RAGEN-2's info.
"""

from __future__ import annotations

import gzip
import hashlib
import itertools
import json
import sys
import types
from pathlib import Path

import numpy as np

DEPTHS = (1, 3, 5)
MAX_STEPS = 20
SEEDS = (*range(100), *range(123, 379))


def load_ragen2(checkout: Path) -> types.ModuleType:
    for name, relative in {"ragen": "ragen", "ragen.env": "ragen/env"}.items():
        package = types.ModuleType(name)
        package.__path__ = [str(checkout / relative)]
        sys.modules[name] = package
    import ragen.env.rubikscube as rubikscube  # noqa: PLC0415 (needs the stand-in packages)

    return rubikscube


def undo(seed: int, depth: int) -> list[int]:
    """The inverse of the scramble RAGEN-2 draws for ``seed`` (its draws, redone here)."""
    rng = np.random.default_rng(seed)
    drawn = [int(rng.integers(1, 13)) for _ in range(depth)]
    return [action + 1 if action % 2 else action - 1 for action in reversed(drawn)]


def record(module: types.ModuleType, depth: int, seed: int) -> dict:
    env = module.RubiksCube2x2Env(module.RubiksCube2x2Config(scramble_depth=depth, max_steps=MAX_STEPS))
    names = env.config.action_lookup
    observation = env.reset(seed=seed)
    actions = itertools.cycle(range(1, 13)) if seed < 100 and seed % 2 == 0 else iter(undo(seed, depth))
    steps = []
    for action in actions:
        observation_after, reward, done, info = env.step(action)
        step = {
            "action": names[action],
            "obs_sha256": hashlib.sha256(observation_after.encode()).hexdigest(),
            "reward": reward,
            "done": done,
            "info": info,
        }
        steps.append(step)
        if done:
            step["obs"] = observation_after
            break
    return {
        "env": "rubikscube",
        "scramble_depth": depth,
        "max_steps": MAX_STEPS,
        "seed": seed,
        "obs": observation,
        "steps": steps,
    }


def main(checkout: str, out: str) -> None:
    module = load_ragen2(Path(checkout).resolve())
    lines = [json.dumps(record(module, depth, seed), sort_keys=True) + "\n" for depth in DEPTHS for seed in SEEDS]
    # mtime=0: the same records give the same file bytes.
    Path(out).write_bytes(gzip.compress("".join(lines).encode("utf-8"), mtime=0))


if __name__ == "__main__":
    main(*sys.argv[1:])
