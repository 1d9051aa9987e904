"""The locally built tiny model: offline, deterministic, loadable by the Auto classes."""

from __future__ import annotations

import hashlib

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_bench.agents.tiny_model import MARKER_FILE, build_tiny  # noqa: E402


def _digest(directory):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(directory.iterdir())}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny(tmp_path_factory.mktemp("tiny") / "seed0", seed=0)


def test_same_seed_same_files_other_seed_other_weights(tiny, tmp_path):
    before = torch.random.get_rng_state()
    assert _digest(build_tiny(tmp_path / "again", seed=0)) == _digest(tiny)
    assert torch.equal(before, torch.random.get_rng_state())  # the caller's torch seed is untouched
    other = _digest(build_tiny(tmp_path / "seed1", seed=1))
    assert other["model.safetensors"] != _digest(tiny)["model.safetensors"]
    assert other["tokenizer.json"] == _digest(tiny)["tokenizer.json"]


def test_a_built_directory_is_reused_and_a_changed_marker_rebuilds(tiny):
    marker = tiny / MARKER_FILE
    stamp = marker.stat().st_mtime_ns
    assert build_tiny(tiny, seed=0) == tiny and marker.stat().st_mtime_ns == stamp
    marker.write_text("{}")
    build_tiny(tiny, seed=0)
    assert marker.read_text() != "{}"


def test_auto_classes_load_it_offline_and_it_generates(tiny, monkeypatch):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    tokenizer = AutoTokenizer.from_pretrained(tiny)
    model = AutoModelForCausalLM.from_pretrained(tiny)
    assert sum(p.numel() for p in model.parameters()) < 200_000
    messages = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Turn 1:\nState:\n#_P#"}]
    prompt = tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
    assert prompt.endswith("<|im_start|>assistant\n")
    text = "Any text, even ünïcödé √ and <answer>Up</answer>, round-trips."
    assert tokenizer.decode(tokenizer.encode(text, add_special_tokens=False)) == text
    inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
    output = model.generate(**inputs, max_new_tokens=5, do_sample=False)
    assert output.shape[1] == inputs["input_ids"].shape[1] + 5 or tokenizer.eos_token_id in output[0].tolist()
