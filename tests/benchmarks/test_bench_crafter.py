"""Speed of RAGEN/Crafter-v0 beside crafter's own env, in the same run.

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_crafter.py \
        --benchmark-enable --benchmark-only --benchmark-columns=min,median,rounds

Two envs (and our world without its text view): ``RAGEN/Crafter-v0`` (ours: crafter behind the TextEnv contract, the map around the
player described in words, no picture drawn unless asked) and ``crafter.Env`` itself (1.8.3, its
defaults: a 64x64 picture as the observation, the semantic map in the info).  Resets build fresh
seeds' worlds (10,000 on: ours are checked against the train panel).  Steps walk one episode of
seed 123 with a fixed cycle of moves and ``Do``; the untimed setup resets an episode that ended.
"""

from __future__ import annotations

import importlib.util
import itertools

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from tests.benchmarks.checks import PANEL_SEED, check_fresh_resets, fresh_seeds, recorded

ID = "RAGEN/Crafter-v0"
WALK = (3, 5, 1, 5, 4, 5, 2, 5, 0)  # north, do, west, do, south, do, east, do, noop
RESETS, STEPS = 30, 3000

pytestmark = pytest.mark.skipif(
    importlib.util.find_spec("crafter") is None, reason="needs the crafter extra: pip install 'ragen-bench[crafter]'"
)


def _library(seed: int):
    import crafter

    return crafter.Env(seed=seed)


def test_reset_ours(benchmark):
    env, seeds, results = gymnasium.make(ID).unwrapped, fresh_seeds(), []
    benchmark.pedantic(recorded(lambda: env.reset(seed=next(seeds)), results), rounds=RESETS, iterations=1, warmup_rounds=1)
    check_fresh_resets(ID, results)


def test_reset_library(benchmark):
    env, seeds, results = _library(0), fresh_seeds(), []

    def reset() -> object:
        env._seed, env._episode = next(seeds), 0  # crafter's own Env(seed=s) first world, without reloading textures
        return env.reset()

    benchmark.pedantic(recorded(reset, results), rounds=RESETS, iterations=1, warmup_rounds=1)
    assert all(picture.shape == (64, 64, 3) for picture in results)


def test_step_ours(benchmark):
    env, actions, results = gymnasium.make(ID).unwrapped, itertools.cycle(WALK), []

    def live() -> None:
        if env.level_seed is None or env.episode_finished:
            env.reset(seed=PANEL_SEED)

    benchmark.pedantic(recorded(lambda: env.step(next(actions)), results), setup=live, rounds=STEPS, iterations=1)
    assert all(text.startswith("You face ") for text, *_ in results) and len({text for text, *_ in results}) > 1


def test_step_simulation_only(benchmark):
    """Our crafter world stepped without the text view: what the words cost is ours minus this."""
    env, actions, results = gymnasium.make(ID).unwrapped, itertools.cycle(WALK), []
    env.reset(seed=PANEL_SEED)
    world, done = env.world, [False]

    def live() -> None:
        if done[0]:
            world.reset_to(PANEL_SEED)

    def step() -> object:
        result = world.step(next(actions))
        done[0] = result[2]
        return result

    benchmark.pedantic(recorded(step, results), setup=live, rounds=STEPS, iterations=1)
    assert all(observation is None and info["semantic"].shape == (64, 64) for observation, _, _, info in results)


def test_step_library(benchmark):
    env, actions, results, done = _library(PANEL_SEED), itertools.cycle(WALK), [], [True]

    def live() -> None:
        if done[0]:
            env.reset()

    def step() -> object:
        result = env.step(next(actions))
        done[0] = result[2]
        return result

    benchmark.pedantic(recorded(step, results), setup=live, rounds=STEPS, iterations=1)
    assert all(observation.shape == (64, 64, 3) for observation, *_ in results)
