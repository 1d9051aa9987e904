"""The StarPO-S rollout filter: train only on the groups whose outcomes vary most.

A group is the set of rollouts of one seed.  A group where every rollout scored the same
carries no learning signal for a group-relative (or critic-whitened) update, so StarPO-S
ranks groups by the spread of their trajectory scores and keeps the top fraction.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from typing import Literal, NamedTuple

import torch

from ragen_bench.starpo.groups import GroupStats, check_scores, group_index, group_stats

FilterMode = Literal["std", "std_rev"]


class FilterResult(NamedTuple):
    """What the filter kept.

    ``rows``: ``[kept_rows]`` long tensor of kept row indices, ascending (batch order).
    ``groups``: ``[kept_groups]`` long tensor of kept group numbers, best-ranked first.
    ``stats``: per-group :class:`GroupStats` of all groups (first-appearance order), for logging.
    """

    rows: torch.Tensor
    groups: torch.Tensor
    stats: GroupStats


def groups_to_keep(num_groups: int, ratio: float) -> int:
    """``floor(ratio * num_groups)``, robust to float error (RAGEN's ``int()`` gives 28 for 0.29 × 100)."""
    if not (isinstance(ratio, (int, float)) and 0 < ratio <= 1):
        raise ValueError(f"rollout filter ratio must be in (0, 1], got {ratio!r}")
    kept = math.floor(ratio * num_groups + 1e-9)
    if kept == 0:
        raise ValueError(
            f"rollout filter ratio {ratio} keeps floor({ratio} x {num_groups} groups) = 0 groups; "
            "raise the ratio or the number of groups"
        )
    return kept


def filter_groups(
    scores: torch.Tensor,
    group_ids: Sequence[Hashable] | torch.Tensor,
    ratio: float = 0.25,
    mode: FilterMode = "std",
) -> FilterResult:
    """Keep the ``floor(ratio * num_groups)`` groups with the largest (``std``) or smallest (``std_rev``) spread.

    ``scores``: ``[batch]`` total score of each trajectory (format penalties included).
    ``group_ids``: one hashable per row; rows with the same id form a group (any sizes).
    The spread is the unbiased std of the group's scores; a group of one has spread 0.
    Ties are broken by first appearance (the earlier group wins), unlike RAGEN's ``topk``
    whose order among equal values is unspecified.  ``ratio == 1`` keeps every row.
    Whole groups are kept or dropped; there is no refill.
    """
    check_scores(scores, group_ids)
    if mode not in ("std", "std_rev"):
        raise ValueError(f"unknown rollout filter type {mode!r}; expected 'std' or 'std_rev'")
    index, num_groups = group_index(group_ids)
    index = index.to(scores.device)
    stats = group_stats(scores.double(), index, num_groups)
    kept = groups_to_keep(num_groups, ratio)
    # A stable sort keeps equal spreads in first-appearance order.
    order = torch.sort(stats.std, descending=(mode == "std"), stable=True).indices
    groups = order[:kept]
    is_kept = torch.zeros(num_groups, dtype=torch.bool, device=scores.device)
    is_kept[groups] = True
    rows = torch.nonzero(is_kept[index]).flatten()
    return FilterResult(rows=rows, groups=groups, stats=stats)


def filter_metrics(result: FilterResult) -> dict[str, float]:
    """Logging numbers: mean over groups of std / max / mean score, for all groups and for the kept ones."""
    metrics = {"groups": float(result.stats.count.numel()), "kept_groups": float(result.groups.numel())}
    for name in ("std", "max", "mean"):
        values = getattr(result.stats, name)
        metrics[f"in_group_{name}"] = float(values.mean())
        metrics[f"chosen_in_group_{name}"] = float(values[result.groups].mean())
    return metrics
