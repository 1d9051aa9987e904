"""Eval on a local Ray cluster: episodes per second with 1 and 2 workers, beside one process.

Each round is one whole ``ragen-bench eval ... launcher=ray`` as the command runs it:
new worker actors (imports, the agent and its model loaded in each), every shard
played, the shards merged into one run directory.  ``local`` is the same run in this
process (``run_eval``), for the cost of the Ray path.  Every round's ``summary.json``
must equal the local run's byte for byte.  Episodes/s are in ``extra_info``.

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_ray_eval.py \\
        --benchmark-enable --benchmark-only
"""

from __future__ import annotations

import itertools

import pytest

from ragen_bench.eval import compose_config, run_eval

ray = pytest.importorskip("ray")
launcher = pytest.importorskip("ragen_bench.integrations.ray.launcher")

RUNS = {
    # 256 test seeds x 8 samples: long enough that the workers' start-up is not all there is.
    "optimal": (["env=RAGEN/Sokoban-6x6-v0", "agent=optimal", "samples=8"], 2048),
    # Sampled replies of the 2-layer tiny model, two turns at most per episode.
    "tiny-model": (["env=RAGEN/Bandit-v0", "agent=hf", "agent.model=tiny", "agent.temperature=0.7",
                    "agent.max_new_tokens=24", "chat.max_turns=2", "limit=8", "samples=2", "lockstep_episodes=8"], 16),
}


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, object_store_memory=200 * 1024**2)
    yield
    ray.shutdown()


@pytest.fixture(scope="module")
def reference_summaries(tmp_path_factory):
    """``summary.json`` of each run played once in this process, read on first use."""
    cache: dict[str, bytes] = {}

    def summary(agent: str) -> bytes:
        if agent not in cache:
            out = tmp_path_factory.mktemp(f"reference-{agent}")
            run_eval(compose_config("eval", [*RUNS[agent][0], "progress=false", f"out={out}"]))
            cache[agent] = (out / "summary.json").read_bytes()
        return cache[agent]

    return summary


@pytest.mark.parametrize("workers", ["local", 1, 2])
@pytest.mark.parametrize("agent", list(RUNS))
def test_ray_eval_episodes_per_second(benchmark, cluster, reference_summaries, tmp_path, agent, workers):
    overrides, episodes = RUNS[agent]
    benchmark.group = f"eval on Ray, {agent} ({episodes} episodes per round)"
    rounds = itertools.count()

    def fresh_config():
        launch = [] if workers == "local" else ["launcher=ray", f"workers={workers}"]
        config = compose_config("eval", [*overrides, *launch, "progress=false", f"out={tmp_path / str(next(rounds))}"])
        return (config,), {}

    def play(config):
        return launcher.run_eval_on_ray(config) if config["launcher"] == "ray" else run_eval(config)

    result = benchmark.pedantic(play, setup=fresh_config, rounds=2, iterations=1)
    for number in range(2):
        assert (tmp_path / str(number) / "summary.json").read_bytes() == reference_summaries(agent)
    assert result.complete and result.new_episodes == episodes
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["episodes_per_s"] = round(episodes / benchmark.stats.stats.median, 1)
