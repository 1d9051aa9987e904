"""Groups of trajectories (the rollouts of one seed) and their score statistics.

A group id is any hashable per row (a seed, a ``uid`` string); groups are numbered by
first appearance, so group 0 is the group of row 0.  That numbering is what makes the
filter's tie-break deterministic.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import NamedTuple

import torch


class GroupStats(NamedTuple):
    """Per-group statistics, each a ``[num_groups]`` tensor in first-appearance order."""

    count: torch.Tensor
    mean: torch.Tensor
    std: torch.Tensor  # unbiased; exactly 0 for a group of one or of equal scores
    max: torch.Tensor
    min: torch.Tensor


def group_index(group_ids: Sequence[Hashable] | torch.Tensor) -> tuple[torch.Tensor, int]:
    """Map each row's group id to a group number.

    Returns ``(index, num_groups)``: ``index`` is a ``[batch]`` long tensor and group ``g``
    is the ``g``-th distinct id in row order.
    """
    ids = group_ids.tolist() if hasattr(group_ids, "tolist") else list(group_ids)
    numbers: dict[Hashable, int] = {}
    index = [numbers.setdefault(group_id, len(numbers)) for group_id in ids]
    return torch.tensor(index, dtype=torch.long), len(numbers)


def group_stats(scores: torch.Tensor, index: torch.Tensor, num_groups: int) -> GroupStats:
    """Count, mean, unbiased std, max and min of the ``[batch]`` ``scores`` of each group.

    torch's unbiased std of a single value is NaN; here a group of one has std 0, because
    one rollout shows no spread, which is what the filter and GRPO ask about.  A group of
    equal scores has std exactly 0 (rounding in the mean would otherwise leave ~1e-17, and
    the filter's tie-break must see such groups as tied).
    """
    index = index.to(scores.device)
    zeros = torch.zeros(num_groups, dtype=scores.dtype, device=scores.device)
    count = zeros.index_add(0, index, torch.ones_like(scores))
    mean = zeros.index_add(0, index, scores) / count
    squares = zeros.index_add(0, index, (scores - mean[index]) ** 2)
    maximum = torch.full_like(zeros, -torch.inf).scatter_reduce(0, index, scores, "amax")
    minimum = torch.full_like(zeros, torch.inf).scatter_reduce(0, index, scores, "amin")
    spread = (count > 1) & (maximum > minimum)
    std = torch.where(spread, squares / (count - 1).clamp(min=1), zeros).sqrt()
    return GroupStats(count=count, mean=mean, std=std, max=maximum, min=minimum)


def check_scores(scores: torch.Tensor, group_ids: Sequence[Hashable] | torch.Tensor, name: str = "scores") -> None:
    """Raise ``ValueError`` unless ``scores`` is a finite ``[batch]`` tensor with one group id per row."""
    if scores.dim() != 1:
        raise ValueError(f"{name} must be a 1-D tensor of per-trajectory scores, got shape {tuple(scores.shape)}")
    if len(group_ids) != scores.shape[0]:
        raise ValueError(f"group_ids has {len(group_ids)} entries but {name} has {scores.shape[0]} rows")
    if not bool(torch.isfinite(scores).all()):
        rows = torch.nonzero(~torch.isfinite(scores)).flatten().tolist()
        raise ValueError(f"{name} must be finite; rows {rows} are not")
