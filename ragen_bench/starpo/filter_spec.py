"""The rollout filter's settings and counts, without torch: :class:`FilterSpec` and its name tables,
:func:`groups_to_keep`, :func:`check_ratio`.

The train config and its ``--dry-run`` plan check a filter and count its kept groups before
anything loads torch; :mod:`ragen_bench.starpo.filter` selects with the same spec on tensors
(its docstring gives each strategy's semantics).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

FilterMode = Literal["std", "std_rev"]
STRATEGIES = ("top_p", "top_k", "top_k_abs", "min_p")
FILTER_TYPES = ("largest", "smallest")
METRICS = ("reward_variance", "reward", "reward_sum", "length", "entropy", "entropy_variance")
# The metrics that score a group by its trajectories' entropies (filter_rollouts' ``entropies``).
ENTROPY_METRICS = ("entropy", "entropy_variance")
TOP_P_PROB_MODES = ("linear", "softmax")


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
