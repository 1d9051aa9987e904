"""Sampling in another precision than training (``rollout.dtype``): the ratio's reference is the fp32 recomputation.

The sampler decodes a bfloat16 copy of the policy; the update's old log-probs must then be
the fp32 policy's log-probs of the sampled ids, never the sampler's, and the copy must follow
the policy after every update.  With equal precisions nothing changes.  Runs use the tiny
model on Bandit, as tests/test_train.py does.
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from ragen_bench.starpo.forward import token_log_probs  # noqa: E402
from ragen_bench.train.sampler import SamplingCopy, torch_threads  # noqa: E402
from tests.test_train import metrics, small, without_timing  # noqa: E402


def one_step_recording_the_update(tmp_path, monkeypatch, *extra):
    """Run one grpo step; return the trainer, what the update used and an independent fp32 recomputation.

    ``seen``: ``batch``; ``old``, the old log-probs handed to ``_update`` (None when it computes
    them itself); ``reference``, the old log-probs the policy loss was given, row by row, whichever
    way they came; ``fp32``, an fp32 forward pass over the batch's sampled ids taken before the
    update moves the policy.
    """
    from ragen_bench.train import checkpoint, trainer as trainer_module

    seen = {}
    update, trim, loss = trainer_module.Trainer._update, trainer_module.trim_rows, trainer_module.policy_loss

    def recording(self, batch, advantages, returns, values, old_log_probs, ref_log_probs):
        with torch.no_grad():
            fp32, _ = token_log_probs(self.policy, batch.input_ids, batch.attention_mask, batch.response_mask,
                                      self.config.rollout.temperature, with_entropy=False)
        seen.update(batch=batch, old=old_log_probs, fp32=fp32, reference=torch.full_like(fp32, float("nan")))
        return update(self, batch, advantages, returns, values, old_log_probs, ref_log_probs)

    def trimming(batch, rows):  # the micro-batch's rows, in the order the update visits them
        seen["rows"] = rows
        return trim(batch, rows)

    def losing(log_probs, old, *args, **kwargs):
        seen["reference"][seen["rows"], : old.shape[1]] = old.detach()
        return loss(log_probs, old, *args, **kwargs)

    monkeypatch.setattr(trainer_module.Trainer, "_update", recording)
    monkeypatch.setattr(trainer_module, "trim_rows", trimming)
    monkeypatch.setattr(trainer_module, "policy_loss", losing)
    out = tmp_path / "run"
    # filter.ratio=1 keeps every group, so the update always runs; one mini-batch of all 8 rows is
    # one optimiser step per batch, where no separate old-log-prob pass runs.
    config = small("grpo", "steps=1", "filter.ratio=1", "actor.mini_batch=8", "actor.lr=0.05", *extra, out=out)
    trainer = trainer_module.Trainer(config, out)
    checkpoint.prepare_out(out, config)
    trainer.run()
    return trainer, seen, metrics(out)[0]


@pytest.mark.parametrize("lora", [[], ["lora.rank=4", "lora.alpha=8"]], ids=["full", "lora"])
def test_bf16_sampling_trains_against_the_fp32_recomputation(tmp_path, monkeypatch, lora):
    if lora:
        pytest.importorskip("peft")
    trainer, seen, row = one_step_recording_the_update(tmp_path, monkeypatch, "rollout.dtype=bfloat16", *lora)
    mask = seen["batch"].response_mask
    assert trainer.agent.model is trainer.sampling_copy.model is not trainer.policy
    assert next(trainer.agent.model.parameters()).dtype == torch.bfloat16
    # The policy loss's reference is the fp32 forward pass over the sampled ids: with one optimiser
    # step per batch the update's own pass, so no separate pass ran before it ...
    assert seen["old"] is None
    reference = seen["reference"][mask]
    assert not reference.isnan().any()
    assert torch.allclose(reference, seen["fp32"][mask], atol=1e-5)
    # ... and not the bf16 sampler's log-probs, whose distance from it is logged.
    sampler_gap = (seen["batch"].old_log_probs[mask] - seen["fp32"][mask]).abs().mean()
    assert sampler_gap > 1e-4 > (reference - seen["fp32"][mask]).abs().mean() * 10
    assert row["rollout/log_prob_gap"] == pytest.approx(float(sampler_gap), rel=0.05)
    assert row["time/sampler_sync"] >= 0
    # After the update the sampler's copy holds the trained weights (rounded to bf16 once).
    state = trainer.sampling_copy.model.state_dict()
    probe = next(name for name in state if name.endswith("q_proj.weight"))
    policy_weight = dict(trainer.policy.named_modules())[_policy_name(trainer.policy, probe)]
    expected = policy_weight.base_layer.weight + policy_weight.get_delta_weight("default") if lora else policy_weight.weight
    assert torch.equal(state[probe], expected.detach().to(torch.bfloat16))


def _policy_name(policy, merged_parameter):
    """The policy's module behind a merged model's ``...q_proj.weight`` (peft nests it under base_model.model)."""
    module = merged_parameter.removesuffix(".weight")
    return f"base_model.model.{module}" if hasattr(policy, "peft_config") else module


def test_bf16_sampling_with_two_optimiser_steps_recomputes_the_reference_before_the_update(tmp_path, monkeypatch):
    # Two mini-batches of 4: the first optimiser step moves the policy, so the reference for the second
    # must be computed before the update, by the fp32 policy, over the sampled ids.
    _, seen, row = one_step_recording_the_update(tmp_path, monkeypatch, "rollout.dtype=bfloat16", "actor.mini_batch=4")
    mask = seen["batch"].response_mask
    assert seen["old"] is not None
    assert torch.allclose(seen["old"][mask], seen["fp32"][mask], atol=1e-5)
    assert torch.equal(seen["reference"][mask], seen["old"][mask])
    sampler_gap = (seen["batch"].old_log_probs[mask] - seen["fp32"][mask]).abs().mean()
    assert row["rollout/log_prob_gap"] == pytest.approx(float(sampler_gap), rel=1e-3)


def test_equal_precision_samples_the_policy_itself_and_changes_nothing(tmp_path, monkeypatch):
    named, seen, row = one_step_recording_the_update(tmp_path / "named", monkeypatch, "rollout.dtype=float32")
    assert named.sampling_copy is None and named.agent.model is named.policy
    assert seen["old"] is None  # one optimiser step per batch: "old" is the update's own forward pass
    assert "rollout/log_prob_gap" not in row and "time/sampler_sync" not in row
    _, _, default_row = one_step_recording_the_update(tmp_path / "default", monkeypatch)
    assert without_timing(row) == without_timing(default_row)


def test_a_refresh_copies_what_the_optimiser_changed():
    from ragen_bench.agents.local_models import load_model

    policy, _ = load_model("tiny")
    copy = SamplingCopy(policy, "bfloat16")
    weight = dict(policy.named_parameters())["model.embed_tokens.weight"]
    with torch.no_grad():
        weight.add_(0.5)
    copied = dict(copy.model.named_parameters())["model.embed_tokens.weight"]
    assert not torch.equal(copied, weight.to(torch.bfloat16))
    copy.refresh()
    assert torch.equal(copied, weight.detach().to(torch.bfloat16))


def test_torch_threads_sets_then_restores():
    before = torch.get_num_threads()
    with torch_threads(1):
        assert torch.get_num_threads() == 1
    assert torch.get_num_threads() == before
    with torch_threads(None):
        assert torch.get_num_threads() == before


@pytest.mark.parametrize(("load", "threads"), [(1.4, 1), (0.1, 2)])
def test_sampling_threads_default_to_the_cores_other_processes_leave_free(monkeypatch, load, threads):
    import os

    from ragen_bench.agents.local_models import resolve_threads
    from ragen_bench.train import config as train_config

    # A 2-core machine: others keep 1.4 cores busy (auto takes one thread), or almost none (two).
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(os, "getloadavg", lambda: (load, 1.0, 1.0))
    config = train_config.from_preset("grpo", [])
    assert config.sampling_threads == "auto" and resolve_threads(config.sampling_threads) == threads
    assert resolve_threads(train_config.from_preset("grpo", ["sampling_threads=2"]).sampling_threads) == 2
    assert resolve_threads(train_config.from_preset("grpo", ["sampling_threads=null"]).sampling_threads) is None
