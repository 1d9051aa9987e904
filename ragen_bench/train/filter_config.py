"""The train config's ``filter`` section: its keys, which of them a filter reads, and their checks.

``filter.mode`` std / std_rev is StarPO-S's filter with ``ratio``; ``rollout`` is RAGEN-2's, from the
keys RAGEN-2 calls ``rollout_filter_*``.  The rules themselves (names, defaults, ranges, the kept-group
count) are the torch-free half of the filter, :mod:`ragen_bench.starpo.filter_spec`, so that checking a
config and ``--dry-run`` load no torch.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragen_bench.starpo.filter_spec import FilterSpec, check_ratio, preset
from ragen_bench.values import documented

FILTER_MODES = ("std", "std_rev", "rollout")
# FilterSpec's fields under their config keys (RAGEN-2's rollout_filter_* names without the prefix).
FILTER_SPEC_KEYS = {"strategy": "strategy", "value": "value", "type": "filter_type", "metric": "metric",
                    "include_zero": "include_zero", "top_p_prob_mode": "top_p_prob_mode",
                    "selection_eps": "selection_eps"}
# The rollout filter's defaults are FilterSpec's (RAGEN-2's: keep everything), never restated here.
_SPEC_DEFAULTS = FilterSpec()


@dataclass(frozen=True)
class FilterConfig:
    """``mode`` std / std_rev: StarPO-S's filter with ``ratio``; ``rollout``: RAGEN-2's filter from the keys after it."""

    ratio: float = documented(0.25, help="std / std_rev: the fraction of groups kept, in (0, 1] (1: keep all)")
    mode: str = documented("std", help="std: StarPO-S, the groups of highest score spread | std_rev: the lowest | "
                           "rollout: RAGEN-2's filter, the keys below")
    strategy: str = documented(_SPEC_DEFAULTS.strategy, help="rollout: top_p | top_k | top_k_abs | min_p "
                               "(RAGEN-2's rollout_filter_strategy)")
    value: float = documented(_SPEC_DEFAULTS.value, help="rollout: top_p's p, top_k's fraction, top_k_abs's count, "
                              "min_p's factor (top_p 1: keep all)")
    type: str = documented(_SPEC_DEFAULTS.filter_type, help="rollout: largest (keep the highest metric) | smallest")
    metric: str = documented(_SPEC_DEFAULTS.metric, help="rollout: reward_variance (std of scores) | reward (mean) | "
                             "reward_sum | length (mean tokens) | entropy (mean token entropy) | entropy_variance "
                             "(its std)")
    include_zero: bool = documented(_SPEC_DEFAULTS.include_zero, help="rollout: false drops the groups whose metric "
                                    "is 0 first (DAPO's dynamic sampling)")
    top_p_prob_mode: str = documented(_SPEC_DEFAULTS.top_p_prob_mode, help="rollout top_p: linear (scores adding up "
                                      "to p x total - selection_eps) | softmax (nucleus of the scores' softmax)")
    selection_eps: float = documented(_SPEC_DEFAULTS.selection_eps, help="rollout top_p linear: the eps above (>= 0)")
    empty_stop_steps: int = documented(5, help="stop the run after this many steps in a row kept no group (such a "
                                       "step is skipped); 0: never")
    refill_rounds: int = documented(0, help="dynamic sampling: up to this many more rollouts of fresh seeds until "
                                    "rollout.groups groups are kept; 0: none")

    @property
    def rollout_spec(self) -> FilterSpec:
        """The :class:`FilterSpec` of the rollout keys, ``mode=rollout``'s filter (ValueError if a value is bad)."""
        return FilterSpec(**{field: getattr(self, key) for key, field in FILTER_SPEC_KEYS.items()})

    @property
    def spec(self) -> FilterSpec:
        """The :class:`FilterSpec` this config filters with (ValueError if a value is bad)."""
        if self.mode in ("std", "std_rev"):
            return preset(self.mode, self.ratio)  # type: ignore[arg-type]
        return self.rollout_spec


def unread_filter_keys(f: FilterConfig) -> dict[str, str]:
    """The filter keys ``f``'s filter does not read, each with the settings under which it would.

    ``ratio`` is read by StarPO-S's modes only, the rollout keys by ``mode=rollout`` only, and two of
    them by one strategy only (``select_groups``): ``top_p_prob_mode`` by ``top_p``, ``selection_eps``
    by ``top_p``'s linear rule.  ``empty_stop_steps`` and ``refill_rounds`` act in every mode.
    """
    rollout = f.mode == "rollout"
    scopes = {
        "ratio": ("filter.mode=std or std_rev", not rollout),
        **{key: ("filter.mode=rollout", rollout) for key in FILTER_SPEC_KEYS},
        "top_p_prob_mode": ("filter.mode=rollout with filter.strategy=top_p", rollout and f.strategy == "top_p"),
        "selection_eps": ("filter.mode=rollout with filter.strategy=top_p and filter.top_p_prob_mode=linear",
                          rollout and f.strategy == "top_p" and f.top_p_prob_mode == "linear"),
    }
    return {key: where for key, (where, read) in scopes.items() if not read}


def filter_in_words(f: FilterConfig) -> str:
    """The settings that decide which filter keys are read (:func:`unread_filter_keys`), as overrides."""
    words = [f"filter.mode={f.mode}"]
    if f.mode == "rollout":
        words.append(f"filter.strategy={f.strategy}")
        if f.strategy == "top_p":
            words.append(f"filter.top_p_prob_mode={f.top_p_prob_mode}")
    return " ".join(words)


def check_filter(f: FilterConfig, groups: int) -> None:
    """Every filter key's value, in every mode (``groups``: ``rollout.groups``): a bad value is refused even where
    the mode does not read it.  A ValueError whose message starts with the key (``filter.ratio: ...``)."""
    _require(f.mode in FILTER_MODES, "filter.mode", f"must be one of {', '.join(FILTER_MODES)}", f.mode)
    _require(0 < f.ratio <= 1, "filter.ratio", "must be in (0, 1]", f.ratio)
    try:
        f.rollout_spec  # noqa: B018 (FilterSpec checks every value, naming its field)
    except ValueError as problem:
        field_name, _, rest = str(problem).partition(" ")
        key = next((k for k, v in FILTER_SPEC_KEYS.items() if v == field_name), field_name)
        raise ValueError(f"filter.{key}: {rest}") from None
    if f.mode != "rollout":
        try:
            check_ratio(groups, f.ratio)
        except ValueError as problem:
            raise ValueError(f"filter.ratio: {problem}") from None
    _require(f.empty_stop_steps >= 0, "filter.empty_stop_steps", "must be >= 0 (0: never stop)", f.empty_stop_steps)
    _require(f.refill_rounds >= 0, "filter.refill_rounds", "must be >= 0 (0: no refill)", f.refill_rounds)


def _require(condition: bool, key: str, message: str, value: Any) -> None:
    if not condition:
        raise ValueError(f"{key}: {message}, got {value!r}")
