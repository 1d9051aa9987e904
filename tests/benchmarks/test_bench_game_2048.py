"""Speed of 2048: reset, step and the search, with RAGEN-2's own env timed in the same run,
imported from a checkout of mll-lab-nu/RAGEN at 20daedc named by ``RAGEN2_CHECKOUT``
(``ragen2_game_2048.py``; without it the ``test_ragen2_*`` benchmarks skip and say how).

    RAGEN2_CHECKOUT=/path/to/ragen2 RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest \\
        tests/benchmarks/test_bench_game_2048.py \\
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Every benchmark checks what it timed (``checks.py``): resets against the frozen train
panel (RAGEN-2's too, and ours against RAGEN-2's), and the timed stretches of play against
each other and against the step results recorded below for seed 123.
"""

from __future__ import annotations

import hashlib
import itertools

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from tests.benchmarks.checks import FIRST_FRESH_SEED, PANEL_SEED, check_fresh_resets, fresh_seeds, recorded
from tests.benchmarks.ragen2_game_2048 import CONFIGS, game_2048_env

IDS = list(CONFIGS)
# A stretch of play timed as one call: seed 123, then Up, Up, Left, Left, Down, Right, ...
# (50 steps, 5 of which move nothing), the same in both envs.
STRETCH = tuple(itertools.islice(itertools.cycle((0, 0, 3, 3, 2, 1)), 50))
# What the stretch ends in: (score, SHA-256[:16] of the last observation).
STRETCH_END = (316, "a42411af74d07f0f")
# The stretch's total reward per id (log-shaped; raw: the merge score less 0.1 per invalid move).
STRETCH_REWARD = {"RAGEN/2048-v0": 9.926023299, "RAGEN/2048-RawReward-v0": 315.5}
# The search's move at the end of the stretch (valid there: Right, Down, Left).
SEARCH_ACTION = 2


def _play_stretch(env):
    """Reset seed 123 and play ``STRETCH``: the total reward, the last info and observation."""

    def stretch():
        env.reset(seed=PANEL_SEED)
        total = 0.0
        for action in STRETCH:
            obs, reward, *_, info = env.step(action)
            total += reward
        return total, info, obs

    return stretch


def _check_stretch(env_id: str, results: list) -> None:
    assert results
    for total, info, obs in results:
        assert (info["score"], hashlib.sha256(obs.encode()).hexdigest()[:16]) == STRETCH_END
        assert round(total, 9) == STRETCH_REWARD[env_id]


@pytest.mark.parametrize("env_id", IDS)
def test_reset(benchmark, env_id):
    benchmark.group = "2048: reset"
    env = gymnasium.make(env_id).unwrapped
    seeds, results = fresh_seeds(), []
    benchmark(recorded(lambda: env.reset(seed=next(seeds)), results))
    check_fresh_resets(env_id, results)


@pytest.mark.parametrize("env_id", IDS)
def test_ragen2_reset(benchmark, env_id):
    benchmark.group = "2048: reset"
    peer = game_2048_env(env_id)
    seeds, results = fresh_seeds(), []
    benchmark(recorded(lambda: peer.reset(seed=next(seeds)), results))
    # RAGEN-2's grids are the ones our train panel pins, and our resets of every seed it timed.
    check_fresh_resets(env_id, [(obs, {"level_seed": FIRST_FRESH_SEED + i}) for i, (obs, _) in enumerate(results)])
    ours = gymnasium.make(env_id).unwrapped
    for seed, (observation, _) in enumerate(results, start=FIRST_FRESH_SEED):
        assert ours.reset(seed=seed)[0] == observation, f"{env_id} seed {seed}"


@pytest.mark.parametrize("env_id", IDS)
def test_step(benchmark, env_id):
    # One call = a reset and 50 steps; the step's share is the call's time less a reset, / 50.
    benchmark.group = "2048: reset + 50 steps"
    env = gymnasium.make(env_id).unwrapped
    results = []
    benchmark.pedantic(recorded(_play_stretch(env), results), rounds=200, iterations=1, warmup_rounds=2)
    _check_stretch(env_id, results)


@pytest.mark.parametrize("env_id", IDS)
def test_ragen2_step(benchmark, env_id):
    benchmark.group = "2048: reset + 50 steps"
    peer = game_2048_env(env_id)
    results = []
    benchmark.pedantic(recorded(_play_stretch(peer), results), rounds=200, iterations=1, warmup_rounds=2)
    _check_stretch(env_id, results)  # RAGEN-2's stretch is ours, spawn for spawn


def test_search(benchmark):
    # The reference agent's move from seed 123's first 50-step position (depth 2 or 3).
    benchmark.group = "2048: optimal_action (expectimax)"
    env = gymnasium.make("RAGEN/2048-v0").unwrapped
    _play_stretch(env)()
    env.optimal_action()  # builds the row tables once (timed apart: test_search_tables)
    action = benchmark(env.optimal_action)
    assert action in env.valid_actions and action == SEARCH_ACTION


def test_search_tables(benchmark):
    # The one-off cost of the 65,536-row slide and heuristic tables (first optimal_action()).
    from ragen_bench.envs.game_2048 import search

    benchmark.group = "2048: optimal_action (expectimax)"
    left, right, heuristic = benchmark.pedantic(search._tables.__wrapped__, rounds=3, iterations=1)
    assert (left == search._tables()[0]).all() and (heuristic == search._tables()[2]).all()

