"""The StarPO core runs on an accelerator and gives the CPU's numbers (skipped without CUDA)."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
if not torch.cuda.is_available():
    pytest.skip("no CUDA device", allow_module_level=True)

from ragen_bench.starpo.advantages import compute_bi_level_gae, compute_gae, compute_grpo  # noqa: E402
from ragen_bench.starpo.filter import filter_groups  # noqa: E402
from ragen_bench.starpo.losses import entropy_from_logits, kl_penalized_rewards, policy_loss, value_loss  # noqa: E402

torch.set_num_threads(1)


def batch():
    gen = torch.Generator().manual_seed(0)
    mask = torch.rand(6, 10, generator=gen) < 0.7
    mask[:, -1] = False
    rewards = torch.randn(6, 10, generator=gen) * mask
    values = torch.randn(6, 10, generator=gen)
    log_probs = -torch.rand(6, 10, generator=gen) * 3
    old = log_probs + torch.randn(6, 10, generator=gen) * 0.3
    logits = torch.randn(6, 10, 17, generator=gen)
    return dict(mask=mask, rewards=rewards, values=values, log_probs=log_probs, old=old, logits=logits)


def run_all(d):
    seeds = [0, 0, 1, 1, 2, 2]
    mask = d["mask"]
    adv, ret = compute_gae(d["rewards"], d["values"], mask, gamma=0.9, lam=0.8)
    bi_adv, bi_ret = compute_bi_level_gae(d["rewards"], d["values"], mask, gamma=0.9, lam=0.8)
    grpo, _ = compute_grpo(d["rewards"], mask, seeds, mode="rloo")
    kept = filter_groups(d["rewards"].sum(1), seeds, ratio=0.5)
    pg, pg_metrics = policy_loss(d["log_probs"], d["old"], adv, mask)
    vf, vf_metrics = value_loss(d["values"] + 0.7, d["values"], ret, mask)
    penalized, _ = kl_penalized_rewards(d["rewards"], d["log_probs"], d["old"], mask, coef=0.1, estimator="k3")
    entropy = entropy_from_logits(d["logits"])
    tensors = [adv, ret, bi_adv, bi_ret, grpo, kept.rows, kept.stats.std, pg, vf, penalized, entropy]
    return [x.cpu() for x in tensors], {**pg_metrics, **vf_metrics}


def test_cuda_results_equal_cpu_results():
    cpu = batch()
    cuda = {k: v.cuda() for k, v in cpu.items()}
    cpu_tensors, cpu_metrics = run_all(cpu)
    cuda_tensors, cuda_metrics = run_all(cuda)
    for on_cpu, on_cuda in zip(cpu_tensors, cuda_tensors):
        torch.testing.assert_close(on_cuda, on_cpu, rtol=1e-4, atol=1e-5)
    assert cuda_metrics == pytest.approx(cpu_metrics, rel=1e-4, abs=1e-6)
