"""The RAGEN-2 Sokoban, FrozenLake and Bandit ids beside RAGEN-2's own envs, in one run.

    RAGEN2_CHECKOUT=/path/to/ragen2 RAGEN2_PYTHON=/path/to/ragen2-venv/bin/python \\
        RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest \\
        tests/benchmarks/test_bench_ragen2_v1_families.py --benchmark-enable

Both sides do the same work: a reset builds a fresh seed's level and its text observation
(ours without the solver, which RAGEN-2 does not run); a step moves and renders the text.
RAGEN-2's FrozenLake and Bandit are imported from the checkout and timed here by
pytest-benchmark.  RAGEN-2's Sokoban needs ``gym_sokoban``, which the project does not
depend on, so it is timed in a subprocess of ``RAGEN2_PYTHON`` (the same ``perf_counter``
around each call) and its median goes into the benchmark's ``extra_info`` beside ours, with
the speedup.  Every benchmark checks that what it timed is RAGEN-2's episode.
"""

from __future__ import annotations

import itertools
import statistics

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from tests.benchmarks import ragen2_v1_families as ragen2
from tests.benchmarks.checks import (
    FIRST_FRESH_SEED,
    PANEL_SEED,
    check_fresh_resets,
    fresh_seeds,
    recorded,
    short_sha,
    time_first_steps,
)
from tests.benchmarks.test_bench_other_envs import FIRST_STEPS

SOKOBAN_ID = "RAGEN/Sokoban-6x6-Coord-v0"
SOKOBAN_ROUNDS = 300
SOKOBAN_WALK = [0, 3, 1, 2, 2, 1, 0, 3, 3]  # Up, Right, Down, Left, ...: test_bench_sokoban's walk
LAKE_IDS = list(ragen2.FROZEN_LAKE_CONFIGS)
BANDIT_IDS = list(ragen2.BANDIT_CONFIGS)


def ours(env_id: str):
    return gymnasium.make(env_id, **({"solve_on_reset": False} if env_id == SOKOBAN_ID else {})).unwrapped


# -- FrozenLake and Bandit: both timed here -------------------------------------------------


@pytest.mark.parametrize("env_id", LAKE_IDS + BANDIT_IDS)
def test_reset_ours(benchmark, env_id):
    benchmark.group = f"RAGEN-2 peers: reset {env_id}"
    env = ours(env_id)
    seeds, results = fresh_seeds(), []
    benchmark(recorded(lambda: env.reset(seed=next(seeds)), results))
    check_fresh_resets(env_id, results)


@pytest.mark.parametrize("env_id", LAKE_IDS)
def test_reset_ragen2_frozen_lake(benchmark, env_id):
    benchmark.group = f"RAGEN-2 peers: reset {env_id}"
    peer = ragen2.frozen_lake_env(env_id)
    seeds, observations = fresh_seeds(), []
    benchmark(recorded(lambda: peer.reset(seed=next(seeds)), observations))
    env = ours(env_id)
    for seed, observation in enumerate(observations, start=FIRST_FRESH_SEED):
        assert env.reset(seed=seed)[0] == observation, f"{env_id} seed {seed}"


@pytest.mark.parametrize("env_id", BANDIT_IDS)
def test_reset_ragen2_bandit(benchmark, env_id):
    benchmark.group = f"RAGEN-2 peers: reset {env_id}"
    peer = ragen2.bandit_env(env_id)
    seeds, arms = fresh_seeds(), []
    benchmark(recorded(lambda: (peer.reset(seed=next(seeds)), dict(peer.ACTION_LOOKUP))[1], arms))
    env = ours(env_id)
    for seed, lookup in enumerate(arms, start=FIRST_FRESH_SEED):  # RAGEN-2's arms are 1 and 2
        assert env.reset(seed=seed)[1]["arm_order"] == (lookup[1], lookup[2]), f"{env_id} seed {seed}"


@pytest.mark.parametrize("env_id", LAKE_IDS + BANDIT_IDS)
def test_step_ours(benchmark, env_id):
    benchmark.group = f"RAGEN-2 peers: step {env_id}"
    env = ours(env_id)
    results = time_first_steps(benchmark, env, itertools.cycle(range(env.action_space.n)))
    expected = FIRST_STEPS[env_id]
    for index, (observation, reward, terminated, truncated, _) in enumerate(results):
        assert (reward, terminated, truncated, short_sha(observation)) == expected[index % len(expected)], index


@pytest.mark.parametrize("env_id", LAKE_IDS)
def test_step_ragen2_frozen_lake(benchmark, env_id):
    benchmark.group = f"RAGEN-2 peers: step {env_id}"
    peer = ragen2.frozen_lake_env(env_id)
    results = time_first_steps(benchmark, peer, itertools.cycle(range(1, 5)))  # RAGEN-2 numbers actions from 1
    expected = FIRST_STEPS[env_id]
    for index, (observation, reward, done, _) in enumerate(results):
        ours_step = expected[index % len(expected)]
        assert (reward, done, short_sha(observation)) == (ours_step[0], ours_step[1], ours_step[3]), index


def _time_fresh_lake_steps(benchmark, env, action) -> list[tuple[int, tuple]]:
    """Time the first step of a new lake's episode (seeds 20000..., reset untimed): nothing cached."""
    seeds, results = itertools.count(20_000), []
    current = [0]

    def fresh_lake() -> None:
        current[0] = next(seeds)
        env.reset(seed=current[0])

    def step() -> None:
        results.append((current[0], env.step(action)[:3]))

    benchmark.pedantic(step, setup=fresh_lake, rounds=2000, iterations=1)
    return results


@pytest.mark.parametrize("env_id", LAKE_IDS)
def test_first_step_of_a_new_lake_ours(benchmark, env_id):
    benchmark.group = f"RAGEN-2 peers: first step of a new lake {env_id}"
    results = _time_fresh_lake_steps(benchmark, ours(env_id), 0)
    peer = ragen2.frozen_lake_env(env_id)
    for seed, (observation, reward, terminated) in results[:200]:  # RAGEN-2's first step of the seed
        peer.reset(seed=seed)
        assert peer.step(1)[:3] == (observation, reward, terminated), seed


@pytest.mark.parametrize("env_id", LAKE_IDS)
def test_first_step_of_a_new_lake_ragen2(benchmark, env_id):
    benchmark.group = f"RAGEN-2 peers: first step of a new lake {env_id}"
    results = _time_fresh_lake_steps(benchmark, ragen2.frozen_lake_env(env_id), 1)  # 1 = RAGEN-2's Left
    env = ours(env_id)
    for seed, (observation, reward, done) in results[:200]:
        env.reset(seed=seed)
        assert env.step(0)[:3] == (observation, reward, done), seed


@pytest.mark.parametrize("env_id", BANDIT_IDS)
def test_step_ragen2_bandit(benchmark, env_id):
    benchmark.group = f"RAGEN-2 peers: step {env_id}"
    peer = ragen2.bandit_env(env_id)
    results = time_first_steps(benchmark, peer, itertools.cycle(range(1, 3)))
    expected = FIRST_STEPS[env_id]  # the wording differs; rewards and ends are RAGEN-2's
    for index, (_, reward, done, _) in enumerate(results):
        assert (reward, done) == expected[index % len(expected)][:2], index


# -- Sokoban: RAGEN-2's timed in its own Python, in the same run ------------------------------


def _record_speedup(benchmark, peer_timings: list[float]) -> None:
    peer_median = statistics.median(peer_timings)
    benchmark.extra_info["ragen2_median_s"] = peer_median
    benchmark.extra_info["ragen2_rounds"] = len(peer_timings)
    if benchmark.stats:  # None with --benchmark-disable
        benchmark.extra_info["speedup_vs_ragen2"] = peer_median / benchmark.stats.stats.median


def test_reset_sokoban_beside_ragen2(benchmark):
    benchmark.group = f"RAGEN-2 peers: reset {SOKOBAN_ID}"
    peer = ragen2.time_sokoban(
        SOKOBAN_ID, {"what": "reset", "first_seed": FIRST_FRESH_SEED, "rounds": SOKOBAN_ROUNDS, "warmup": 0}
    )
    env = ours(SOKOBAN_ID)
    seeds, results = fresh_seeds(), []
    benchmark.pedantic(recorded(lambda: env.reset(seed=next(seeds)), results), rounds=SOKOBAN_ROUNDS, iterations=1)
    check_fresh_resets(SOKOBAN_ID, results, lengths=False)
    # RAGEN-2 built the same levels (those of its failed generations re-seed with hash(), never on 6x6).
    timed = [observation for observation, _ in results]  # one call with --benchmark-disable
    assert timed == peer["observations"][: len(timed)]
    _record_speedup(benchmark, peer["timings"])


def test_step_sokoban_beside_ragen2(benchmark):
    benchmark.group = f"RAGEN-2 peers: step {SOKOBAN_ID}"
    rounds = 2000
    actions = [action + 1 for action in SOKOBAN_WALK]  # RAGEN-2 numbers actions from 1
    peer = ragen2.time_sokoban(
        SOKOBAN_ID, {"what": "step", "seed": PANEL_SEED, "actions": actions, "rounds": rounds, "warmup": 0}
    )
    env = gymnasium.make(SOKOBAN_ID, solve_on_reset=False, max_steps=2**62).unwrapped  # no cap, as RAGEN-2's
    env.reset(seed=PANEL_SEED)
    walk, results = itertools.cycle(SOKOBAN_WALK), []

    def step():
        result = env.step(next(walk))
        if result[2]:
            env.reset(seed=PANEL_SEED)
        return result

    benchmark.pedantic(recorded(step, results), rounds=rounds, iterations=1)
    # The walk (restarted when solved) gave RAGEN-2's observations, rewards and ends, step for step.
    timed = [(obs, reward, done) for obs, reward, done, _, _ in results]
    assert timed == list(zip(peer["observations"], peer["rewards"], peer["dones"]))[: len(timed)]
    _record_speedup(benchmark, peer["timings"])
