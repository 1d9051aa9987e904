"""The rollout filter: train only on the groups whose rollouts carry a learning signal.

A group is the set of rollouts of one seed.  Each group gets one selection score (its
``metric``: the spread, mean or sum of its trajectory scores, its mean response length, or
the mean or spread of its trajectories' mean token entropy);
a ``strategy`` then keeps some groups by that score, whole groups only:

- ``top_k``: the ``floor(value x groups)`` best groups (at least one); ``top_k_abs``: the ``value``
  best (a whole number); :func:`groups_to_keep` is that count.
- ``top_p``, ``linear``: the best groups whose scores add up to ``value x total - eps``
  (none when the positive scores cannot reach it); ``softmax``: the smallest set of best
  groups whose softmax probability mass reaches ``value`` (nucleus sampling's rule).
  ``value >= 1`` keeps every candidate.
- ``min_p``: the groups within a factor ``value`` of the best score.

"Best" is the largest score (``filter_type="largest"``) or the smallest (``"smallest"``).
``include_zero=False`` drops the groups whose score is 0 before any strategy runs (with the
spread metric: the groups where every rollout scored the same, DAPO's dynamic sampling).
These are RAGEN-2's ``rollout_filter_*`` settings with its semantics (``docs/starpo.md`` maps
each); StarPO-S's fixed filter is the preset :func:`filter_groups` (``std``: top_k of the
largest spread; ``std_rev``: of the smallest).  The spec and the counts that need no scores
(:class:`FilterSpec`, :func:`groups_to_keep`, :func:`check_ratio`) live in
:mod:`ragen_bench.starpo.filter_spec`, which a config check can import without torch.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import NamedTuple

import torch

from ragen_bench.starpo.filter_spec import (ENTROPY_METRICS, METRICS, FilterMode, FilterSpec, check_ratio,
                                            groups_to_keep, preset)
from ragen_bench.starpo.groups import GroupStats, check_scores, group_index, group_stats

# A selection score this close to 0 counts as zero (RAGEN-2's include_zero test).
ZERO = 1e-10


class FilterResult(NamedTuple):
    """What the filter kept.

    ``rows``: ``[kept_rows]`` long tensor of kept row indices, ascending (batch order).
    ``groups``: ``[kept_groups]`` long tensor of kept group numbers, best-ranked first.
    ``stats``: per-group :class:`GroupStats` of all groups (first-appearance order), for logging.
    ``scores``: ``[num_groups]`` selection score of every group.
    """

    rows: torch.Tensor
    groups: torch.Tensor
    stats: GroupStats
    scores: torch.Tensor


def selection_scores(stats: GroupStats, metric: str, lengths: GroupStats | None = None,
                     entropies: GroupStats | None = None) -> torch.Tensor:
    """Each group's score under ``metric``: ``reward_variance`` is the unbiased std of its scores
    (RAGEN-2's name for it), ``reward`` their mean, ``reward_sum`` their sum, ``length`` the mean
    response length (``lengths``: the groups' stats of per-trajectory response token counts),
    ``entropy`` / ``entropy_variance`` the mean / unbiased std of the trajectories' mean token
    entropies (``entropies``: their groups' stats; RAGEN-2's ``EntropyRolloutFilter``)."""
    if metric == "reward_variance":
        return stats.std
    if metric == "reward":
        return stats.mean
    if metric == "reward_sum":
        return stats.mean * stats.count
    if metric == "length":
        if lengths is None:
            raise ValueError("metric 'length' needs the trajectories' response lengths")
        return lengths.mean
    if metric in ENTROPY_METRICS:
        if entropies is None:
            raise ValueError(f"metric {metric!r} needs the trajectories' mean token entropies")
        return entropies.mean if metric == "entropy" else entropies.std
    raise ValueError(f"metric must be one of {', '.join(METRICS)}, got {metric!r}")


def trajectory_entropies(token_entropies: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
    """``[batch]``: each trajectory's mean entropy over its response tokens (0 for a row without any).

    ``token_entropies`` ``[batch, tokens]``: the entropy of the policy's whole next-token
    distribution at each position (``softmax(logits / T)``, before top-p); RAGEN-2 averages
    veRL's ``entropys`` over the ``loss_mask`` the same way (``sum / max(count, 1)``).
    """
    mask = response_mask.to(token_entropies.dtype)
    return (token_entropies * mask).sum(dim=-1) / mask.sum(dim=-1).clamp(min=1)


def select_groups(scores: torch.Tensor, spec: FilterSpec) -> torch.Tensor:
    """The group numbers ``spec`` keeps for the ``[num_groups]`` selection ``scores``, best first.

    Equal scores rank by group number (a stable sort: the earlier group wins), where
    RAGEN-2's ``topk`` / ``sort`` leave the order of ties unspecified.
    """
    num_groups = scores.numel()
    candidates = torch.arange(num_groups, device=scores.device)
    if not spec.include_zero:
        candidates = candidates[scores.abs() > ZERO]
    # Ranked candidates: the best first, ties in group order.
    signed = scores[candidates] if spec.filter_type == "largest" else -scores[candidates]
    ranked = candidates[torch.sort(signed, descending=True, stable=True).indices]
    ranked_scores = scores[ranked]
    if ranked.numel() == 0:
        return ranked
    if spec.strategy in ("top_k", "top_k_abs"):
        # Fractions count all groups (not just the candidates).
        return ranked[: groups_to_keep(num_groups, spec)]
    if spec.strategy == "min_p":
        if spec.filter_type == "largest":
            keep = ranked_scores >= ranked_scores[0] * spec.value - ZERO
        else:
            # RAGEN-2 divides by value + 1e-10 in float32, where the 1e-10 vanishes: a score exactly
            # at best / value is kept (lengths are whole numbers, so such ties happen).
            keep = ranked_scores <= ranked_scores[0] / spec.value + ZERO
        return ranked[keep]
    if spec.value >= 1:  # top_p at 1: every candidate
        return ranked
    if spec.top_p_prob_mode == "softmax":
        # The best-first softmax masses are sorted too: keep up to the first whose running sum reaches value.
        mass = torch.cumsum(torch.softmax(signed.double(), dim=0).sort(descending=True).values, dim=0)
        return ranked[: min(int(torch.searchsorted(mass, spec.value)) + 1, ranked.numel())]
    # linear: add scores best-first until value x total - eps; a score <= 0 adds nothing and ends the run.
    threshold = spec.value * float(ranked_scores.sum()) - spec.selection_eps
    total, count = 0.0, 0
    for score in ranked_scores.tolist():
        if total >= threshold or score <= 0:
            break
        total += score
        count += 1
    return ranked[:count] if total >= threshold else ranked[:0]


def filter_rollouts(
    scores: torch.Tensor,
    group_ids: Sequence[Hashable] | torch.Tensor,
    spec: FilterSpec,
    lengths: torch.Tensor | None = None,
    entropies: torch.Tensor | None = None,
) -> FilterResult:
    """Keep the whole groups ``spec`` selects (see the module docstring).

    ``scores``: ``[batch]`` total score of each trajectory (format penalties included).
    ``group_ids``: one hashable per row; rows with the same id form a group (any sizes).
    ``lengths``: ``[batch]`` response tokens of each trajectory (metric ``length`` only).
    ``entropies``: ``[batch]`` mean token entropy of each trajectory (:func:`trajectory_entropies`;
    the entropy metrics only).
    """
    check_scores(scores, group_ids)
    index, num_groups = group_index(group_ids)
    index = index.to(scores.device)
    stats = group_stats(scores.double(), index, num_groups)
    per_row = {"length": ("lengths", lengths), "entropy": ("entropies", entropies),
               "entropy_variance": ("entropies", entropies)}
    measured = {}
    if spec.metric in per_row:
        name, values = per_row[spec.metric]
        if values is not None:
            check_scores(values.double(), group_ids, name)
            measured[name] = group_stats(values.double().to(scores.device), index, num_groups)
    group_scores = selection_scores(stats, spec.metric, **measured)
    groups = select_groups(group_scores, spec)
    return FilterResult(rows=_rows_of(groups, index, num_groups), groups=groups, stats=stats, scores=group_scores)


def best_groups(result: FilterResult, group_ids: Sequence[Hashable] | torch.Tensor, count: int) -> FilterResult:
    """``result`` cut to its ``count`` best-ranked groups (dynamic sampling's full batch; ``group_ids`` as filtered)."""
    index, num_groups = group_index(group_ids)
    groups = result.groups[:count]
    return result._replace(rows=_rows_of(groups, index.to(groups.device), num_groups), groups=groups)


def _rows_of(groups: torch.Tensor, index: torch.Tensor, num_groups: int) -> torch.Tensor:
    """The rows (ascending) of the group numbers ``groups``; ``index``: each row's group number."""
    is_kept = torch.zeros(num_groups, dtype=torch.bool, device=index.device)
    is_kept[groups] = True
    return torch.nonzero(is_kept[index]).flatten()


def filter_groups(
    scores: torch.Tensor,
    group_ids: Sequence[Hashable] | torch.Tensor,
    ratio: float = 0.25,
    mode: FilterMode = "std",
) -> FilterResult:
    """StarPO-S: keep the ``floor(ratio * num_groups)`` groups with the largest (``std``) or smallest (``std_rev``) spread.

    The spread is the unbiased std of the group's scores; a group of one has spread 0.
    Ties are broken by first appearance (the earlier group wins).  ``ratio == 1`` keeps
    every row.  A ratio that keeps no group is refused (:func:`check_ratio`).
    """
    check_scores(scores, group_ids)
    check_ratio(group_index(group_ids)[1], ratio)
    return filter_rollouts(scores, group_ids, preset(mode, ratio))


def loss_scale(kept_groups: int, groups: int, scaling: str) -> float:
    """RAGEN-2's ``filter_loss_scaling``: the factor on a step's advantages after a filter kept
    ``kept_groups`` of ``groups``, so a hard filter's smaller batch takes a smaller step:
    1 (``none``), the kept share (``linear``) or its square root (``sqrt``)."""
    if scaling == "none":
        return 1.0
    share = kept_groups / groups
    if scaling == "linear":
        return share
    if scaling == "sqrt":
        return math.sqrt(share)
    raise ValueError(f"filter_loss_scaling must be one of none, linear, sqrt, got {scaling!r}")


def filter_metrics(result: FilterResult) -> dict[str, float]:
    """Logging numbers: mean over groups of std / max / mean score, for all groups and for the kept ones.

    With no group kept (a ``top_p`` that cannot reach its threshold) the ``chosen_`` means are 0.
    """
    metrics = {"groups": float(result.stats.count.numel()), "kept_groups": float(result.groups.numel())}
    for name in ("std", "max", "mean"):
        values = getattr(result.stats, name)
        metrics[f"in_group_{name}"] = float(values.mean())
        metrics[f"chosen_in_group_{name}"] = float(values[result.groups].mean()) if result.groups.numel() else 0.0
    return metrics
