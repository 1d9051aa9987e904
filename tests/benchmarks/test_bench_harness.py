"""Eval harness throughput: episodes per second through the full path.

Prompt building, parsing, env resets and steps, the ``optimal`` agent, trajectory
records, JSONL appends with an fsync per batch, and the summary, into a temporary
run directory: ``run_eval`` exactly as ``ragen-bench eval`` calls it.  The
per-episode figure is in ``extra_info["episodes_per_s"]``.

    .venv/bin/python -m pytest tests/benchmarks/test_bench_harness.py --benchmark-enable
"""

from __future__ import annotations

import itertools

import pytest

from ragen_bench.cli import compose_config
from ragen_bench.envs.sokoban import env as sokoban
from ragen_bench.eval import harness, rundir

ENV = "RAGEN/Sokoban-6x6-v0"
SAMPLES = 2  # x 256 test seeds = 512 episodes per round


@pytest.mark.parametrize("agent", ["optimal", "random"])
def test_harness_episodes_per_second(benchmark, tmp_path, agent):
    benchmark.group = "eval harness (Sokoban-6x6, 512 episodes per round)"
    rounds = itertools.count()

    def fresh_config():
        # Every round starts cold: the Sokoban level cache would otherwise serve all
        # levels of later rounds (within a round, sample 2 of a seed still hits it).
        sokoban._level_and_plan.cache_clear()
        out = tmp_path / f"round{next(rounds)}"
        config = compose_config("eval", [f"env={ENV}", f"agent={agent}", f"samples={SAMPLES}",
                                         "progress=false", f"out={out}"])
        return (config,), {}

    result = benchmark.pedantic(harness.run_eval, setup=fresh_config, rounds=3, iterations=1)
    assert result.complete and result.new_episodes == 256 * SAMPLES
    assert len(rundir.read_episodes(result.out / rundir.EPISODES)) == 256 * SAMPLES
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["episodes_per_s"] = round(result.new_episodes / benchmark.stats.stats.median)
