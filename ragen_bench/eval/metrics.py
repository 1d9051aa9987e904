"""Evaluation metrics: pure functions from per-episode numbers to summary numbers.

Nothing here touches files, envs or agents.  The harness reduces every finished
episode to a small *row* (:func:`episode_row`) and :func:`summarize` turns rows into
one summary per ``(env_id, split)``.  All sums use :func:`math.fsum`, which is
correctly rounded and therefore independent of row order: a run that was resumed, or
assembled from shards, gets a summary identical to an uninterrupted one.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ragen_bench.chat.trajectory import scored_progress

# Two-sided 95% normal quantile.
Z_95 = 1.959963984540054

Row = dict[str, Any]


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion.

    Preferred over the normal ("Wald") interval because it stays inside [0, 1] and
    keeps sensible width when the rate is 0 or 1, which is common for small panels.
    Returns ``(0.0, 1.0)`` when ``n == 0`` (nothing is known).
    """
    if not 0 <= successes <= n:
        raise ValueError(f"need 0 <= successes <= n, got {successes} of {n}")
    return wilson_interval_of_mean(successes / n if n else 0.0, n, z)


def wilson_interval_of_mean(p: float, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson's interval around the mean ``p`` of ``n`` values in [0, 1] (``(0.0, 1.0)`` when ``n == 0``).

    For 0/1 values it is :func:`wilson_interval`.  For values anywhere in [0, 1] (a world's
    progress) it uses the largest variance such values can have, ``p (1 - p)``, so it is
    never narrower than the data allow and stays inside [0, 1].
    """
    if not (0.0 <= p <= 1.0 and n >= 0):
        raise ValueError(f"need a mean in [0, 1] of n >= 0 values, got {p!r} of {n}")
    if n == 0:
        return (0.0, 1.0)
    z2 = z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k from ``n`` samples with ``c`` successes (Chen et al., 2021).

    ``1 - C(n-c, k) / C(n, k)``: the chance that ``k`` samples drawn without
    replacement from the ``n`` contain at least one success.  Evaluated as a product
    so large ``n`` neither overflows nor loses precision.
    """
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")
    if n - c < k:
        return 1.0
    all_fail = 1.0
    for i in range(n - c + 1, n + 1):
        all_fail *= 1.0 - k / i
    return 1.0 - all_fail


def pass_k_values(samples: int) -> list[int]:
    """The ``k`` reported for ``samples`` samples per instance: 1, 2, 4, ... up to it."""
    ks = []
    k = 1
    while k <= samples:
        ks.append(k)
        k *= 2
    return ks


def _ratio(numerator: float, denominator: float) -> float | None:
    return numerator / denominator if denominator else None


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None


def episode_row(record: Mapping[str, Any]) -> Row:
    """The numbers of one episode that the summary needs, from a trajectory dict.

    Rows are small so a harness can keep every row of a large panel in memory while
    the full transcripts live only on disk.  Fields are checked, not coerced: an
    edited or corrupted record (``"success": "no"``, a NaN reward, a negative count)
    raises ``ValueError`` naming the field instead of changing the summary quietly.
    """
    turns = record["turns"]
    if not isinstance(turns, list) or not all(isinstance(turn, dict) for turn in turns):
        raise ValueError("turns must be a list of turn objects")
    token_counts = [
        _count(turn, key)
        for turn in turns
        for key in ("prompt_tokens", "completion_tokens")
        if turn.get(key) is not None
    ]
    success = record["success"]
    if not isinstance(success, bool):
        raise ValueError(f"success must be true or false, got {success!r}")
    progress = record.get("progress")
    if progress is not None and not (type(progress) in (int, float) and 0 <= progress <= 1):
        raise ValueError(f"progress must be a number in [0, 1], got {progress!r}")
    return {
        "env_id": record["env_id"],
        "split": record["split"],
        "seed": _count(record, "seed"),
        "sample": _count(record, "sample"),
        "success": success,
        "progress": scored_progress(success, progress),
        "total_reward": _finite(record, "total_reward"),
        "num_turns": _count(record, "num_turns"),
        "num_actions": _count(record, "num_actions"),
        "num_proposed_actions": sum(len(turn["parsed_actions"]) for turn in turns),
        "num_valid_actions": _count(record, "num_valid_actions"),
        "num_effective_actions": _count(record, "num_effective_actions"),
        "num_penalized_turns": sum(1 for turn in turns if _finite(turn, "format_penalty") != 0),
        # Replies the agent cut at its token limit; .get: records of agents that
        # do not report why a reply ended carry no such field.
        "num_truncated_replies": sum(1 for turn in turns if turn.get("finish_reason") == "length"),
        "num_null_content_replies": sum(1 for turn in turns if _null_content(turn)),
        "optimal_length": None if record.get("optimal_length") is None else _count(record, "optimal_length"),
        "tokens": sum(token_counts) if token_counts else None,
    }


# How the openai agent marked a reply with null content before ``null_content`` existed
# (in ``finish_reason``, with an empty reply); such records still count.
_LEGACY_NULL_CONTENT_REASONS = ("null_content", "refusal", "tool_calls")


def _null_content(turn: Mapping[str, Any]) -> bool:
    """Whether the turn's reply had no content (``null_content``; absent in ordinary turns)."""
    flag = turn.get("null_content", False)
    if type(flag) is not bool:
        raise ValueError(f"null_content must be true or false, got {flag!r}")
    # A tools-mode turn (it records its tool_calls) answered by its calls, whatever its finish_reason.
    legacy = "tool_calls" not in turn and turn.get("finish_reason") in _LEGACY_NULL_CONTENT_REASONS
    return flag or (legacy and turn.get("raw_response") == "")


def _count(record: Mapping[str, Any], key: str) -> int:
    value = record[key]
    if type(value) is not int or value < 0:
        raise ValueError(f"{key} must be a non-negative integer, got {value!r}")
    return value


def _finite(record: Mapping[str, Any], key: str) -> float:
    value = record[key]
    if type(value) not in (int, float) or not math.isfinite(value):
        raise ValueError(f"{key} must be a finite number, got {value!r}")
    return float(value)


def success_stats(rows: Sequence[Row]) -> dict[str, Any]:
    """Success rate with its 95% Wilson interval."""
    successes = sum(row["success"] for row in rows)
    low, high = wilson_interval(successes, len(rows))
    return {
        "success_rate": _ratio(successes, len(rows)),
        "success_ci95": [low, high],
    }


def progress_stats(rows: Sequence[Row]) -> dict[str, Any]:
    """Mean progress (success where the world has no score of its own) with its 95% interval."""
    mean = _mean([row["progress"] for row in rows])
    low, high = wilson_interval_of_mean(0.0 if mean is None else min(1.0, mean), len(rows))
    return {"progress": mean, "progress_ci95": [low, high]}


def pass_at_k_stats(rows: Sequence[Row]) -> dict[str, float]:
    """Mean unbiased pass@k over instances (seeds), for k = 1, 2, 4, ... samples.

    ``k`` goes up to the smallest number of samples any seed has, so an incomplete
    run never reports a pass@k some seeds cannot support.
    """
    by_seed: dict[int, list[bool]] = defaultdict(list)
    for row in rows:
        by_seed[row["seed"]].append(row["success"])
    if not by_seed:
        return {}
    min_samples = min(len(outcomes) for outcomes in by_seed.values())
    return {
        f"pass@{k}": math.fsum(
            pass_at_k(len(outcomes), sum(outcomes), k) for outcomes in by_seed.values()
        )
        / len(by_seed)
        for k in pass_k_values(min_samples)
    }


def efficiency(rows: Sequence[Row]) -> float | None:
    """Mean of optimal length / actions taken, over solved episodes with a known optimum.

    1.0 means every solved episode was solved in the fewest possible actions.
    """
    ratios = [
        row["optimal_length"] / row["num_actions"]
        for row in rows
        if row["success"] and row["optimal_length"] is not None and row["num_actions"] > 0
    ]
    return _mean(ratios)


def group_summary(rows: Sequence[Row]) -> dict[str, Any]:
    """Every metric for the episodes of one ``(env_id, split)``."""
    tokens = [row["tokens"] for row in rows if row["tokens"] is not None]
    actions = sum(row["num_actions"] for row in rows)
    return {
        "episodes": len(rows),
        "instances": len({row["seed"] for row in rows}),
        **success_stats(rows),
        **progress_stats(rows),
        **pass_at_k_stats(rows),
        "mean_return": _mean([row["total_reward"] for row in rows]),
        "mean_actions": _mean([row["num_actions"] for row in rows]),
        "mean_turns": _mean([row["num_turns"] for row in rows]),
        "efficiency": efficiency(rows),
        # Of the actions the agent proposed, how many named a legal action.
        "valid_action_rate": _ratio(
            sum(row["num_valid_actions"] for row in rows),
            sum(row["num_proposed_actions"] for row in rows),
        ),
        # Of the actions executed, how many changed the state.
        "effective_action_rate": _ratio(
            sum(row["num_effective_actions"] for row in rows), actions
        ),
        "format_penalty_rate": _ratio(
            sum(row["num_penalized_turns"] for row in rows),
            sum(row["num_turns"] for row in rows),
        ),
        # Replies cut at the agent's token limit (finish_reason "length"), of all
        # turns: a high rate means max_new_tokens, not the model, decided the outcome.
        "truncated_replies": sum(row["num_truncated_replies"] for row in rows),
        "truncated_reply_rate": _ratio(
            sum(row["num_truncated_replies"] for row in rows),
            sum(row["num_turns"] for row in rows),
        ),
        # Replies without content (a server's null content: refusal, tool call, content
        # filter), of all turns; each is also a malformed turn (format_penalty_rate).
        "null_content_replies": sum(row["num_null_content_replies"] for row in rows),
        "null_content_reply_rate": _ratio(
            sum(row["num_null_content_replies"] for row in rows),
            sum(row["num_turns"] for row in rows),
        ),
        "tokens_per_episode": _mean(tokens),
    }


def summarize(rows: Iterable[Row]) -> list[dict[str, Any]]:
    """One summary per ``(env_id, split)``, sorted by env id then split."""
    groups: dict[tuple[str, str], list[Row]] = defaultdict(list)
    for row in rows:
        groups[(row["env_id"], row["split"])].append(row)
    return [
        {"env_id": env_id, "split": split, **group_summary(groups[(env_id, split)])}
        for env_id, split in sorted(groups)
    ]
