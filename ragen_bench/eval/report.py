"""Summaries and tables: ``summary.json`` written and read back, rows for ``compare``.

``summary.json`` holds the metrics per env and split with the panel checksums and the
template hash, and nothing about timing or sharding, so any way of producing the same
episodes gives the same file.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_bench import runfiles
from ragen_bench.eval import metrics, rundir
from ragen_bench.eval.provenance import require_manifest
from ragen_bench.eval.rundir import RunDirError

# Summary keys shown in tables, with their column titles.
TABLE_COLUMNS = {
    "episodes": "episodes",
    "success_rate": "success",
    "mean_return": "return",
    "mean_actions": "actions",
    "mean_turns": "turns",
    "efficiency": "efficiency",
    "valid_action_rate": "valid",
    "effective_action_rate": "effective",
    "format_penalty_rate": "fmt_penalty",
    "truncated_reply_rate": "truncated",
    "null_content_replies": "null_replies",
    "tokens_per_episode": "tokens/ep",
}
_GROUP_FIELDS = {"env_id": str, "split": str, "episodes": int, "success_ci95": list}


def row_of(path: Path, number: int, record: Any) -> metrics.Row:
    """The summary row of the record on line ``number`` of the log ``path`` (a bad record is named)."""
    try:
        return metrics.episode_row(record)
    except (KeyError, TypeError, ValueError) as error:
        raise RunDirError(f"{path}: line {number} is not an episode record ({error!r})") from None


def write_summary(out: Path, rows: Sequence[metrics.Row], fingerprint_: Mapping[str, Any]) -> dict[str, Any]:
    """Write ``summary.json`` for the episode ``rows`` of the run ``fingerprint_`` describes."""
    summary = {
        "panels": fingerprint_["panels"],
        "template_hash": fingerprint_["template_hash"],
        "data_files": {key: entry["sha256"] for key, entry in fingerprint_["data_files"].items()},
        "groups": metrics.summarize(rows),
    }
    runfiles.write_json_atomic(out / rundir.SUMMARY, summary)
    return summary


def _check_summary(path: Path, summary: Any) -> None:
    """Refuse a ``summary.json`` whose shape the tables cannot read, naming the file."""
    if not isinstance(summary, dict) or not isinstance(summary.get("groups"), list):
        raise RunDirError(f"{path}: not a run summary (an object with a 'groups' list is expected)")
    if not isinstance(summary.get("panels"), dict) or not isinstance(summary.get("template_hash"), str):
        raise RunDirError(f"{path}: 'panels' or 'template_hash' is missing or malformed")
    for number, group in enumerate(summary["groups"]):
        bad = [f for f, kind in _GROUP_FIELDS.items() if not isinstance(group, dict) or not isinstance(group.get(f), kind)]
        if bad or len(group["success_ci95"]) != 2:
            raise RunDirError(f"{path}: groups[{number}] has a missing or malformed {(bad or ['success_ci95'])[0]!r}")


def load_summary(run_dir: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(manifest, summary)`` of a finished run directory."""
    run_dir = Path(run_dir)
    path = run_dir / rundir.SUMMARY
    if not path.exists():
        raise RunDirError(f"{run_dir} has no {rundir.SUMMARY}; run or resume it first")
    manifest = require_manifest(run_dir)
    summary = rundir.read_json(path)
    _check_summary(path, summary)
    return manifest, summary


def agent_label(manifest: Mapping[str, Any]) -> str:
    """``name`` or ``name(model)``, for tables."""
    agent = manifest["config"]["agent"]
    return f"{agent['name']}({agent['model']})" if agent.get("model") else str(agent["name"])


def summary_rows(label: str, summary: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Table rows (one per env and split) of one run's summary."""
    rows = []
    for group in summary["groups"]:
        row: dict[str, Any] = {"run": label, "env": group["env_id"], "split": group["split"]}
        for key, title in TABLE_COLUMNS.items():
            row[title] = group.get(key)
            if key == "success_rate":
                low, high = group["success_ci95"]
                row["ci95"] = f"[{low:.3f}, {high:.3f}]"
                row.update({k: v for k, v in group.items() if k.startswith("pass@")})
        rows.append(row)
    return rows


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    # A lone surrogate (say, in a model name) cannot be printed as UTF-8: show it escaped.
    return str(value).encode("utf-8", "backslashreplace").decode("utf-8")


def format_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """Rows as an aligned text table: numbers right-aligned to three decimals, missing values as "-".

    Columns are the union of the rows' keys, in first-seen order.
    """
    if not rows:
        return "(no episodes)"
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = [[_cell(row.get(column)) for column in columns] for row in rows]
    widths = [max(len(column), *(len(line[i]) for line in cells)) for i, column in enumerate(columns)]
    numeric = [all(isinstance(row.get(c), (int, float)) or row.get(c) is None for row in rows) for c in columns]

    def line(values: Sequence[str]) -> str:
        return "  ".join(
            value.rjust(width) if right else value.ljust(width)
            for value, width, right in zip(values, widths, numeric)
        ).rstrip()

    return "\n".join([line(columns), *(line(values) for values in cells)])


def comparability_notes(runs: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Warnings for run summaries (by name) whose numbers are not measured alike.

    Numbers compare exactly when the panel checksums, the chat template hash and the
    env data files match.
    """
    notes = []
    hashes = {summary["template_hash"] for summary in runs.values()}
    if len(hashes) > 1:
        notes.append(f"runs used {len(hashes)} different chat templates/settings (template_hash)")
    data = {tuple(sorted(summary.get("data_files", {}).items())) for summary in runs.values()}
    if len(data) > 1:
        notes.append("runs used different env data files (env_kwargs)")
    checksums: dict[str, set[str]] = {}
    for summary in runs.values():
        for panel, checksum in summary["panels"].items():
            checksums.setdefault(panel, set()).add(checksum)
    notes += [f"{panel}: runs used different panels" for panel, seen in sorted(checksums.items()) if len(seen) > 1]
    return notes
