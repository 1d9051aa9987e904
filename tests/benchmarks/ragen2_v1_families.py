"""RAGEN-2's own FrozenLake, Bandit and Sokoban envs, for the benchmarks to time beside ours.

FrozenLake and Bandit import only Gymnasium and numpy, so they load in this process from the
checkout named by ``RAGEN2_CHECKOUT`` (``peer_checkout.py``).  RAGEN-2's Sokoban subclasses
``gym_sokoban``'s env, which the project does not depend on: it is timed in a subprocess of
the Python named by ``RAGEN2_PYTHON`` (one with RAGEN-2's own dependencies: gym, gym_sokoban,
numpy, matplotlib), which runs ``ragen2_sokoban_timer.py`` and reports its timings and what it
produced.  Without them the benchmarks skip and say how to get them.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.benchmarks.peer_checkout import RAGEN2, Unavailable, load

# Git blob ids at RAGEN-2's commit of every file each env imports (`git ls-tree -r 20daedc`).
_BASE = {"ragen/env/base.py": "e29f1a00f1dec9d73893283e8421db4abd6bf878"}
FROZEN_LAKE_BLOB_IDS = {
    **_BASE,
    "ragen/utils.py": "50b6d0e26440aee66ef0812b639d900a60f26a2b",
    "ragen/env/frozen_lake/__init__.py": "f6acdf3bb5aea6fbf166025539cd032e90137ee4",
    "ragen/env/frozen_lake/config.py": "de054f403b9dc240e9fafcaafe6950b7ee442ae0",
    "ragen/env/frozen_lake/env.py": "9ee3addaf50dbbf7e3d1a18a4518b56b8f7e247c",
    "ragen/env/frozen_lake/utils.py": "086095c739b0b303ba6d394ae4a00ac7bb1b44c0",
}
BANDIT_BLOB_IDS = {
    **_BASE,
    "ragen/env/bandit/__init__.py": "d65793d4dc1bcb0d3f9cfcc276c6cc3986d28357",
    "ragen/env/bandit/config.py": "d577cc79e3f3a808bbdd18e61c279bc24ad69f1d",
    "ragen/env/bandit/env.py": "c59f142f0e70550bc82cfa3b77109bf148df3c51",
}
SOKOBAN_BLOB_IDS = {
    **_BASE,
    "ragen/utils.py": "50b6d0e26440aee66ef0812b639d900a60f26a2b",
    "ragen/env/sokoban/__init__.py": "f2a759d4511ffca17b235045e104ce21d874d169",
    "ragen/env/sokoban/config.py": "7151b6f1eec0b9274fc82bb79eb6fbfcabb26867",
    "ragen/env/sokoban/env.py": "17cd636fda0c4110599832226b9d518f9cbcef3c",
    "ragen/env/sokoban/utils.py": "882d99066bafec1016bd2efacacf227480d78ef1",
}

# Our id -> RAGEN-2's env config (its config/envs.yaml env_config of the tag the id reproduces).
FROZEN_LAKE_CONFIGS = {
    "RAGEN/FrozenLake-4x4-R2-v0": {"success_rate": 0.8},
    "RAGEN/FrozenLake-4x4-Coord-v0": {"success_rate": 0.8, "observation_format": "grid_coord"},
    # config/_3_frozen_lake.yaml's override of the tag
    "RAGEN/FrozenLake-4x4-Coord-NoSlip-v0": {"success_rate": 1.0, "observation_format": "grid_coord"},
}
BANDIT_CONFIGS = {"RAGEN/Bandit-R2-v0": {"split": "train"}, "RAGEN/BanditTest-R2-v0": {"split": "test"}}
SOKOBAN_CONFIGS = {
    "RAGEN/Sokoban-6x6-Coord-v0": {
        "dim_x": 6, "dim_y": 6, "num_boxes": 1, "max_steps": 100, "observation_format": "grid_coord"
    },
}
_TIMER = Path(__file__).with_name("ragen2_sokoban_timer.py")


def frozen_lake_env(env_id: str) -> Any:
    module = load(RAGEN2, "ragen.env.frozen_lake", FROZEN_LAKE_BLOB_IDS)
    return module.FrozenLakeEnv(module.FrozenLakeEnvConfig(**FROZEN_LAKE_CONFIGS[env_id]))


def bandit_env(env_id: str) -> Any:
    """RAGEN-2's BanditEnv as the first one a process creates (it adds the creation index to seeds)."""
    module = load(RAGEN2, "ragen.env.bandit", BANDIT_BLOB_IDS)
    module.BanditEnv.class_counter = 0
    return module.BanditEnv(module.BanditEnvConfig(**BANDIT_CONFIGS[env_id]))


def time_sokoban(env_id: str, job: dict[str, Any]) -> dict[str, Any]:
    """Run ``ragen2_sokoban_timer.py`` on ``job`` in RAGEN-2's Python; its JSON report."""
    try:
        root = RAGEN2.root(SOKOBAN_BLOB_IDS)
    except Unavailable as reason:
        pytest.skip(str(reason))
    python = os.environ.get("RAGEN2_PYTHON")
    if not python:
        pytest.skip(
            "RAGEN2_PYTHON is not set: RAGEN-2's Sokoban needs gym_sokoban, so it is timed in a Python "
            "that has RAGEN-2's dependencies (python -m venv ragen2-venv && ragen2-venv/bin/pip install "
            "gym gym_sokoban numpy matplotlib omegaconf && export RAGEN2_PYTHON=$PWD/ragen2-venv/bin/python)"
        )
    request = json.dumps({"checkout": str(root), "config": SOKOBAN_CONFIGS[env_id], **job})
    done = subprocess.run(
        [python, str(_TIMER)], input=request, capture_output=True, text=True, timeout=600,
        env=dict(os.environ, PYTHONHASHSEED="0"),
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(done.stdout.strip().splitlines()[-1])
