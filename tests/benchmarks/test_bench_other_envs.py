"""Speed of FrozenLake, Bandit, Countdown and MathQA: reset, step and the optimal agent,
with RAGEN's own FrozenLake timed in the same run, imported from a checkout of
RAGEN-AI/RAGEN at 5eb79b82 named by ``RAGEN_V1_CHECKOUT`` (``ragen_checkout.py``; without
it the ``test_ragen_peer_*`` benchmarks skip and say how to get one).

    RAGEN_V1_CHECKOUT=/path/to/ragen-v1 RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest \
        tests/benchmarks/test_bench_other_envs.py \
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Every benchmark checks what it timed (``checks.py``): resets against the frozen panels,
steps and optimal actions against their known results for seed 123, and RAGEN's
FrozenLake against ours (same lakes as our resets of every timed seed, same slips).
"""

from __future__ import annotations

import itertools

import gymnasium
import pytest

import ragen_bench
from ragen_bench.envs.countdown import arith
from ragen_bench.envs.frozen_lake import solver
from tests.benchmarks.checks import (
    FIRST_FRESH_SEED,
    PANEL_SEED,
    check_fresh_resets,
    fresh_seeds,
    recorded,
    short_sha,
    time_first_steps,
)
from tests.benchmarks.ragen_checkout import frozen_lake_env

# Sokoban and the RAGEN-2 families (2048, Sudoku, the cube) have benchmark files of their own.
IDS = [i for i in ragen_bench.registry.BUILTIN_IDS if not i.startswith(("RAGEN/Sokoban-", "RAGEN/2048-", "RAGEN/Sudoku-", "RAGEN/RubiksCube-"))]
# One representative action per free-text env (a well-formed answer exercises the whole parser).
TEXT_ACTIONS = {"RAGEN/Countdown-v0": "(64 - 51) + (27 - 31) * 2", "RAGEN/MathQA-v0": "42"}

# The first step of seed 123 per action: (reward, terminated, truncated, observation sha256[:16]).
# Bandit pays its jackpot on this seed; Countdown's answer uses other numbers (0.0) and
# MathQA's is wrong (0.0, attempts left).
FIRST_STEPS = {
    "RAGEN/FrozenLake-4x4-v0": [
        (0.0, False, False, "8c897bbc2110f7d7"),
        (0.0, True, False, "2028d8474ae295c9"),  # slips into a hole
        (0.0, False, False, "2f6a09f3d22535f2"),
        (0.0, False, False, "201da488ab142863"),
    ],
    "RAGEN/FrozenLake-8x8-v0": [
        (0.0, False, False, "f1f877da9b7d63f6"),
        (0.0, False, False, "9fa7a3ec529c682b"),
        (0.0, False, False, "2d75f95cba324588"),
        (0.0, False, False, "72beb0fafae1980c"),
    ],
    "RAGEN/FrozenLake-4x4-NoSlip-v0": [
        (0.0, True, False, "2028d8474ae295c9"),  # Left is the hole
        (0.0, False, False, "2f6a09f3d22535f2"),
        (0.0, False, False, "201da488ab142863"),
        (0.0, False, False, "8c897bbc2110f7d7"),
    ],
    "RAGEN/Bandit-v0": [(1.0, True, False, "672d98ca012c4b3f"), (0.1, True, False, "50556dbdaf6be477")],
    "RAGEN/BanditTest-v0": [(1.0, True, False, "c962b3584b0adc9b"), (0.1, True, False, "85c796cf58cfd187")],
    "RAGEN/Bandit-HeldOut-v0": [(1.0, True, False, "c962b3584b0adc9b"), (0.1, True, False, "85c796cf58cfd187")],
    "RAGEN/Bandit-Rev-v0": [(1.0, True, False, "24a9fef267559998"), (0.1, True, False, "c530feda6405f46a")],
    "RAGEN/FrozenLake-4x4-R2-v0": [
        (0.0, False, False, "4ddf463a2a74df60"),
        (0.0, True, False, "63bbb2c43f9b070a"),  # into a hole
        (0.0, False, False, "b225164f6c31a38b"),
        (0.0, False, False, "a2290a200e7d4059"),
    ],
    "RAGEN/FrozenLake-4x4-Coord-v0": [
        (0.0, False, False, "6e7e1fdb5045ede0"),
        (0.0, True, False, "a81b8150f9725c47"),
        (0.0, False, False, "5c2af7847d743077"),
        (0.0, False, False, "93a606244f2b8186"),
    ],
    "RAGEN/FrozenLake-4x4-Coord-NoSlip-v0": [
        (0.0, True, False, "a81b8150f9725c47"),  # Left is the hole
        (0.0, False, False, "5c2af7847d743077"),
        (0.0, False, False, "93a606244f2b8186"),
        (0.0, False, False, "6e7e1fdb5045ede0"),
    ],
    "RAGEN/Bandit-R2-v0": [(0.1, True, False, "76d7fb0fa8b10144"), (1.0, True, False, "225939574d97c6e9")],
    "RAGEN/BanditTest-R2-v0": [(0.1, True, False, "9b027d6e9ed80758"), (1.0, True, False, "a8392c01c9976ba7")],
    "RAGEN/Countdown-v0": [(0.0, True, False, "78a34d5bf898c9c7")],
    "RAGEN/MathQA-v0": [(0.0, False, False, "f20fc5de7b3b012a")],
}
# optimal_action() at the start of seed 123.
OPTIMAL_ACTIONS = {"RAGEN/FrozenLake-4x4-v0": 2, "RAGEN/FrozenLake-8x8-v0": 0, "RAGEN/Countdown-v0": "(68 - 59) * 6"}
# The FrozenLakeEnvConfig arguments of RAGEN's env for our ids (its other fields at their defaults).
RAGEN_PEERS = {
    "RAGEN/FrozenLake-4x4-v0": {"size": 4, "is_slippery": True},
    "RAGEN/FrozenLake-8x8-v0": {"size": 8, "is_slippery": True},
    "RAGEN/FrozenLake-4x4-NoSlip-v0": {"size": 4, "is_slippery": False},
}


def _actions(env_id: str, env: gymnasium.Env):
    if env_id in TEXT_ACTIONS:
        return itertools.repeat(TEXT_ACTIONS[env_id])
    return itertools.cycle(range(env.action_space.n))


@pytest.mark.parametrize("env_id", IDS)
def test_reset(benchmark, env_id):
    benchmark.group = "other envs: reset (generation + solver metadata)"
    env = gymnasium.make(env_id).unwrapped
    seeds, results = fresh_seeds(), []
    benchmark(recorded(lambda: env.reset(seed=next(seeds)), results))
    check_fresh_resets(env_id, results)


@pytest.mark.parametrize("env_id", list(RAGEN_PEERS))
def test_ragen_peer_reset(benchmark, env_id):
    benchmark.group = "other envs: reset (generation + solver metadata)"
    peer = frozen_lake_env(**RAGEN_PEERS[env_id])
    seeds, observations = fresh_seeds(), []
    benchmark(recorded(lambda: peer.reset(seed=next(seeds)), observations))
    # RAGEN's lakes are the ones our train panel pins, and our resets of every seed it timed.
    seeded = [(obs, {"level_seed": FIRST_FRESH_SEED + i}) for i, obs in enumerate(observations)]
    check_fresh_resets(env_id, seeded, lengths=False)
    ours = gymnasium.make(env_id).unwrapped
    for seed, observation in enumerate(observations, start=FIRST_FRESH_SEED):
        assert ours.reset(seed=seed)[0] == observation, f"{env_id} seed {seed}"


@pytest.mark.parametrize("env_id", IDS)
def test_step(benchmark, env_id):
    benchmark.group = "other envs: step (incl. text observation)"
    env = gymnasium.make(env_id).unwrapped
    results = time_first_steps(benchmark, env, _actions(env_id, env))
    expected = FIRST_STEPS[env_id]
    for index, (observation, reward, terminated, truncated, info) in enumerate(results):
        assert (reward, terminated, truncated, short_sha(observation)) == expected[index % len(expected)], index
        assert info["level_seed"] == PANEL_SEED


@pytest.mark.parametrize("env_id", list(RAGEN_PEERS))
def test_ragen_peer_step(benchmark, env_id):
    benchmark.group = "other envs: step (incl. text observation)"
    peer = frozen_lake_env(**RAGEN_PEERS[env_id])
    results = time_first_steps(benchmark, peer, itertools.cycle(range(1, 5)))  # RAGEN numbers actions from 1
    # RAGEN's first steps are ours, slips included.
    expected = FIRST_STEPS[env_id]
    for index, (observation, reward, done, _) in enumerate(results):
        ours = expected[index % len(expected)]
        assert (reward, done, short_sha(observation)) == (ours[0], ours[1], ours[3]), index


@pytest.mark.parametrize("env_id", list(OPTIMAL_ACTIONS))
def test_optimal_action(benchmark, env_id):
    benchmark.group = "other envs: optimal_action"
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=PANEL_SEED)
    env.optimal_action()  # FrozenLake solves its lake on the first call (timed below, test_value_iteration)
    action = benchmark(env.optimal_action)
    assert action == OPTIMAL_ACTIONS[env_id]
    if env_id == "RAGEN/Countdown-v0":
        evaluation = arith.evaluate(action)
        assert evaluation.value == env.target and sorted(evaluation.numbers) == sorted(env.numbers)
    else:
        assert action == env._solution.best_action(env.player_state, env.max_steps)


# The optimal success probability from the start of seed 123 within 100 steps.
SUCCESS_PROBABILITIES = {
    "RAGEN/FrozenLake-4x4-v0": 0.9877,
    "RAGEN/FrozenLake-8x8-v0": 0.9059,
    "RAGEN/FrozenLake-4x4-NoSlip-v0": 1.0,
}


@pytest.mark.parametrize("env_id", list(SUCCESS_PROBABILITIES))
def test_value_iteration(benchmark, env_id):
    # What the first optimal_action() (or optimal_success_prob) of a new lake costs: no longer part of reset.
    benchmark.group = "other envs: value iteration (first optimal_action of a lake)"
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=PANEL_SEED)
    solution = benchmark(solver._value_iteration, env.lake, env.is_slippery, env.max_steps)
    assert round(solution.success_probability(env.player_state), 4) == SUCCESS_PROBABILITIES[env_id]
    assert solution.success_probability(env.player_state) == env.optimal_success_prob
