"""``launcher=ray`` asks Ray for a GPU per worker when the run's agent runs a model.

A local Ray cluster on this CPU machine is told it has one GPU (Ray takes the count as
given), so the request is really placed and granted: two ``hf`` workers share the one GPU
one after the other, a scripted agent's workers ask for none.
"""

from __future__ import annotations

import functools
from dataclasses import replace
from pathlib import Path

import pytest

from ragen_bench.cli import main
from ragen_bench.eval import compose_config, run_eval
from ragen_bench.eval.config import ConfigError, EvalConfig, load
from tests.conftest import one_line_error

ray = pytest.importorskip("ray")
launcher = pytest.importorskip("ragen_bench.integrations.ray.launcher")

TINY = ["env=RAGEN/Bandit-v0", "agent=hf", "agent.model=tiny", "agent.max_new_tokens=8",
        "limit=2", "lockstep_episodes=2", "chat.max_turns=1"]
OPTIMAL = ["env=RAGEN/Sokoban-6x6-v0", "agent=optimal", "limit=2"]


@pytest.fixture(scope="module")
def one_gpu_cluster():
    ray.init(num_cpus=2, num_gpus=1, include_dashboard=False, object_store_memory=200 * 1024**2)
    yield
    ray.shutdown()


@pytest.fixture
def requested(monkeypatch):
    """The ``num_gpus`` of every worker the launcher starts (the real actors still start)."""
    asked: list[float] = []
    options = launcher.ShardWorker.options

    def spy(**kwargs):
        asked.append(kwargs["num_gpus"])
        return options(**kwargs)

    monkeypatch.setattr(launcher.ShardWorker, "options", spy)
    return asked


def config(out: Path, *overrides: str) -> dict:
    return compose_config("eval", [*overrides, f"out={out}", "progress=false"])


@functools.cache
def _ray_run() -> EvalConfig:
    return load(compose_config("eval", [*OPTIMAL, "launcher=ray"]))


def ray_run(agent: dict, opponent: object = None, asked: float | None = None) -> EvalConfig:
    """A launcher=ray run of ``agent`` against ``opponent`` (an agent config, a scripted name or None),
    asking for ``asked`` GPUs per worker."""
    rival = opponent if isinstance(opponent, dict) else None
    return replace(_ray_run(), agent=agent, opponent_agent=rival, gpus_per_worker=asked)


@pytest.mark.parametrize(
    ("agent", "opponent", "asked", "cluster_gpus", "expected"),
    [
        ("hf", None, None, 4, 1.0),
        ("vllm", None, None, 1, 1.0),
        ("hf", None, None, 0, 0.0),  # a CPU cluster: asking would wait forever
        ("optimal", None, None, 4, 0.0),
        ("openai", None, None, 4, 0.0),  # the model runs behind a server
        ("random", {"name": "hf", "model": "tiny"}, None, 2, 1.0),  # a model opponent plays in the worker too
        ("random", "minimax", None, 2, 0.0),
        ("optimal", None, 0.5, 1, 0.5),
        ("hf", None, 0, 4, 0.0),
        ("hf", None, 2, 2, 2.0),
    ],
)
def test_worker_gpus(agent, opponent, asked, cluster_gpus, expected):
    assert launcher.worker_gpus(ray_run({"name": agent}, opponent, asked), cluster_gpus) == expected


def test_a_request_no_node_can_grant_is_refused_naming_the_key():
    with pytest.raises(ConfigError, match=r"ray.gpus_per_worker=2: the Ray cluster has 1 GPUs"):
        launcher.worker_gpus(ray_run({"name": "hf"}, asked=2), 1.0)


def test_model_agent_workers_take_the_gpu_in_turn_and_play_the_same_run(one_gpu_cluster, requested, tmp_path):
    result = launcher.run_eval_on_ray(config(tmp_path / "ray", *TINY, "launcher=ray", "workers=2"))
    local = run_eval(config(tmp_path / "local", *TINY))
    assert requested == [1.0, 1.0]
    assert (result.out / "summary.json").read_bytes() == (local.out / "summary.json").read_bytes()


def test_scripted_and_explicit_requests(one_gpu_cluster, requested, tmp_path):
    launcher.run_eval_on_ray(config(tmp_path / "a", *OPTIMAL, "launcher=ray", "workers=2"))
    launcher.run_eval_on_ray(config(tmp_path / "b", *OPTIMAL, "launcher=ray", "workers=2", "ray.gpus_per_worker=0.5"))
    assert requested == [0.0, 0.0, 0.5, 0.5]


def test_an_ungrantable_request_is_one_line_before_any_worker_starts(one_gpu_cluster, requested, tmp_path, capsys):
    assert main(["eval", *TINY, "launcher=ray", "ray.gpus_per_worker=3", f"out={tmp_path / 'run'}"]) == 2
    one_line_error(capsys, "ray.gpus_per_worker=3", "1 GPUs")
    assert requested == []


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        (["ray.gpus_per_worker=1"], ["ray.gpus_per_worker=1", "launcher=ray"]),
        (["launcher=ray", "ray.gpus_per_worker=-1"], ["ray.gpus_per_worker", "-1"]),
        (["launcher=ray", "ray.gpus_per_worker=many"], ["ray.gpus_per_worker", "many"]),
        (["launcher=ray", "ray.gpus_per_worker=9"], ["ray.gpus_per_worker", "0..8"]),
    ],
)
def test_bad_gpu_settings_are_one_line(tmp_path, capsys, overrides, names):
    assert main(["eval", *OPTIMAL, *overrides, f"out={tmp_path / 'run'}"]) == 2
    one_line_error(capsys, *names)


@pytest.mark.parametrize(
    ("agent", "asked", "cluster_gpus", "expected"),
    [
        ({"name": "hf", "device": "cpu"}, None, 4, 0.0),  # a model on the CPU needs no card
        ({"name": "hf", "device": "auto"}, None, 4, 1.0),
        ({"name": "hf", "device": "cuda"}, None, 1, 1.0),
        ({"name": "hf", "device": "cuda:1"}, 2, 2, 2.0),  # a worker granted two sees cuda:0 and cuda:1
        ({"name": "hf", "device": "cpu"}, 1, 1, 1.0),  # an explicit request stands
    ],
)
def test_worker_gpus_follow_the_agents_device(agent, asked, cluster_gpus, expected):
    assert launcher.worker_gpus(ray_run(agent, asked=asked), cluster_gpus) == expected


@pytest.mark.parametrize(
    ("agent", "opponent", "asked", "cluster_gpus", "message"),
    [
        ({"name": "hf", "device": "cuda"}, None, None, 0, r"agent.device=cuda: a Ray worker sees only the 0 GPUs"),
        ({"name": "hf", "device": "cuda:1"}, None, None, 2, r"agent.device=cuda:1: a Ray worker sees only the 1 GPUs"),
        ({"name": "random"}, {"name": "hf", "device": "cuda"}, 0, 2, r"opponent.device=cuda: .* sees only the 0 GPUs"),
    ],
)
def test_a_cuda_device_the_worker_cannot_see_is_refused_naming_the_key(agent, opponent, asked, cluster_gpus, message):
    with pytest.raises(ConfigError, match=message):
        launcher.worker_gpus(ray_run(agent, opponent, asked), cluster_gpus)
