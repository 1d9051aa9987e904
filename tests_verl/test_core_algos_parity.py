"""Our StarPO core against veRL's ``core_algos`` on random tensors (skipped when veRL is absent).

Compared where the definitions agree: inside the mask (veRL leaves shifted values outside it),
on groups of two or more (veRL passes a lone sample's score through; we give 0), with rewards on
masked tokens (veRL silently drops the others; we refuse them).
"""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
verl_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
verl_F = pytest.importorskip("verl.utils.torch_functional")
import numpy as np  # noqa: E402

from ragen_bench.starpo.advantages import compute_gae, compute_grpo  # noqa: E402
from ragen_bench.starpo.losses import aggregate, entropy_from_logits, kl_estimate, policy_loss, value_loss  # noqa: E402
from ragen_bench.starpo.masked import masked_whiten  # noqa: E402

torch.set_num_threads(1)
SEEDS = range(5)


def random_batch(seed: int, rows: int = 8, tokens: int = 12):
    """Float64 tensors; the mask has observation gaps and trailing padding, every row non-empty."""
    gen = torch.Generator().manual_seed(seed)
    mask = torch.rand(rows, tokens, generator=gen) < 0.7
    mask[:, 0] = True
    mask[:, -2:] = False
    rewards = torch.randn(rows, tokens, generator=gen, dtype=torch.float64) * mask
    values = torch.randn(rows, tokens, generator=gen, dtype=torch.float64)
    return gen, rewards, values, mask


def inside(mask, ours, theirs):
    torch.testing.assert_close(ours[mask], theirs[mask])


@pytest.mark.parametrize("seed", SEEDS)
def test_gae_and_whitening_match_verl(seed):
    _, rewards, values, mask = random_batch(seed)
    ours, our_returns = compute_gae(rewards, values, mask, gamma=0.97, lam=0.9)
    theirs, their_returns = verl_algos.compute_gae_advantage_return(rewards, values, mask.double(), 0.97, 0.9)
    inside(mask, ours, theirs)
    inside(mask, our_returns, their_returns)
    inside(mask, masked_whiten(values, mask), verl_F.masked_whiten(values, mask.double()))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mode", ["mean_std", "mean", "rloo"])
def test_grpo_and_rloo_match_verl_on_real_groups(seed, mode):
    _, rewards, _, mask = random_batch(seed)
    group_ids = np.array([0, 1, 0, 2, 1, 2, 2, 0])  # sizes 3, 2, 3: interleaved, no singletons
    ours, _ = compute_grpo(rewards, mask, group_ids, mode=mode)
    if mode == "rloo":
        theirs, _ = verl_algos.compute_rloo_outcome_advantage(rewards, mask.double(), group_ids)
    else:
        theirs, _ = verl_algos.compute_grpo_outcome_advantage(
            rewards, mask.double(), group_ids, norm_adv_by_std_in_grpo=(mode == "mean_std")
        )
    inside(mask, ours, theirs)


@pytest.mark.filterwarnings("ignore:.*compute_policy_loss' is deprecated:FutureWarning")
@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("mode", ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"])
def test_losses_match_verl(seed, mode):
    gen, _, values, mask = random_batch(seed)
    mask[3] = False  # an empty row: left out of the row means by both
    old = -torch.rand(mask.shape, generator=gen, dtype=torch.float64) * 3
    new = old + torch.randn(mask.shape, generator=gen, dtype=torch.float64) * 0.5
    advantages = torch.randn(mask.shape, generator=gen, dtype=torch.float64)
    loss_mat = torch.randn(mask.shape, generator=gen, dtype=torch.float64)
    weights = mask.double()

    torch.testing.assert_close(aggregate(loss_mat, mask, mode), verl_algos.agg_loss(loss_mat, weights, mode))

    ours, metrics = policy_loss(new, old, advantages, mask, 0.2, 0.28, 3.0, agg=mode)
    theirs, clipfrac, approx_kl, dual_clipfrac = verl_algos.compute_policy_loss(
        old, new, advantages, weights, cliprange=0.2, cliprange_low=0.2, cliprange_high=0.28, clip_ratio_c=3.0,
        loss_agg_mode=mode,
    )
    torch.testing.assert_close(ours, theirs)
    assert metrics["ppo_clipfrac"] == pytest.approx(float(clipfrac))
    assert metrics["dual_clipfrac"] == pytest.approx(float(dual_clipfrac))
    assert metrics["approx_kl"] == pytest.approx(float(approx_kl))

    returns = torch.randn(mask.shape, generator=gen, dtype=torch.float64)
    predictions = values + torch.randn(mask.shape, generator=gen, dtype=torch.float64)
    ours, metrics = value_loss(predictions, values, returns, mask, clip=0.5, agg=mode)
    theirs, vf_clipfrac = verl_algos.compute_value_loss(predictions, returns, values, weights, 0.5, loss_agg_mode=mode)
    torch.testing.assert_close(ours, theirs)
    assert metrics["vf_clipfrac"] == pytest.approx(float(vf_clipfrac))


@pytest.mark.parametrize("seed", SEEDS)
def test_kl_and_entropy_match_verl(seed):
    gen = torch.Generator().manual_seed(seed)
    log_probs = -torch.rand(4, 6, generator=gen, dtype=torch.float64) * 5
    ref = -torch.rand(4, 6, generator=gen, dtype=torch.float64) * 5
    torch.testing.assert_close(kl_estimate(log_probs, ref, "k1"), verl_algos.kl_penalty(log_probs, ref, "k1"))
    torch.testing.assert_close(kl_estimate(log_probs, ref, "k3"), verl_algos.kl_penalty(log_probs, ref, "low_var_kl"))
    logits = torch.randn(4, 6, 11, generator=gen, dtype=torch.float64) * 4
    torch.testing.assert_close(entropy_from_logits(logits), verl_F.entropy_from_logits(logits))
