"""PPO losses for the actor and the critic, on ``[batch, tokens]`` tensors.

Every loss is a per-token matrix reduced by :func:`aggregate` over the response ``mask``;
positions outside the mask (observations, padding) never contribute, even as NaN, and an
empty mask gives a loss of 0 with zero gradient.  Losses are to be minimised; the functions
also return metrics as Python floats for logging.

The default aggregation is ``seq-mean-token-mean``: RAGEN configures ``token-mean`` but runs
with one trajectory per micro-batch and averages the micro-batches, which is the same thing.
"""

from __future__ import annotations

from typing import Literal

import torch

from ragen_bench.starpo.masked import masked_count, masked_mean, masked_sum

AggMode = Literal["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]
KlEstimator = Literal["k1", "k3"]

# exp() of a log-ratio beyond +-20 overflows float16 and means the sample is off-policy anyway.
_MAX_LOG_RATIO = 20.0


def aggregate(loss_mat: torch.Tensor, mask: torch.Tensor, mode: AggMode) -> torch.Tensor:
    """Reduce a ``[batch, tokens]`` loss matrix to a scalar over the masked tokens.

    - ``token-mean``: sum over all masked tokens / their number (long replies weigh more);
    - ``seq-mean-token-sum``: mean over rows of each row's token sum;
    - ``seq-mean-token-mean``: mean over rows of each row's token mean (every trajectory
      weighs the same; what RAGEN's micro-batch-1 runs computed).
    Rows with no masked token are left out of the row means.  The mean over the batch is
    local to this call: with gradient accumulation over micro-batches, ``token-mean`` of
    each micro-batch is not the global token mean (veRL 0.9 passes the global count).
    """
    if loss_mat.shape != mask.shape or loss_mat.dim() != 2:
        raise ValueError(f"loss_mat {tuple(loss_mat.shape)} and mask {tuple(mask.shape)} must both be [batch, tokens]")
    if mode == "token-mean":
        return masked_mean(loss_mat, mask)
    row_tokens = masked_count(mask, dim=1)
    row_sums = masked_sum(loss_mat, mask, dim=1)
    if mode == "seq-mean-token-sum":
        per_row = row_sums
    elif mode == "seq-mean-token-mean":
        per_row = row_sums / row_tokens.clamp(min=1.0)
    else:
        raise ValueError(
            f"unknown loss aggregation {mode!r}; expected 'token-mean', 'seq-mean-token-sum' or 'seq-mean-token-mean'"
        )
    return masked_mean(per_row, row_tokens > 0)


def policy_loss(
    log_probs: torch.Tensor,
    old_log_probs: torch.Tensor,
    advantages: torch.Tensor,
    mask: torch.Tensor,
    clip_low: float = 0.2,
    clip_high: float = 0.28,
    dual_clip: float | None = 3.0,
    agg: AggMode = "seq-mean-token-mean",
) -> tuple[torch.Tensor, dict[str, float]]:
    """PPO clipped surrogate with decoupled clip range and dual clip.

    With ``rho = exp(log_probs - old_log_probs)`` (log-ratio clamped to +-20) the per-token loss is
    ``max(-A * rho, -A * clip(rho, 1 - clip_low, 1 + clip_high))``; for ``A < 0`` it is further
    capped at ``-A * dual_clip`` (dual clip: a token whose ratio exploded under a negative
    advantage cannot dominate the batch).  ``dual_clip=None`` turns the cap off; otherwise
    it must exceed 1.

    Shapes: all inputs ``[batch, tokens]``; gradients flow through ``log_probs`` only.
    Metrics: ``ppo_clipfrac`` (masked tokens where the clipped term is the larger),
    ``dual_clipfrac`` (masked tokens capped by the dual clip), ``approx_kl`` (masked mean of
    ``old_log_probs - log_probs``, an estimate of KL(old || new)).
    """
    if dual_clip is not None and dual_clip <= 1.0:
        raise ValueError(f"dual_clip must be > 1 (or None to disable), got {dual_clip}")
    log_ratio = (log_probs - old_log_probs.detach()).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    ratio = torch.exp(log_ratio)
    advantages = advantages.detach()
    unclipped = -advantages * ratio
    clipped = -advantages * ratio.clamp(1.0 - clip_low, 1.0 + clip_high)
    losses = torch.maximum(unclipped, clipped)
    dual_capped = torch.zeros_like(mask, dtype=torch.bool)
    if dual_clip is not None:
        cap = -advantages * dual_clip
        dual_capped = (advantages < 0) & (losses > cap)
        losses = torch.where(dual_capped, cap, losses)
    metrics = {
        "ppo_clipfrac": float(masked_mean((clipped > unclipped).float(), mask)),
        "dual_clipfrac": float(masked_mean(dual_capped.float(), mask)),
        "approx_kl": float(masked_mean(-log_ratio.detach(), mask)),
    }
    return aggregate(losses, mask, agg), metrics


def entropy_from_logits(logits: torch.Tensor) -> torch.Tensor:
    """Entropy of the softmax distribution at each position: ``[..., vocab] -> [...]``.

    ``H = logsumexp(z) - sum softmax(z) * z``, stable for large logits.  Aggregate it with
    :func:`aggregate` over the response mask; the entropy bonus is ``-coef * aggregate(H, mask)``
    added to the loss.  Logits of ``-inf`` (tokens banned by a logits processor) count as
    probability 0; without the clamp, ``0 * -inf`` would make the entropy and its gradient NaN.
    """
    logits = logits.clamp(min=torch.finfo(logits.dtype).min)
    probs = torch.softmax(logits, dim=-1)
    return torch.logsumexp(logits, dim=-1) - (probs * logits).sum(dim=-1)


def kl_estimate(log_probs: torch.Tensor, ref_log_probs: torch.Tensor, estimator: KlEstimator = "k3") -> torch.Tensor:
    """Per-token estimate of KL(policy || reference) from the sampled tokens' log-probs.

    - ``k1``: ``log p - log q`` (unbiased, high variance, can be negative);
    - ``k3``: ``q/p - log(q/p) - 1`` (unbiased, low variance, never negative).
    As in veRL, ``log(q/p)`` is clamped to +-20 and k3 to at most 10, so one wild token
    cannot blow up the loss.
    """
    if estimator == "k1":
        return log_probs - ref_log_probs
    if estimator == "k3":
        log_ratio = (ref_log_probs - log_probs).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
        # min=0: exp(x) - x - 1 >= 0, but for a ratio a hair from 1 rounding can leave -1e-16.
        return (torch.exp(log_ratio) - log_ratio - 1.0).clamp(min=0.0, max=10.0)
    raise ValueError(f"unknown KL estimator {estimator!r}; expected 'k1' or 'k3'")


def kl_penalized_rewards(
    rewards: torch.Tensor,
    log_probs: torch.Tensor,
    ref_log_probs: torch.Tensor,
    mask: torch.Tensor,
    coef: float,
    estimator: KlEstimator = "k1",
) -> tuple[torch.Tensor, dict[str, float]]:
    """KL as a reward penalty: ``rewards - coef * KL`` on masked tokens (no gradient).

    Use it before computing advantages; use :func:`kl_estimate` with :func:`aggregate` for
    KL as a loss term instead.  Metric ``kl`` is the mean over rows of each row's summed KL.
    """
    with torch.no_grad():
        kl = torch.where(mask.bool(), kl_estimate(log_probs, ref_log_probs, estimator), 0.0)
        penalized = rewards - coef * kl
        metrics = {"kl": float(aggregate(kl, mask, "seq-mean-token-sum"))}
    return penalized, metrics


def value_loss(
    values: torch.Tensor,
    old_values: torch.Tensor,
    returns: torch.Tensor,
    mask: torch.Tensor,
    clip: float = 0.5,
    agg: AggMode = "seq-mean-token-mean",
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped value loss ``0.5 * max((V - R)^2, (clip(V, V_old - c, V_old + c) - R)^2)``, aggregated.

    ``values``: the critic's current predictions (with gradient); ``old_values``: its
    predictions at rollout time; ``returns``: the targets.  Metric ``vf_clipfrac``: masked
    tokens where the clipped error is the larger.
    """
    old_values, returns = old_values.detach(), returns.detach()
    clipped_values = torch.clamp(values, old_values - clip, old_values + clip)
    unclipped_error = (values - returns) ** 2
    clipped_error = (clipped_values - returns) ** 2
    losses = torch.maximum(unclipped_error, clipped_error)
    metrics = {"vf_clipfrac": float(masked_mean((clipped_error > unclipped_error).float(), mask))}
    return 0.5 * aggregate(losses, mask, agg), metrics
