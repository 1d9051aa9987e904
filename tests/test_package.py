"""Package-level promises: a light, fast core import and a complete id table."""

from __future__ import annotations

import json

import gymnasium

import ragen_bench
from ragen_bench import panels
from tests.conftest import run_python

HEAVY = ("torch", "transformers", "ray", "verl", "vllm", "httpx", "pandas", "matplotlib")


def test_core_import_is_fast_and_pulls_no_heavy_dependency():
    out = run_python(
        "import sys, time\n"
        "start = time.perf_counter()\n"
        "import ragen_bench\n"
        "elapsed = time.perf_counter() - start\n"
        "import gymnasium, ragen_bench.chat, ragen_bench.eval, ragen_bench.agents, ragen_bench.suites\n"
        "for env_id in ragen_bench.ENV_IDS:\n"
        "    gymnasium.make(env_id).reset(seed=0)\n"
        f"print(__import__('json').dumps([elapsed, [m for m in {HEAVY!r} if m in sys.modules]]))"
    )
    elapsed, heavy = json.loads(out)
    assert heavy == []
    assert elapsed < 0.5  # the design's budget for `import ragen_bench`


def test_every_registered_id_makes_resets_and_has_frozen_panels():
    for env_id in ragen_bench.ENV_IDS:
        env = gymnasium.make(env_id)
        observation, info = env.reset(seed=123)
        assert isinstance(observation, str) and "success" in info
        assert panels.available(env_id) == ["train", "val", "test"], env_id
        assert panels.load(env_id, "test").seeds == tuple(range(123, 379)), env_id
