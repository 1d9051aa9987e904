"""Speed of the 2x2 Rubik's cube: reset and step beside RAGEN-2's own env in the same run, and the solver.

RAGEN-2's env is imported from a checkout of mll-lab-nu/RAGEN at 20daedc named by
``RAGEN2_CHECKOUT`` (``ragen2_rubikscube.py``; without it the ``ragen2-*`` benchmarks skip
and say how to get one):

    RAGEN2_CHECKOUT=/path/to/ragen2 RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest \
        tests/benchmarks/test_bench_rubikscube.py \
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Both sides do the same work: a reset scrambles a fresh seed (10,000, 10,001, ...) and
renders the net; a step turns a face of seed 123's cube, checks it and renders the net.
Every benchmark checks what it timed: our resets against the frozen train panel (net and
optimal length), RAGEN-2's resets and steps against ours, the solver's plans against the
panel's optimal lengths.
"""

from __future__ import annotations

import itertools

import gymnasium
import pytest
from gymnasium.utils import seeding

import ragen_bench
from ragen_bench import panels
from ragen_bench.envs.rubikscube import cube, solver
from tests.benchmarks.checks import (
    FIRST_FRESH_SEED,
    PANEL_SEED,
    check_fresh_resets,
    fresh_seeds,
    recorded,
    time_first_steps,
)
from tests.benchmarks.ragen2_rubikscube import rubikscube_env

IDS = [i for i in ragen_bench.ENV_IDS if i.startswith("RAGEN/RubiksCube-")]
# Ours and RAGEN-2's env of each id one right after the other, so that both see the same
# load on a shared machine (pytest runs parameters in this order).
SIDES = [
    pytest.param(env_id, side, id=f"{side}-{env_id.split('/')[1]}") for env_id in IDS for side in ("ours", "ragen2")
]
GROUP_RESET = "rubikscube: reset (fresh seed: scramble + net; ours adds optimal_length)"
GROUP_STEP = "rubikscube: step (turn + solved check + net)"


def _ours(env_id: str):
    return gymnasium.make(env_id).unwrapped


@pytest.mark.parametrize("env_id, side", SIDES)
def test_reset(benchmark, env_id, side):
    benchmark.group = GROUP_RESET
    env = _ours(env_id) if side == "ours" else rubikscube_env(env_id)
    env.reset(seed=0)  # our distance table is built on first use: not part of a reset
    seeds, results = fresh_seeds(), []
    benchmark(recorded(lambda: env.reset(seed=next(seeds)), results))
    if side == "ours":
        check_fresh_resets(env_id, results)
        return
    ours = _ours(env_id)  # RAGEN-2's nets are ours, seed for seed
    for seed, observation in enumerate(results, start=FIRST_FRESH_SEED):
        assert ours.reset(seed=seed)[0] == observation, f"{env_id} seed {seed}"


def test_reset_floor(benchmark):
    # What both resets pay before any cube work: Gymnasium seeding np_random from a fresh seed
    # (RAGEN-2's reset pays it twice more over: np.random.default_rng(seed) and its all_seed).
    benchmark.group = GROUP_RESET
    seeds, generators = fresh_seeds(), []
    benchmark(recorded(lambda: seeding.np_random(next(seeds))[0], generators))
    assert generators[0].bit_generator.state == seeding.np_random(FIRST_FRESH_SEED)[0].bit_generator.state


def _first_steps(env_id: str) -> list[tuple[str, float, bool]]:
    """Our first step of seed 123 for each action: (observation, reward, ended)."""
    env, steps = _ours(env_id), []
    for action in range(len(cube.ACTION_NAMES)):
        env.reset(seed=PANEL_SEED)
        observation, reward, terminated, truncated, _ = env.step(action)
        steps.append((observation, reward, terminated or truncated))
    return steps


@pytest.mark.parametrize("env_id, side", SIDES)
def test_step(benchmark, env_id, side):
    benchmark.group = GROUP_STEP
    expected = _first_steps(env_id)
    if side == "ours":
        results = time_first_steps(benchmark, _ours(env_id), itertools.cycle(range(len(cube.ACTION_NAMES))))
        for index, (observation, reward, terminated, truncated, info) in enumerate(results):
            assert (observation, reward, terminated or truncated) == expected[index % len(expected)], index
            assert info["level_seed"] == PANEL_SEED and info["success"] == terminated
        return
    # RAGEN-2 numbers the turns from 1; its steps are ours.
    results = time_first_steps(benchmark, rubikscube_env(env_id), itertools.cycle(range(1, 13)))
    for index, (observation, reward, done, _) in enumerate(results):
        assert (observation, reward, done) == expected[index % len(expected)], index


def test_distance_table_build(benchmark):
    # What the first reset of a process pays once (the table is cached after it).
    benchmark.group = "rubikscube: solver"
    table = benchmark.pedantic(solver.distance_table.__wrapped__, rounds=3, iterations=1)
    assert len(table) == 16_149 and max(table.values()) == solver.TABLE_DEPTH


@pytest.mark.parametrize("depth", [5, solver.MAX_DISTANCE])
def test_plan(benchmark, depth):
    # A plan from scratch (no plan cache) for seed 123 at this depth: a table descent at depth
    # 5, the forward search beyond it at depth 10.
    benchmark.group = "rubikscube: solver"
    env = ragen_bench.envs.rubikscube.RubiksCubeEnv(scramble_depth=depth)
    _, info = env.reset(seed=PANEL_SEED)
    plan = benchmark(solver._plan.__wrapped__, cube.canonical(env.stickers))
    assert len(plan) == info["optimal_length"]
    if depth == 5:  # seed 123 opens the Depth5 test panel, which pins its optimal length
        assert len(plan) == panels.load("RAGEN/RubiksCube-2x2-Depth5-v0", "test").optimal_length[0]
    final = env.stickers
    for action in plan:
        final = cube.turn(final, action)
    assert final in cube.SOLVED_SET
