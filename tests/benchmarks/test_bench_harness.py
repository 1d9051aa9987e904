"""Eval harness throughput: episodes per second through the full path, and a correct run.

Prompt building, parsing, env resets and steps, the ``optimal`` or ``random`` agent,
trajectory records, JSONL appends with an fsync per lock-step group, and the summary,
into a temporary run directory: ``run_eval`` exactly as ``ragen-bench eval`` calls it.
The per-episode figure is in ``extra_info["episodes_per_s"]``.  Every round's run is
checked too: a fast harness that writes a wrong summary measures nothing.

    .venv/bin/python -m pytest tests/benchmarks/test_bench_harness.py --benchmark-enable
"""

from __future__ import annotations

import itertools

import pytest

from ragen_bench import panels
from ragen_bench.envs.sokoban import env as sokoban_env
from ragen_bench.eval import compose_config, rundir, run_eval

ENV = "RAGEN/Sokoban-6x6-v0"
SAMPLES = 2  # x 256 test seeds = 512 episodes per round
EPISODES = 256 * SAMPLES


def check_run(result, agent: str) -> None:
    """The run holds every planned episode once, and its summary follows from the records."""
    records = rundir.read_episodes(result.out / rundir.EPISODES)
    seeds = panels.load(ENV, "test").seeds
    assert sorted(map(rundir.slot_of, records)) == sorted((ENV, "test", s, k) for s in seeds for k in range(SAMPLES))
    (group,) = rundir.read_json(result.out / rundir.SUMMARY)["groups"]
    successes = sum(record["success"] for record in records)
    assert group["episodes"] == EPISODES and group["success_rate"] == successes / EPISODES
    if agent == "optimal":
        # The optimal agent solves every level in the fewest actions.
        assert successes == EPISODES and group["efficiency"] == 1.0
    else:
        assert 0 < successes < EPISODES  # random play solves some 6x6 levels, not all


@pytest.mark.parametrize("agent", ["optimal", "random"])
def test_harness_episodes_per_second(benchmark, tmp_path, agent):
    benchmark.group = "eval harness (Sokoban-6x6, 512 episodes per round)"
    rounds = itertools.count()
    results = []

    def fresh_config():
        # Every round starts cold: the Sokoban level cache would otherwise serve all
        # levels of later rounds (within a round, sample 2 of a seed still hits it).
        sokoban_env._level_and_plan.cache_clear()
        out = tmp_path / f"round{next(rounds)}"
        config = compose_config("eval", [f"env={ENV}", f"agent={agent}", f"samples={SAMPLES}",
                                         "progress=false", f"out={out}"])
        return (config,), {}

    def timed(config):
        results.append(run_eval(config))
        return results[-1]

    result = benchmark.pedantic(timed, setup=fresh_config, rounds=3, iterations=1)
    assert result.complete and result.new_episodes == EPISODES
    for each in results:
        check_run(each, agent)
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["episodes_per_s"] = round(result.new_episodes / benchmark.stats.stats.median)
