"""The ``hf`` agent's ``device`` setting: auto, cpu, cuda, cuda:N, checked before the model loads."""

from __future__ import annotations

import pytest

from ragen_bench.agents.hf import resolve_device


@pytest.mark.parametrize(
    ("device", "cuda_devices", "expected"),
    [
        ("auto", 0, "cpu"),
        ("auto", 2, "cuda"),
        ("cpu", 2, "cpu"),
        ("cuda", 1, "cuda"),
        ("cuda:1", 2, "cuda:1"),
    ],
)
def test_devices_resolve(device, cuda_devices, expected):
    assert resolve_device(device, cuda_devices) == expected


@pytest.mark.parametrize(
    ("device", "cuda_devices", "message"),
    [
        ("cuda", 0, r"device=cuda: torch sees 0 CUDA devices; use auto or cpu"),
        ("cuda:2", 2, r"device=cuda:2: torch sees 2 CUDA devices"),
        ("gpu", 1, r"device must be auto, cpu, cuda or cuda:N, got 'gpu'"),
        ("cuda:x", 1, r"device must be auto, cpu, cuda or cuda:N, got 'cuda:x'"),
        ("CPU", 0, r"device must be"),
    ],
)
def test_bad_devices_are_refused_naming_the_setting(device, cuda_devices, message):
    with pytest.raises(ValueError, match=message):
        resolve_device(device, cuda_devices)


def test_the_agent_runs_where_it_is_told_and_refuses_a_missing_gpu_before_loading(monkeypatch):
    torch = pytest.importorskip("torch")
    from ragen_bench.agents import hf
    from ragen_bench.chat.protocol import AgentRequest

    agent = hf.make_hf_agent("tiny", device="cpu", max_new_tokens=3, temperature=1.0)
    assert agent.model.device.type == "cpu"
    (reply,) = agent.act([AgentRequest(messages=[{"role": "user", "content": "hi"}], episode_key="e", turn=1)])
    assert reply.completion_tokens >= 1
    if torch.cuda.device_count() == 0:
        monkeypatch.setattr(hf, "load_for_sampling", lambda *a, **k: pytest.fail("the model was loaded"))
        with pytest.raises(ValueError, match=r"device=cuda: torch sees 0 CUDA devices"):
            hf.make_hf_agent("tiny", device="cuda")
