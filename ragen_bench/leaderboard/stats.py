"""Paired comparison of two entries measured on identical episodes.

Both entries are verified first, so the compared numbers are replayed ones.  Episodes
are paired by ``(env id, split, seed, sample)``:

* success: McNemar's exact test -- under "no difference" each discordant pair (one
  entry solved it, the other did not) is a fair coin, so the two-sided p-value is
  twice the binomial tail of the smaller discordant count;
* return: the mean paired difference A - B with a percentile bootstrap CI that
  resamples pairs (seeded, so a comparison prints the same numbers every time).
"""

from __future__ import annotations

import math
import sys
from collections import defaultdict
from collections.abc import Sequence
from fractions import Fraction
from pathlib import Path
from typing import Any

from ragen_bench import runfiles
from ragen_bench.leaderboard.errors import LeaderboardError

BOOTSTRAP_RESAMPLES = 10_000


def mcnemar_exact(only_a: int, only_b: int) -> float:
    """Two-sided exact McNemar p-value from the discordant counts (1.0 when there are none)."""
    if only_a < 0 or only_b < 0:
        raise ValueError(f"discordant counts must be >= 0, got {only_a}, {only_b}")
    n = only_a + only_b
    if n == 0:
        return 1.0
    # Exact rational arithmetic: large panels give binomial terms far below float range.
    tail = Fraction(sum(math.comb(n, i) for i in range(min(only_a, only_b) + 1)), 2**n)
    return float(min(Fraction(1), 2 * tail))


def paired_bootstrap_ci(differences: Sequence[float], *, seed: int, resamples: int = BOOTSTRAP_RESAMPLES,
                        level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of paired ``differences`` (resampling pairs)."""
    import numpy as np

    if not differences:
        raise ValueError("no paired episodes")
    values = np.asarray(differences, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    # In blocks, so memory stays bounded for large panels.
    block = max(1, 2_000_000 // len(values))
    for start in range(0, resamples, block):
        stop = min(resamples, start + block)
        picks = rng.integers(0, len(values), size=(stop - start, len(values)))
        means[start:stop] = values[picks].mean(axis=1)
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def paired_comparison(
    rows_a: Sequence[dict[str, Any]], rows_b: Sequence[dict[str, Any]], *, seed: int
) -> list[dict[str, Any]]:
    """One comparison per ``(env id, split)`` and one over all episodes (``env`` ``"all"``).

    ``rows_a`` and ``rows_b`` are :func:`ragen_bench.eval.metrics.episode_row` rows of
    the same episodes; a missing partner is refused.
    """
    from ragen_bench.eval.rundir import slot_of

    from ragen_bench.chat import episode_key

    by_slot = {slot_of(row): row for row in rows_b}
    unpaired = sorted({slot_of(row) for row in rows_a} ^ set(by_slot))
    if unpaired or len(by_slot) != len(rows_b):
        raise LeaderboardError("the entries do not hold the same episodes; only identical instances are compared",
                               episode=episode_key(*unpaired[0]) if unpaired else None)
    groups: dict[tuple[str, str], list[tuple[dict[str, Any], dict[str, Any]]]] = defaultdict(list)
    for row in rows_a:
        pair = (row, by_slot[slot_of(row)])
        groups[(row["env_id"], row["split"])].append(pair)
    everything = [pair for key in sorted(groups) for pair in groups[key]]
    named = [(f"{env_id}:{split}", groups[(env_id, split)]) for env_id, split in sorted(groups)]
    return [_compare_pairs(name, pairs, seed) for name, pairs in [*named, ("all", everything)]]


def shared_episodes(rows_a: Sequence[dict[str, Any]], rows_b: Sequence[dict[str, Any]]
                    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The rows of each on the ``(env id, split, seed, sample)`` slots both hold, for :func:`paired_comparison`."""
    from ragen_bench.eval.rundir import slot_of

    shared = {slot_of(row) for row in rows_a} & {slot_of(row) for row in rows_b}
    return [row for row in rows_a if slot_of(row) in shared], [row for row in rows_b if slot_of(row) in shared]


def _compare_pairs(name: str, pairs: Sequence[tuple[dict[str, Any], dict[str, Any]]], seed: int) -> dict[str, Any]:
    only_a = sum(a["success"] and not b["success"] for a, b in pairs)
    only_b = sum(b["success"] and not a["success"] for a, b in pairs)
    differences = [a["total_reward"] - b["total_reward"] for a, b in pairs]
    low, high = paired_bootstrap_ci(differences, seed=seed)
    return {
        "env": name,
        "pairs": len(pairs),
        "success_a": sum(a["success"] for a, _ in pairs) / len(pairs),
        "success_b": sum(b["success"] for _, b in pairs) / len(pairs),
        "only_a": only_a,
        "only_b": only_b,
        "mcnemar_p": mcnemar_exact(only_a, only_b),
        "return_diff": math.fsum(differences) / len(differences),
        "return_diff_ci95": [low, high],
    }


def compare_submissions(path_a: Path, path_b: Path, *, seed: int = 0) -> dict[str, Any]:
    """Verify two submissions and compare them pairwise; refused unless panels and chat settings match."""
    from ragen_bench.leaderboard.verify import verify

    if type(seed) is not int or seed < 0:
        raise LeaderboardError(f"the bootstrap seed must be a non-negative int, got {seed!r}", field="--seed")
    a, b = verify(path_a), verify(path_b)
    for field, problem in (("panels", "panels differ"), ("template_hash", "chat settings (template hash) differ")):
        difference = runfiles.difference(a.manifest[field], b.manifest[field], field, strict=True)
        if difference is not None:
            # Named by the first differing panel, so two long panel lists need no reading side by side.
            path, in_a, in_b = difference
            raise LeaderboardError(f"cannot pair the entries: their {problem} (A has {in_a!r}, B has {in_b!r})",
                                   field=path)
    return {"a": a.info.name, "b": b.info.name, "seed": seed, "groups": paired_comparison(a.rows, b.rows, seed=seed)}


def compare_runs(path_a: Path, path_b: Path, *, seed: int = 0) -> dict[str, Any]:
    """Pair two eval run directories' episodes (e.g. a checkpoint and its starting model); same panels and chat settings.

    Unlike :func:`compare_submissions` nothing is replayed: the runs are trusted as written.
    """
    from ragen_bench.eval import report

    if type(seed) is not int or seed < 0:
        raise LeaderboardError(f"the bootstrap seed must be a non-negative int, got {seed!r}", field="--seed")
    (manifest_a, summary_a), (manifest_b, summary_b) = report.load_summary(path_a), report.load_summary(path_b)
    for field, problem in (("panels", "panels differ"), ("template_hash", "chat settings (template hash) differ")):
        difference = runfiles.difference(summary_a[field], summary_b[field], field, strict=True)
        if difference is not None:
            where, in_a, in_b = difference
            raise LeaderboardError(f"cannot pair the runs: their {problem} (A has {in_a!r}, B has {in_b!r})",
                                   field=where)
    rows_a, rows_b = (_run_rows(path) for path in (path_a, path_b))
    return {"a": str(path_a), "b": str(path_b), "seed": seed, "groups": paired_comparison(rows_a, rows_b, seed=seed)}


def _run_rows(path: Path) -> list[dict[str, Any]]:
    import json

    from ragen_bench.eval import report
    from ragen_bench.eval.rundir import EPISODES

    log = path / EPISODES
    rows = {}
    for number, line in enumerate(log.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            row = report.row_of(log, number, json.loads(line))
            rows[(row["env_id"], row["split"], row["seed"], row["sample"])] = row
    return list(rows.values())


def p_text(p: float) -> str:
    """``p`` to three digits; an exact p-value below float range reads as a bound, never as 0."""
    return f"{p:.3g}" if p > 0 else f"< {sys.float_info.min:.3g}"


def format_comparison(result: dict[str, Any]) -> str:
    """The comparison as a text table (A minus B)."""
    from ragen_bench.eval.report import format_table

    rows = [
        {
            # A and B, not the names: an entry compared with a namesake would lose a column.
            "env": g["env"], "pairs": g["pairs"], "success A": g["success_a"], "success B": g["success_b"],
            "only A": g["only_a"], "only B": g["only_b"],
            "McNemar p": p_text(g["mcnemar_p"]), "return A-B": g["return_diff"],
            "ci95": "[{:.3f}, {:.3f}]".format(*g["return_diff_ci95"]),
        }
        for g in result["groups"]
    ]
    return (f"A = {result['a']}, B = {result['b']} (paired by env, split, seed, sample; "
            f"bootstrap seed {result['seed']}, {BOOTSTRAP_RESAMPLES} resamples)\n" + format_table(rows))
