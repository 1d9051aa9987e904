"""How the update walks a batch: mini-batches of whole groups, micro-batches weighted into them, their metrics averaged.

Gradients are accumulated over micro-batches, each weighted by its share of its mini-batch's loss
aggregate (:func:`micro_weight`), so the sum equals the mini-batch's aggregate exactly.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from ragen_bench.starpo.algorithms import LOSS_AGGREGATIONS
from ragen_bench.train.models import trainable


def minibatch_order(group_ids: Sequence[int], seed: int) -> torch.Tensor:
    """Row indices for the mini-batches: groups in a random order, each group's rows together.

    Keeping a group contiguous lets a micro-batch of whole groups encode their shared first
    prompt once (:func:`ragen_bench.train.models.last_hidden`).
    """
    rows_of: dict[int, list[int]] = {}
    for row, group in enumerate(group_ids):
        rows_of.setdefault(group, []).append(row)
    groups = list(rows_of.values())
    shuffled = torch.randperm(len(groups), generator=torch.Generator().manual_seed(seed)).tolist()
    return torch.tensor([row for g in shuffled for row in groups[g]], dtype=torch.long)


def micro_weight(agg: str, micro_mask: torch.Tensor, mini_mask: torch.Tensor) -> float:
    """The share of a micro-batch in its mini-batch's aggregate, so accumulated gradients equal the whole's.

    Sequence means weigh rows (with a response token) equally; the token mean weighs tokens.
    """
    if LOSS_AGGREGATIONS[agg].weighs_tokens:
        return float(micro_mask.sum()) / max(1.0, float(mini_mask.sum()))
    return float(micro_mask.any(dim=1).sum()) / max(1.0, float(mini_mask.any(dim=1).sum()))


def clip_grad(module: Any, max_norm: float) -> float:
    return float(torch.nn.utils.clip_grad_norm_(trainable(module), max_norm))


class Averages:
    """Weighted means of metrics over micro-batches (each weighted by its share of its mini-batch)."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.weights: dict[str, float] = {}

    def add(self, metrics: dict[str, float], weight: float) -> None:
        for name, value in metrics.items():
            self.sums[name] = self.sums.get(name, 0.0) + weight * value
            self.weights[name] = self.weights.get(name, 0.0) + weight

    def means(self) -> dict[str, float]:
        return {name: self.sums[name] / self.weights[name] for name in self.sums if self.weights[name] > 0}
