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
largest spread; ``std_rev``: of the smallest).
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal, NamedTuple

import torch

from ragen_bench.starpo.groups import GroupStats, check_scores, group_index, group_stats

FilterMode = Literal["std", "std_rev"]
STRATEGIES = ("top_p", "top_k", "top_k_abs", "min_p")
FILTER_TYPES = ("largest", "smallest")
METRICS = ("reward_variance", "reward", "reward_sum", "length", "entropy", "entropy_variance")
# The metrics that score a group by its trajectories' entropies (filter_rollouts' ``entropies``).
ENTROPY_METRICS = ("entropy", "entropy_variance")
TOP_P_PROB_MODES = ("linear", "softmax")
# A selection score this close to 0 counts as zero (RAGEN-2's include_zero test).
ZERO = 1e-10


@dataclass(frozen=True)
class FilterSpec:
    """One rollout filter (RAGEN-2's ``rollout_filter_*`` keys without the prefix; defaults are its: keep all)."""

    strategy: str = "top_p"
    value: float = 1.0
    filter_type: str = "largest"
    metric: str = "reward_variance"
    include_zero: bool = True
    top_p_prob_mode: str = "linear"
    selection_eps: float = 0.01

    def __post_init__(self) -> None:
        for name, choices in (("strategy", STRATEGIES), ("filter_type", FILTER_TYPES), ("metric", METRICS),
                              ("top_p_prob_mode", TOP_P_PROB_MODES)):
            if getattr(self, name) not in choices:
                raise ValueError(f"{name} must be one of {', '.join(choices)}, got {getattr(self, name)!r}")
        value = self.value
        if not (isinstance(value, (int, float)) and math.isfinite(value) and value > 0):
            raise ValueError(f"value must be a finite number > 0, got {value!r}")
        if self.strategy in ("top_k", "min_p") and value > 1:
            raise ValueError(f"value must be in (0, 1] for strategy {self.strategy}, got {value!r}")
        if self.strategy == "top_k_abs" and not (value >= 1 and value == int(value)):
            # A count: 2.5 groups would be cut to 2 without a word.
            raise ValueError(f"value must be a number of groups (a whole number >= 1) for strategy top_k_abs, "
                             f"got {value!r}")
        if not (math.isfinite(self.selection_eps) and self.selection_eps >= 0):
            raise ValueError(f"selection_eps must be >= 0, got {self.selection_eps!r}")

    @property
    def keeps_all(self) -> bool:
        """Whether every group survives whatever the scores (RAGEN-2's no-filter setting)."""
        return self.strategy == "top_p" and self.value >= 1 and self.include_zero


def preset(mode: FilterMode, ratio: float) -> FilterSpec:
    """StarPO-S's filter as a spec: the ``floor(ratio x groups)`` groups of largest (``std``) or smallest (``std_rev``) spread."""
    if mode not in ("std", "std_rev"):
        raise ValueError(f"unknown rollout filter type {mode!r}; expected 'std' or 'std_rev'")
    return FilterSpec(strategy="top_k", value=ratio, filter_type="largest" if mode == "std" else "smallest")


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


def groups_to_keep(num_groups: int, spec: FilterSpec) -> int:
    """The most groups ``spec`` keeps of ``num_groups``: the rule every count of kept groups follows
    (the selection itself, the train config, its ``--dry-run`` plan, the veRL recipe's batch size).

    ``top_k``: ``floor(value x num_groups)`` and at least one; ``top_k_abs``: ``value``, at most
    ``num_groups``; ``top_p`` and ``min_p`` depend on the scores, so up to every group.  Fewer are
    kept when fewer groups are candidates (``include_zero=False``).
    """
    if spec.strategy == "top_k":
        return max(1, _share_of(num_groups, spec.value))
    if spec.strategy == "top_k_abs":
        return min(num_groups, int(spec.value))
    return num_groups


def check_ratio(num_groups: int, ratio: float) -> None:
    """StarPO-S's rule: refuse a ``ratio`` of ``num_groups`` that keeps no group (``floor(ratio x groups) = 0``),
    where RAGEN's ``int()`` would train on nothing; its ``top_k`` preset would quietly keep one instead."""
    if not (isinstance(ratio, (int, float)) and 0 < ratio <= 1):
        raise ValueError(f"rollout filter ratio must be in (0, 1], got {ratio!r}")
    if _share_of(num_groups, ratio) == 0:
        raise ValueError(
            f"rollout filter ratio {ratio} keeps floor({ratio} x {num_groups} groups) = 0 groups; "
            "raise the ratio or the number of groups"
        )


def _share_of(num_groups: int, fraction: float) -> int:
    """``floor(fraction x num_groups)``, robust to float error (0.29 x 100 is 28.999..., where ``int()`` gives 28)."""
    return math.floor(fraction * num_groups + 1e-9)


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
