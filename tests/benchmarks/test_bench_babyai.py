"""Speed of the BabyAI ids beside minigrid's own env, in the same run.

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_babyai.py \
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Per level, two envs: ``RAGEN/BabyAI-<level>-v0`` (ours: minigrid behind the TextEnv contract,
its view described in words, BabyAIBot built at each reset) and minigrid's level class
itself (``minigrid.envs.babyai``, 3.2.0, symbolic observation).  Resets build fresh seeds'
levels (10,000 on: ours are checked against the train panel); each timed step is the first
step of seed 123's episode (the reset is not timed), and both envs' results are checked.
"""

from __future__ import annotations

import importlib
import importlib.util
import itertools

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from tests.benchmarks.checks import PANEL_SEED, check_fresh_resets, fresh_seeds, recorded, time_first_steps

LEVELS = ("GoToLocal", "PutNextLocal")
TURN_LEFT = 0  # minigrid's Actions.left: a step every level takes without ending the episode

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("minigrid") is None, reason="needs the babyai extra: pip install 'ragen-bench[babyai]'"
)


def _library(level: str):
    return getattr(importlib.import_module("minigrid.envs.babyai"), level)()


@pytest.mark.parametrize("level", LEVELS)
def test_reset_ours(benchmark, level):
    env_id = f"RAGEN/BabyAI-{level}-v0"
    env, seeds, results = gymnasium.make(env_id).unwrapped, fresh_seeds(), []
    benchmark.pedantic(recorded(lambda: env.reset(seed=next(seeds)), results), rounds=300, iterations=1)
    check_fresh_resets(env_id, results)


@pytest.mark.parametrize("level", LEVELS)
def test_reset_library(benchmark, level):
    env, seeds, results = _library(level), fresh_seeds(), []
    benchmark.pedantic(recorded(lambda: env.reset(seed=next(seeds)), results), rounds=300, iterations=1)
    assert all(observation["mission"] for observation, _ in results)


@pytest.mark.parametrize("level", LEVELS)
def test_step_ours(benchmark, level):
    env = gymnasium.make(f"RAGEN/BabyAI-{level}-v0").unwrapped
    results = time_first_steps(benchmark, env, itertools.repeat(TURN_LEFT))
    assert all(result == results[0] for result in results)
    assert results[0][0].startswith("Mission: ") and results[0][1:4] == (0.0, False, False)


@pytest.mark.parametrize("level", LEVELS)
def test_step_library(benchmark, level):
    env = _library(level)
    results = time_first_steps(benchmark, env, itertools.repeat(TURN_LEFT))
    ours = gymnasium.make(f"RAGEN/BabyAI-{level}-v0").unwrapped
    ours.reset(seed=PANEL_SEED)
    direction = int(results[0][0]["direction"])
    assert all(int(result[0]["direction"]) == direction and result[1:4] == (0, False, False) for result in results)
    assert ours.step(TURN_LEFT)[0].splitlines()[1].startswith(f"You face {('east', 'south', 'west', 'north')[direction]}")
