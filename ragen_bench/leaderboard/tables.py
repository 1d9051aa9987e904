"""The leaderboard's tables as they are shown: columns, cells and row order.

Both renderings read them: ``README.md`` (:mod:`.build`, Markdown cells, :func:`markdown_table`)
and ``index.html`` (:mod:`.page`, HTML cells from :func:`cell_value`).  A table row is a plain
dict of numbers and submission text (:func:`ragen_bench.leaderboard.build.entry_rows`);
:func:`display_row` joins its interval columns into text cells.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import quote


def cell_value(value: Any) -> str:
    """A table value as one line of plain text (the page escapes it for HTML, :func:`cell_text` for Markdown)."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.3f}"
    # Every line break Markdown (or a reader's editor) honours, not only "\n", would split the row.
    return " ".join(str(value).splitlines())


# Markdown punctuation that can make a link or an image (``[t](u)``, ``![t](u)``), a code
# span, emphasis, strikethrough, GitHub's math (``$x$``) or a heading; ``|`` ends a cell and
# ``\\`` would escape what follows it. A backslash before any of them reads as the character.
_MARKDOWN_ESCAPES = str.maketrans({char: "\\" + char for char in "\\`*_[]()!#~$|"})


def cell_text(value: Any) -> str:
    """A value as one Markdown table cell of plain text: no line break, HTML and Markdown inert.

    Markdown passes raw HTML through (a renderer shows ``<b>`` bold, or lets ``<img>``
    load) and reads its own syntax (``![t](http://...)`` loads an image, ``[x](javascript:...)``
    links): free text from ``submission.json`` must read as the page shows it, as text.
    So ``& < >`` become entities and Markdown punctuation is backslash-escaped; no code span
    can form, so every entity renders as its character.
    """
    return html.escape(cell_value(value), quote=False).translate(_MARKDOWN_ESCAPES)


def link_cell(url: str) -> str:
    """A submission's ``link`` (an http(s) URL without whitespace, as the schema checks) as a Markdown autolink.

    Inside ``<...>`` Markdown reads nothing (no emphasis, no escapes), so the URL shows and
    links as given; a bare URL backslash-escaped like other text might not (an autolinker
    reading the raw text keeps the backslashes). The few characters that would end the
    autolink or the cell, or that an autolink may not hold (space, control characters), are
    percent-encoded, as a browser sends them anyway.
    """
    return "<" + "".join(quote(c, safe="") if c in "<>| " or not c.isprintable() else c for c in url) + ">"


# Cells :func:`display_row` formats from numbers alone ("[0.100, 0.200]", "0.500 (k=2)", "+0.010"):
# no submission text, so their brackets stay as written.
FORMATTED_COLUMNS = frozenset({"ci95", "pass@k", "gap", "gap_ci95"})


def markdown_cell(key: str, value: Any) -> str:
    """The Markdown cell of column ``key``: :func:`cell_text`, but links as autolinks and numbers as formatted."""
    if key == "link" and isinstance(value, str):
        return link_cell(value)
    return cell_value(value) if key in FORMATTED_COLUMNS else cell_text(value)


MAIN_COLUMNS = {
    "entry": "entry", "model": "model", "recipe": "recipe", "trained_on_train": "trained on train",
    "env": "env", "coverage": "coverage", "success": "success", "ci95": "95% CI", "pass@1": "pass@1",
    "pass@k": "pass@k", "mean_return": "mean return", "efficiency": "efficiency",
    "valid_action_rate": "valid actions", "tokens_per_episode": "tokens/episode",
}
ENTRY_COLUMNS = {
    "entry": "entry", "model": "model", "recipe": "recipe", "trained_on_train": "trained on train", "date": "date",
    "contact": "contact", "link": "link", "episodes": "episodes", "notes": "notes",
}
GENERALIZATION_COLUMNS = {
    "entry": "entry", "train_env": "train env", "test_env": "held-out env", "axis": "axis",
    "in_distribution": "in-distribution", "held_out": "held-out", "gap": "gap", "gap_ci95": "gap 95% CI",
}


def display_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row with its interval columns joined into one text cell, as the tables show it."""
    shown = dict(row)
    if "success_low" in row:
        shown["ci95"] = f"[{row['success_low']:.3f}, {row['success_high']:.3f}]"
    if "k" in row:
        shown["pass@k"] = f"{row['pass@k']:.3f} (k={row['k']})"
    if "gap_low" in row:
        shown["gap"] = f"{row['gap']:+.3f}"
        shown["gap_ci95"] = f"[{row['gap_low']:+.3f}, {row['gap_high']:+.3f}]"
    return shown


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> str:
    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        shown = display_row(row)
        lines.append("| " + " | ".join(markdown_cell(key, shown.get(key)) for key in columns) + " |")
    return "\n".join(lines)


def sorted_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """By suite, env and split, then best success first (ties by entry name)."""
    return sorted(rows, key=lambda r: (r["suite"], r["env"], r["split"], -r["success"], r["entry"]))
