"""Collapse diagnostics: does the reasoning still depend on the input?

RAGEN-2 (arXiv 2604.06268) separates two failures of agent RL.  **Entropy collapse**: for a
given input the policy always writes the same reasoning (low H(Z|X)).  **Template collapse**:
the reasoning stays varied but stops depending on the input, the same templates whatever the
state (low I(X;Z) while H(Z) stays high).  Both are read off one matrix of cross
log-probabilities: ``cross[i, j]`` = log p(z_i | x_j), the reasoning z_i sampled for row i
scored under every distinct prompt x_j of the sample (column ``columns[i]`` is its own).

The estimates are RAGEN-2's (``ragen/trainer/collapse_metrics.py``, names kept): the
information is measured under the sample's empirical prompt distribution, uniform over its
N columns, so I(X;Z) <= log N, and p_mix(z) = (1/N) sum_j p(z | x_j) is the marginal.  Each
estimate comes per token (``cross`` = the log-prob averaged over z's tokens) and per sequence
(``*_seq``, ``cross_sum`` = summed).  Everything here is torch on given tensors; building the
matrix (which prompts, which tokens, the forward passes) is the trainer's.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence

import torch

# The top-k retrieval accuracies logged besides top-1 (RAGEN-2's).
RETRIEVAL_KS = (2, 4, 8)


def log_prob_stats(cross: torch.Tensor, columns: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(matched, marginal)``, each ``[M]``: log p(z_i | x_i) and log p_mix(z_i).

    log p_mix(z) = logsumexp_j log p(z | x_j) - log N, stable for log-probs of any size.
    """
    rows, n = cross.shape
    matched = cross[torch.arange(rows, device=cross.device), columns]
    marginal = torch.logsumexp(cross, dim=1) - math.log(n)
    return matched, marginal


def mi_estimate(matched: torch.Tensor, marginal: torch.Tensor, n_prompts: int) -> dict[str, float]:
    """Î(X;Z) = mean(log p(z|x) - log p_mix(z)), with its ceiling log N and the two means.

    A Monte Carlo estimate: it can dip below 0 when the true information is near 0.
    """
    matched_mean, marginal_mean = float(matched.mean()), float(marginal.mean())
    return {
        "mi_estimate": matched_mean - marginal_mean,
        "mi_upper_bound": math.log(n_prompts),
        "matched_log_prob_mean": matched_mean,
        "marginal_log_prob_mean": marginal_mean,
    }


def reasoning_entropy(matched: torch.Tensor, marginal: torch.Tensor, matched_sum: torch.Tensor,
                      marginal_sum: torch.Tensor) -> dict[str, float]:
    """H(Z|X) = -mean log p(z|x) and H(Z) = -mean log p_mix(z), per token and per sequence.

    The reasoning was sampled from p(z|x), so these are the plug-in entropy estimates; their
    difference is :func:`mi_estimate`.
    """
    return {
        "conditional_entropy_est": -float(matched.mean()),
        "reasoning_entropy_est": -float(marginal.mean()),
        "conditional_entropy_seq_est": -float(matched_sum.mean()),
        "reasoning_entropy_seq_est": -float(marginal_sum.mean()),
    }


def retrieval_accuracy(cross: torch.Tensor, columns: torch.Tensor,
                       signatures: Sequence[Hashable] | None = None) -> dict[str, float]:
    """How often the prompt that makes z most likely is z's own: top-1 and top-k for k in 2, 4, 8.

    Columns with equal ``signatures`` (the same prompt text under two seeds) are one prompt:
    any of them counts as right.  The chance level is then, per row, the share of columns
    equal to its own, averaged (1/N when all differ); top-k chance is ``min(1, k x chance)``
    with k capped at N, as RAGEN-2 computes it.  Ties go to the first column (``argmax``).
    """
    rows, n = cross.shape
    if signatures is None:
        signatures = range(n)
    ids: dict[Hashable, int] = {}
    column_sig = torch.tensor([ids.setdefault(sig, len(ids)) for sig in signatures], device=cross.device)
    true_sig = column_sig[columns]
    accuracy = float((column_sig[cross.argmax(dim=1)] == true_sig).float().mean())
    same = torch.bincount(column_sig)[true_sig].float() / n
    chance = float(same.mean())
    metrics = {"retrieval_accuracy": accuracy, "retrieval_chance_level": chance,
               "retrieval_above_chance": accuracy - chance}
    k_max = min(max(RETRIEVAL_KS), n)
    top = column_sig[torch.topk(cross, k_max, dim=1).indices]
    for k in RETRIEVAL_KS:
        k_eff = min(k, k_max)
        hit = float((top[:, :k_eff] == true_sig[:, None]).any(dim=1).float().mean())
        chance_k = min(1.0, chance * k_eff)
        metrics[f"retrieval_accuracy@{k}"] = hit
        metrics[f"retrieval_chance_level@{k}"] = chance_k
        metrics[f"retrieval_above_chance@{k}"] = hit - chance_k
    return metrics


def ema(previous: float | None, current: float, decay: float) -> float:
    """``decay x previous + (1 - decay) x current``; the first value is ``current`` itself."""
    return current if previous is None else decay * previous + (1 - decay) * current


def collapse_metrics(cross: torch.Tensor, cross_sum: torch.Tensor, columns: torch.Tensor,
                     signatures: Sequence[Hashable] | None = None, *, std_eps: float = 1e-3,
                     ema_decay: float = 0.9, ema_std: tuple[float, float] | None = None) -> dict[str, float]:
    """Every diagnostic of one sample, keyed by RAGEN-2's suffixes (empty with fewer than 2 prompts).

    ``cross`` / ``cross_sum``: ``[M, N]`` per-token mean / summed log p(z_i | x_j);
    ``columns``: ``[M]`` long, row i's own prompt; ``signatures``: one per column (see
    :func:`retrieval_accuracy`).  Besides :func:`mi_estimate`, :func:`reasoning_entropy` and
    :func:`retrieval_accuracy`: ``mi_seq_estimate``; the spread of the marginal
    (``marginal_std``, population std) and the information in units of it, ``mi_zscore`` =
    mean((matched - marginal) / (marginal_std + std_eps)); and the same z-score over an
    exponential moving average of the spread across diagnostic steps (``marginal_std_ema``,
    ``mi_zscore_ema``), whose previous values ``ema_std`` = (per token, per sequence) the
    caller keeps (None at the first diagnostic).  Each of these also per sequence (``*_seq``).
    """
    n = cross.shape[1]
    if n < 2:
        return {}
    matched, marginal = log_prob_stats(cross, columns)
    matched_sum, marginal_sum = log_prob_stats(cross_sum, columns)
    metrics = mi_estimate(matched, marginal, n)
    metrics["mi_seq_estimate"] = float((matched_sum - marginal_sum).mean())
    metrics.update(retrieval_accuracy(cross, columns, signatures))
    metrics.update(reasoning_entropy(matched, marginal, matched_sum, marginal_sum))
    previous = ema_std or (None, None)
    for suffix, gap, spread, before in (("", matched - marginal, marginal, previous[0]),
                                         ("_seq", matched_sum - marginal_sum, marginal_sum, previous[1])):
        std = float(spread.std(unbiased=False))
        smoothed = ema(before, std, ema_decay)
        metrics[f"marginal_std{suffix}"] = std
        metrics[f"mi_zscore{suffix}"] = float((gap / (std + std_eps)).mean())
        metrics[f"marginal_std_ema{suffix}"] = smoothed
        metrics[f"mi_zscore_ema{suffix}"] = float((gap / (smoothed + std_eps)).mean())
    return metrics
