"""Speed of FrozenLake, Bandit, Countdown and MathQA: reset, step and the optimal agent.

.venv/bin/python -m pytest tests/benchmarks/test_bench_other_envs.py --benchmark-enable
"""

from __future__ import annotations

import itertools

import gymnasium
import pytest

import ragen_bench

IDS = [i for i in ragen_bench.ENV_IDS if not i.startswith("RAGEN/Sokoban-")]
# One representative action per free-text env (a well-formed answer exercises the whole parser).
TEXT_ACTIONS = {"RAGEN/Countdown-v0": "(64 - 51) + (27 - 31) * 2", "RAGEN/MathQA-v0": "42"}


def _fresh_seeds():
    return itertools.count(10_000)  # every reset builds a new level: nothing cached


def _actions(env_id: str, env: gymnasium.Env):
    if env_id in TEXT_ACTIONS:
        return itertools.repeat(TEXT_ACTIONS[env_id])
    return itertools.cycle(range(env.action_space.n))


@pytest.mark.parametrize("env_id", IDS)
def test_reset(benchmark, env_id):
    benchmark.group = "other envs: reset (generation + solver metadata)"
    env = gymnasium.make(env_id).unwrapped
    seeds = _fresh_seeds()
    benchmark(lambda: env.reset(seed=next(seeds)))


@pytest.mark.parametrize("env_id", IDS)
def test_step(benchmark, env_id):
    benchmark.group = "other envs: step (incl. text observation)"
    env = gymnasium.make(env_id).unwrapped
    actions = _actions(env_id, env)
    # A finished episode cannot be stepped, and these episodes end after one step or a
    # few: every measured step is the first of a fresh episode (the reset is not timed).
    def fresh_episode() -> None:  # pedantic() would pass a returned value on as arguments
        env.reset(seed=123)

    benchmark.pedantic(
        lambda: env.step(next(actions)), setup=fresh_episode, rounds=2000, iterations=1, warmup_rounds=10
    )


@pytest.mark.parametrize("env_id", ["RAGEN/FrozenLake-4x4-v0", "RAGEN/FrozenLake-8x8-v0", "RAGEN/Countdown-v0"])
def test_optimal_action(benchmark, env_id):
    benchmark.group = "other envs: optimal_action"
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=123)
    benchmark(env.optimal_action)
