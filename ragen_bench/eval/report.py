"""Summaries and tables: ``summary.json`` written and read back, rows for ``compare``.

``summary.json`` holds the metrics per env and split with the panel checksums and the
template hash, and nothing about timing or sharding, so any way of producing the same
episodes gives the same file.
"""

from __future__ import annotations

import itertools
import shutil
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_bench import runfiles
from ragen_bench.eval import metrics, rundir
from ragen_bench.eval.budget import budget_chats
from ragen_bench.eval.config import ConfigError, chat_config, eval_targets, game_config, resolve_budget
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
# What the tables' budget column means (printed under them).
BUDGET_LEGEND = ("budget = turns/actions per reply/actions per episode the chat allowed (hN: the last N turns shown); "
                 "`ragen-bench envs show ID` lists each id's")


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


def budget_label(chat: Any) -> str:
    """A :class:`~ragen_bench.chat.ChatConfig`'s budget in a table cell: ``5/5/10``, ``800/1/700 h5``,
    ``5/5/10 tools`` when actions are tool calls and ``5/5/10 vision`` when each request carried the state's
    picture (so ``compare`` never shows such a run as a text one, and the leaderboard ranks it apart)."""
    window = "" if chat.history_window is None else f" h{chat.history_window}"
    tools = " tools" if chat.tools else ""
    vision = " vision" if chat.images else ""
    return f"{chat.max_turns}/{chat.max_actions_per_turn}/{chat.max_actions_per_episode}{window}{tools}{vision}"


def run_budgets(manifest: Mapping[str, Any]) -> dict[str, str]:
    """The budget (:func:`budget_label`) each single-agent id of a run was played under, from its manifest."""
    config = manifest["config"]
    try:
        if game_config(config) is not None:
            return {}
        chat, targets = chat_config(config["chat"]), eval_targets(config)
        chats = budget_chats(chat, resolve_budget(config.get("budget"), targets, config["chat"]))
    except (ConfigError, KeyError, TypeError) as error:
        raise RunDirError(f"the manifest's config is malformed ({error})") from None
    return {env_id: budget_label(chats.get(env_id, chat)) for env_id, _ in targets}


def run_rows(manifest: Mapping[str, Any], summary: Mapping[str, Any], label: str | None = None) -> list[dict[str, Any]]:
    """Table rows of one run: :func:`summary_rows` named ``label`` (else :func:`agent_label`) with its budgets."""
    return summary_rows(label or agent_label(manifest), summary, run_budgets(manifest))


def summary_rows(
    label: str, summary: Mapping[str, Any], budgets: Mapping[str, str] | None = None
) -> list[dict[str, Any]]:
    """Table rows (one per env and split) of one run's summary; ``budgets`` (env id -> label) adds a budget column."""
    rows = []
    for group in summary["groups"]:
        row: dict[str, Any] = {"run": label, "env": group["env_id"], "split": group["split"]}
        if budgets:
            row["budget"] = budgets.get(group["env_id"])
        for key, title in TABLE_COLUMNS.items():
            row[title] = group.get(key)
            if key == "success_rate":
                low, high = group["success_ci95"]
                row["ci95"] = f"[{low:.3f}, {high:.3f}]"
                # A world's own score (metrics.progress_stats), where it says more than success.
                if group.get("progress", group[key]) != group[key]:
                    row["progress"] = group["progress"]
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


def format_table(rows: Sequence[Mapping[str, Any]], width: int | None = None) -> str:
    """Rows as an aligned text table: numbers right-aligned to three decimals, missing values as "-".

    Columns are the union of the rows' keys, in first-seen order.  A table wider than
    ``width`` characters is printed as several tables, one under the other, each repeating
    the leading text columns (run, env, split) that say what a row is, instead of lines a
    terminal wraps into a jumble.
    """
    if not rows:
        return "(no episodes)"
    columns = list(dict.fromkeys(key for row in rows for key in row))
    cells = {column: [_cell(row.get(column)) for row in rows] for column in columns}
    widths = {column: max(len(column), *(len(cell) for cell in cells[column])) for column in columns}
    numeric = {c: all(isinstance(row.get(c), (int, float)) or row.get(c) is None for row in rows) for c in columns}

    def block(chosen: Sequence[str]) -> str:
        def line(values: Sequence[str]) -> str:
            return "  ".join(
                value.rjust(widths[c]) if numeric[c] else value.ljust(widths[c]) for value, c in zip(values, chosen)
            ).rstrip()

        return "\n".join([line(chosen), *(line([cells[c][i] for c in chosen]) for i in range(len(rows)))])

    return "\n\n".join(block(chosen) for chosen in _column_blocks(columns, widths, numeric, width))


def screen_table(rows: Sequence[Mapping[str, Any]]) -> str:
    """:func:`format_table` cut to the terminal's width (``COLUMNS``, else 80 when not a terminal), with
    what the budget column means under a table that has one."""
    width = shutil.get_terminal_size().columns
    legend = "\n\n" + textwrap.fill(BUDGET_LEGEND, width) if any("budget" in row for row in rows) else ""
    return format_table(rows, width) + legend


def _column_blocks(
    columns: Sequence[str], widths: Mapping[str, int], numeric: Mapping[str, bool], width: int | None
) -> list[list[str]]:
    """The columns of each printed table: all of them, or the leading text columns plus as many
    of the rest as fit in ``width`` (at least one per table)."""
    keys = list(itertools.takewhile(lambda column: not numeric[column], columns))
    rest = columns[len(keys):]
    if width is None or sum(widths[c] + 2 for c in columns) - 2 <= width or not rest:
        return [list(columns)]
    used = sum(widths[c] + 2 for c in keys)
    blocks: list[list[str]] = [[]]
    for column in rest:
        if blocks[-1] and used + sum(widths[c] + 2 for c in blocks[-1]) + widths[column] > width:
            blocks.append([])
        blocks[-1].append(column)
    return [keys + block for block in blocks]


def comparability_notes(
    runs: Mapping[str, Mapping[str, Any]], budgets: Mapping[str, Mapping[str, str]] | None = None
) -> list[str]:
    """Warnings for run summaries (by name) whose numbers are not measured alike, naming which runs.

    Numbers compare exactly when the panel checksums, the chat template hash and the
    env data files match; ``budgets`` (run -> :func:`run_budgets`) names the envs whose
    chat budgets differ, the most common cause of a different hash.
    """
    notes = []
    by_env: dict[str, dict[str, str]] = {}
    for name, labels in (budgets or {}).items():
        for env_id, label in labels.items():
            by_env.setdefault(env_id, {})[name] = label
    notes += [f"{env_id}: runs played under different chat budgets ({_who_used(seen)})"
              for env_id, seen in sorted(by_env.items()) if len(set(seen.values())) > 1]
    hashes = {name: summary["template_hash"][:12] for name, summary in runs.items()}
    if len(set(hashes.values())) > 1:
        notes.append(f"runs used {len(set(hashes.values()))} different chat templates/settings "
                     f"(template_hash {_who_used(hashes)})")
    data = {name: _data_label(summary.get("data_files", {})) for name, summary in runs.items()}
    if len(set(data.values())) > 1:
        notes.append(f"runs used different env data files (env_kwargs: {_who_used(data)})")
    checksums: dict[str, dict[str, str]] = {}
    for name, summary in runs.items():
        for panel, checksum in summary["panels"].items():
            checksums.setdefault(panel, {})[name] = checksum[:12]
    notes += [f"{panel}: runs used different panels (checksum {_who_used(seen)})"
              for panel, seen in sorted(checksums.items()) if len(set(seen.values())) > 1]
    return notes


def _who_used(values: Mapping[str, str]) -> str:
    """``"a, b: 3f2c9a1b7d40; c: 9e01d2c3b4a5"``: the runs grouped by the value they used."""
    by_value: dict[str, list[str]] = {}
    for name, value in values.items():
        by_value.setdefault(value, []).append(name)
    return "; ".join(f"{', '.join(names)}: {value}" for value, names in by_value.items())


def _data_label(files: Mapping[str, Any]) -> str:
    """The env data files a run used, as ``key=sha256`` (shortened), or ``none``."""
    return ", ".join(f"{key}={str(value)[:12]}" for key, value in sorted(files.items())) or "none"
