"""``leaderboard/index.html``: one static page, everything inline.

No server, no CDN: styles, script, the plots (base64 PNG) and the episode viewer's data
(JSON in a ``<script type="application/json">`` block, :mod:`.viewer`) are in the page;
only the viewer's frame pictures are files beside it (``frames/``, loaded as their turn
is shown).  Model text reaches the page only as JSON (with ``<`` escaped, so no reply can
close the script block) and is shown with ``textContent``, never parsed as HTML.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ragen_bench.leaderboard.tables import (
    ENTRY_COLUMNS, GENERALIZATION_COLUMNS, MAIN_COLUMNS, PAIRED_COLUMNS, PAIRED_TEXT, REPORTED_MARK, SCORE_TEXT, Board,
    cell_value, display_row,
)
from ragen_bench.leaderboard.viewer import VIEWER_MARKUP, VIEWER_SCRIPT, VIEWER_STYLE

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1600px; color: #222; padding: 0 0.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
td { white-space: nowrap; }
td.text { white-space: normal; min-width: 10em; max-width: 18em; }
/* A ranking has a column per env: their titles stand upright so that 19 envs fit without scrolling. */
table.ranking th:nth-child(n+5):not(:nth-last-child(-n+2)) { writing-mode: vertical-rl; transform: rotate(180deg);
  text-align: left; vertical-align: bottom; padding: 0.4em 0.15em; }
table.ranking { font-size: 0.76em; }
table.ranking td { padding: 0.25em 0.25em; }
table.ranking td.num { padding: 0.25em 0.12em; }
table.ranking td.text { min-width: 5em; max-width: 8em; }
details > summary { cursor: pointer; margin: 0.3em 0; }
.note { font-size: 0.85em; color: #444; max-width: 80em; }
.scroll { overflow-x: auto; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; cursor: pointer; user-select: none; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
img { max-width: 100%; }
label { margin-right: 1em; }
"""

_SCRIPT = """
"use strict";
function sortTable(th) {
  const table = th.closest("table");
  const index = Array.from(th.parentNode.children).indexOf(th);
  const ascending = th.getAttribute("aria-sort") !== "ascending";
  table.querySelectorAll("th").forEach(h => h.removeAttribute("aria-sort"));
  th.setAttribute("aria-sort", ascending ? "ascending" : "descending");
  const body = table.tBodies[0];
  const rows = Array.from(body.rows);
  const key = row => row.cells[index].dataset.sort;
  const numeric = rows.every(row => key(row) === "" || !isNaN(Number(key(row))));
  rows.sort((a, b) => {
    const x = key(a), y = key(b);
    // Missing values ("-") sort last either way.
    if (x === "" || y === "") return (x === "") - (y === "");
    const order = numeric ? Number(x) - Number(y) : x.localeCompare(y);
    return ascending ? order : -order;
  });
  rows.forEach(row => body.appendChild(row));
}
document.querySelectorAll("table.sortable th").forEach(th => th.addEventListener("click", () => sortTable(th)));
"""


# Columns of free text (from submission.json) that wrap instead of widening the table.
WRAPPED = ("entry", "model", "recipe", "contact", "notes", "coverage")


def _sort_key(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def html_table(table_id: str, rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str], *,
               css: str = "") -> str:
    """A sortable table (CSS classes ``sortable`` and ``css``); each cell carries its raw value in ``data-sort``."""
    head = "".join(f"<th>{html.escape(title)}</th>" for title in columns.values())
    body = []
    for row in rows:
        shown = display_row(row)
        cells = []
        for key in columns:
            # Interval cells sort by their lower bound.
            raw = row.get({"ci95": "success_low", "gap_ci95": "gap_low", "score_ci95": "score_low"}.get(key, key))
            # Numbers align right; free text from submission.json may wrap.
            kind = ' class="num"' if isinstance(raw, (int, float)) and not isinstance(raw, bool) else ""
            kind = ' class="text"' if key in WRAPPED else kind
            text = html.escape(cell_value(shown.get(key)))
            cells.append(f'<td{kind} data-sort="{html.escape(_sort_key(raw))}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table id="{table_id}" class="{f"sortable {css}".strip()}">'
            f'<thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _json_for_script(data: Any) -> str:
    # ASCII with every "<" escaped: no text inside can end the <script> element.
    return json.dumps(data, sort_keys=True, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")


def render_page(board: Board, plots: Mapping[str, bytes], viewer: Mapping[str, Any]) -> str:
    images = "".join(
        f'<p><img alt="{html.escape(name)}" src="data:image/png;base64,{base64.b64encode(data).decode()}"></p>'
        for name, data in plots.items()
    )
    sections = []
    for number, suite in enumerate(board.suites()):
        ranked, columns = board.ranking_of(suite)
        detail = board.detail_of(suite)
        sections.append(
            f"<h2>{html.escape(suite)}</h2>" + html_table(f"ranking-{number}", ranked, columns, css="ranking")
            + f"<details><summary>detail: one row per entry and env ({len(detail)} rows)</summary>"
            + html_table(f"main-{number}", detail, MAIN_COLUMNS) + "</details>"
        )
    reported = board.reported
    sections.insert(0, f'<p class="note">{html.escape(SCORE_TEXT)} Env columns: success rate on the env\'s test '
                    f'panel. The last row of a ranking, where there is one, is what the <a href="{html.escape(reported.url)}">'
                    f'{html.escape(reported.label)}</a> reports for the same env: {REPORTED_MARK} (the authors\' '
                    'own runs and eval sets).</p>')
    if board.paired:
        sections.append("<h2>Trained entries against their base entries</h2>"
                        f'<p class="note">{html.escape(PAIRED_TEXT)}</p>'
                        + html_table("paired", board.paired, PAIRED_COLUMNS))
    if board.general:
        table = html_table("generalization", board.general, GENERALIZATION_COLUMNS)
        sections.append("<h2>Generalization</h2><p>Held-out success minus in-distribution success, "
                        f"with Newcombe's 95% interval.</p>{table}")
    sections.append("<h2>Entries</h2>" + html_table("entries", board.info, ENTRY_COLUMNS))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ragen-bench leaderboard</title>
<style>{_STYLE}{VIEWER_STYLE}</style>
</head>
<body>
<h1>ragen-bench leaderboard</h1>
<p>Every number is recomputed by replaying each submitted episode in a fresh env. Click a column title to sort.</p>
{"".join(sections)}
{VIEWER_MARKUP}
<h2>Plots</h2>
{images}
<script type="application/json" id="viewer-data">{_json_for_script(viewer)}</script>
<script>{_SCRIPT}{VIEWER_SCRIPT}</script>
</body>
</html>
"""
