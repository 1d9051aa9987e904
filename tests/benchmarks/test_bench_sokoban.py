"""Sokoban speed: reset (fresh RAGEN-exact generation), step, render, solve per id,
and TextArena's Sokoban-v0 measured in the same run as a reference point.

    make bench     # or: .venv/bin/python -m pytest tests/benchmarks/test_bench_sokoban.py --benchmark-enable
"""

from __future__ import annotations

import itertools

import gymnasium
import pytest

import ragen_bench

SOKOBAN_IDS = [i for i in ragen_bench.ENV_IDS if i.startswith("RAGEN/Sokoban-")]
# 10x10 generation takes milliseconds; fewer rounds keep the run short.
ROUNDS = {"RAGEN/Sokoban-10x10-v0": 60}


def _fresh_seeds():
    return itertools.count(10_000)  # every call generates a new level: nothing cached


def _bench(benchmark, env_id, function):
    rounds = ROUNDS.get(env_id)
    if rounds:
        return benchmark.pedantic(function, rounds=rounds, iterations=1, warmup_rounds=2)
    return benchmark(function)


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_reset_generation(benchmark, env_id):
    benchmark.group = "sokoban reset (generation only)"
    env = gymnasium.make(env_id, solve_on_reset=False).unwrapped
    seeds = _fresh_seeds()
    _bench(benchmark, env_id, lambda: env.reset(seed=next(seeds)))


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_reset_with_optimal_length(benchmark, env_id):
    benchmark.group = "sokoban reset (generation + solver)"
    env = gymnasium.make(env_id).unwrapped
    seeds = _fresh_seeds()
    _bench(benchmark, env_id, lambda: env.reset(seed=next(seeds)))


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_step(benchmark, env_id):
    benchmark.group = "sokoban step (incl. text observation)"
    # No step cap, so the walk never truncates; a finished episode cannot be stepped, so
    # solving the level (rare for this walk) restarts it from the cached level.
    env = gymnasium.make(env_id, solve_on_reset=False, max_steps=2**62).unwrapped
    env.reset(seed=123)
    actions = itertools.cycle([0, 3, 1, 2, 2, 1, 0, 3, 3])

    def step():
        if env.step(next(actions))[2]:
            env.reset(seed=123)

    benchmark(step)


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_render(benchmark, env_id):
    benchmark.group = "sokoban render"
    env = gymnasium.make(env_id, solve_on_reset=False).unwrapped
    env.reset(seed=123)
    benchmark(env.render)


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_solve(benchmark, env_id):
    benchmark.group = "sokoban solve (BFS, panel seed 123)"
    env = gymnasium.make(env_id, solve_on_reset=False).unwrapped
    env.reset(seed=123)
    _bench(benchmark, env_id, env.solve)


@pytest.fixture(scope="module")
def textarena_sokoban():
    textarena = pytest.importorskip("textarena", reason="peer benchmark needs the 'peers' extra")
    return textarena.make("Sokoban-v0")


def test_textarena_reset(benchmark, textarena_sokoban):
    benchmark.group = "sokoban reset (generation only)"
    seeds = _fresh_seeds()
    benchmark.pedantic(lambda: textarena_sokoban.reset(num_players=1, seed=next(seeds)), rounds=30, warmup_rounds=2)


def test_textarena_step(benchmark, textarena_sokoban):
    benchmark.group = "sokoban step (incl. text observation)"
    textarena_sokoban.reset(num_players=1, seed=123)
    moves = itertools.cycle(["[up]", "[right]", "[down]", "[left]"])

    def step():
        textarena_sokoban.step(next(moves))
        return textarena_sokoban.get_observation()

    benchmark.pedantic(step, rounds=50, warmup_rounds=2)


@pytest.mark.parametrize("env_id", SOKOBAN_IDS)
def test_reset_repeated_seed(benchmark, env_id):
    # pass@k samples and GRPO groups reset the same seed again: served from the level cache.
    benchmark.group = "sokoban reset (repeated seed, cached level)"
    env = gymnasium.make(env_id).unwrapped
    benchmark(lambda: env.reset(seed=123))
