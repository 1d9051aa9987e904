"""Speed of Sudoku: reset, step and the optimal action, with RAGEN-2's own env timed in the same
run, imported from a checkout of mll-lab-nu/RAGEN at 20daedc named by ``RAGEN2_CHECKOUT``
(``ragen2_sudoku.py``; without it the ``test_ragen2_*`` benchmarks skip and say how).

    RAGEN2_CHECKOUT=/path/to/ragen2 RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest \\
        tests/benchmarks/test_bench_sudoku.py \\
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Both envs do the same work: a reset generates the seed's puzzle and renders it (RAGEN-2's
``with_feedback`` text); a step parses an action text, applies it and renders.  Every
benchmark checks what it timed (``checks.py``): resets against the frozen train panel
(RAGEN-2's too), steps against the step recorded below for seed 123, RAGEN-2's against ours.
"""

from __future__ import annotations

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from tests.benchmarks.checks import FIRST_FRESH_SEED, PANEL_SEED, check_fresh_resets, fresh_seeds, recorded, short_sha
from tests.benchmarks.ragen2_sudoku import CONFIGS, sudoku_env

IDS = list(CONFIGS)
# Per id, the timed step of seed 123: its first empty cell gets the solution's digit, written
# "row,col,digit" (the last form the parser tries, so every form is searched for).
# (action, reward, SHA-256[:16] of the observation).
FIRST_STEPS = {
    "RAGEN/Sudoku-9x9-Easy-v0": ("1,4,4", 1.0, "2bf0783064233623"),
    "RAGEN/Sudoku-9x9-Medium-v0": ("1,2,7", 1.0, "897a98bf71e4523d"),
    "RAGEN/Sudoku-4x4-v0": ("2,1,4", 1.0, "5aae15207128c80e"),
}
# optimal_action() at the start of seed 123: the same cell and digit.
OPTIMAL_ACTIONS = {
    "RAGEN/Sudoku-9x9-Easy-v0": "place 4 at row 1 col 4",
    "RAGEN/Sudoku-9x9-Medium-v0": "place 7 at row 1 col 2",
    "RAGEN/Sudoku-4x4-v0": "place 4 at row 2 col 1",
}
PEER_ROUNDS = 300  # RAGEN-2's reset takes ~10 ms on 2 cores


@pytest.mark.parametrize("env_id", IDS)
def test_reset(benchmark, env_id):
    benchmark.group = "sudoku: reset (generate + render)"
    env = gymnasium.make(env_id).unwrapped
    seeds, results = fresh_seeds(), []
    benchmark(recorded(lambda: env.reset(seed=next(seeds)), results))
    check_fresh_resets(env_id, results)


@pytest.mark.parametrize("env_id", IDS)
def test_ragen2_reset(benchmark, env_id):
    benchmark.group = "sudoku: reset (generate + render)"
    peer = sudoku_env(env_id)
    seeds, observations = fresh_seeds(), []
    benchmark.pedantic(recorded(lambda: peer.reset(seed=next(seeds)), observations), rounds=PEER_ROUNDS, iterations=1)
    # RAGEN-2's puzzles are the ones our train panel pins, and our resets of every seed it timed.
    ours = gymnasium.make(env_id).unwrapped
    check_fresh_resets(env_id, [ours.reset(seed=FIRST_FRESH_SEED + i) for i in range(len(observations))])
    for seed, observation in enumerate(observations, start=FIRST_FRESH_SEED):
        assert ours.reset(seed=seed)[0] == observation, f"{env_id} seed {seed}"


def _time_first_steps(benchmark, env, action: str, rounds: int) -> list:
    """Time ``env.step(action)`` as the first step of a fresh seed-123 episode (the reset is not timed)."""
    results = []

    def fresh_episode() -> None:  # pedantic() would pass a returned value on as arguments
        env.reset(seed=PANEL_SEED)

    benchmark.pedantic(
        recorded(lambda: env.step(action), results), setup=fresh_episode, rounds=rounds, iterations=1, warmup_rounds=5
    )
    assert results
    return results


@pytest.mark.parametrize("env_id", IDS)
def test_step(benchmark, env_id):
    benchmark.group = "sudoku: step (parse + place + render)"
    env = gymnasium.make(env_id).unwrapped
    action, reward, digest = FIRST_STEPS[env_id]
    for observation, got, terminated, truncated, info in _time_first_steps(benchmark, env, action, 2000):
        assert (got, terminated, truncated, short_sha(observation)) == (reward, False, False, digest)
        assert info["correct_placement"] and info["level_seed"] == PANEL_SEED


@pytest.mark.parametrize("env_id", IDS)
def test_ragen2_step(benchmark, env_id):
    benchmark.group = "sudoku: step (parse + place + render)"
    peer = sudoku_env(env_id)
    action, reward, digest = FIRST_STEPS[env_id]
    for observation, got, done, info in _time_first_steps(benchmark, peer, action, PEER_ROUNDS):
        assert (got, done, short_sha(observation)) == (reward, False, digest)
        assert info["correct_placement"]


@pytest.mark.parametrize("env_id", IDS)
def test_optimal_action(benchmark, env_id):
    benchmark.group = "sudoku: optimal_action"
    env = gymnasium.make(env_id).unwrapped
    env.reset(seed=PANEL_SEED)
    assert benchmark(env.optimal_action) == OPTIMAL_ACTIONS[env_id]
