"""Where a submission comes from: its ``base_entry`` chain and its training log.

Both are the submitter's word beside the replayed run (:mod:`ragen_bench.leaderboard.verify`
replays the episodes): the chain must end, and the curves must be well-formed to be plotted.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ragen_bench.leaderboard import files
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.schema import SubmissionInfo, parse_submission

SUBMISSION = "submission.json"


@dataclass(frozen=True)
class TrainingLog:
    """A trained entry's recorded curves: ``metrics.jsonl`` rows and, when it was copied too, ``validation.jsonl``'s."""

    metrics: list[dict[str, Any]]
    validation: list[dict[str, Any]]



def check_base_entry(root: Path, info: SubmissionInfo) -> None:
    """``base_entry`` must name another entry beside ``root``, and following base entries from there must end.

    In a cycle (a trained from b, b from a) each entry would pose as the other's starting point: it
    is refused naming its entries, ``a -> b -> a`` (an entry naming itself is ``a -> a``).  Each step
    reads the next entry's ``submission.json`` as verify reads this one; a chain ends at an entry with
    no base entry or at a name with no folder (that entry's own verify refuses it).
    """
    if info.base_entry is None:
        return
    where = {"file": str(root / SUBMISSION), "field": "base_entry"}
    beside = Path(os.path.abspath(root)).parent

    def entry_file(name: str) -> Path | None:
        folder = beside / name
        return None if folder.is_symlink() or not (folder / SUBMISSION).is_file() else folder / SUBMISSION

    if entry_file(info.base_entry) is None:
        raise LeaderboardError(f"names no entry: there is no submission folder {info.base_entry!r} beside this one",
                               **where)
    chain, base = [info.name], info.base_entry
    while base is not None:
        if base in chain:
            cycle = [*chain[chain.index(base):], base]
            raise LeaderboardError(f"base_entry cycle: {' -> '.join(cycle)}", **where)
        chain.append(base)
        path = entry_file(base)
        base = None if path is None else parse_submission(
            files.read_json_file(path, name=SUBMISSION), name=str(path)).base_entry


def read_training_log(root: Path, info: SubmissionInfo) -> TrainingLog | None:
    """The ``training_metrics`` file (and a ``validation.jsonl`` beside it), checked line by line.

    Each line is a JSON object with an int ``step``; the values the leaderboard plots
    (``rollout/success``, a validation's ``split`` and ``success_rate``) must have their types.
    The curves are the trainer's word, like the recipe: replay cannot check them.
    """
    if info.training_metrics is None:
        return None
    path = files.inside(root, info.training_metrics, what="training_metrics", file=str(root / SUBMISSION))
    metrics = _log_rows(path, "metrics.jsonl", {"rollout/success": (int, float)})
    validation = path.parent / "validation.jsonl"
    rows = (_log_rows(validation, "validation.jsonl", {"split": (str,), "success_rate": (int, float)}, required=True)
            if os.path.lexists(validation) else [])
    return TrainingLog(metrics, rows)


def _log_rows(path: Path, limit_name: str, types: Mapping[str, tuple[type, ...]], *,
              required: bool = False) -> list[dict[str, Any]]:
    from ragen_bench.leaderboard.schema import MAX_TRAINING_STEP, label_problem

    rows = []
    for number, line in enumerate(files.read_bounded(path, files.LIMITS[limit_name]).splitlines(), start=1):
        if not line.strip():
            continue
        row = files.parse_json(line, name=str(path), line=number)
        where = {"file": str(path), "line": number}
        if not isinstance(row, dict):
            raise LeaderboardError("each line must be a JSON object", **where)
        step = row.get("step")
        # The x axis of learning_curves.png: past 2**53 a float no longer holds the step exactly.
        if type(step) is not int or not 0 <= step <= MAX_TRAINING_STEP:
            raise LeaderboardError(f"needs an int step from 0 to {MAX_TRAINING_STEP}", field="step", found=step,
                                   **where)
        for key, allowed in types.items():
            if key not in row and not required:
                continue
            if type(row.get(key)) not in allowed:
                raise LeaderboardError(f"must be {' or '.join(t.__name__ for t in allowed)}", field=key,
                                       found=row.get(key), **where)
        # A validation's split names its curve in the plot's legend (required there, so present).
        if "split" in types and (problem := label_problem(row["split"])) is not None:
            raise LeaderboardError(problem, field="split", found=row["split"], **where)
        rows.append(row)
    return rows
