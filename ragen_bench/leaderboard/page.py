"""``leaderboard/index.html``: one static page, everything inline.

No server, no CDN, no external file: styles, script, the plots (base64 PNG) and the
transcript data (JSON in a ``<script type="application/json">`` block) are all in the
page.  Model text reaches the page only as JSON (with ``<`` escaped, so no reply can
close the script block) and is shown with ``textContent``, never parsed as HTML.
"""

from __future__ import annotations

import base64
import html
import json
from collections.abc import Mapping, Sequence
from typing import Any

from ragen_bench.leaderboard.tables import (
    ENTRY_COLUMNS, GENERALIZATION_COLUMNS, MAIN_COLUMNS, cell_value, display_row, sorted_rows,
)

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1600px; color: #222; padding: 0 1em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
td { white-space: nowrap; }
td.text { white-space: normal; min-width: 10em; max-width: 18em; }
.scroll { overflow-x: auto; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; cursor: pointer; user-select: none; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
img { max-width: 100%; }
#viewer { border: 1px solid #ccc; padding: 0.8em; background: #fafafa; }
#viewer pre { white-space: pre-wrap; background: #fff; border: 1px solid #ddd; padding: 0.5em; margin: 0.3em 0; }
#v-board { font-family: monospace; }
.grid { display: grid; grid-template-columns: 1fr 1fr; gap: 1em; }
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

const DATA = JSON.parse(document.getElementById("viewer-data").textContent);
const pick = id => document.getElementById(id);
let step = 0;
function fill(select, names) {
  select.replaceChildren(...names.map(name => {
    const option = document.createElement("option");
    option.textContent = name;
    return option;
  }));
}
function episode() { return DATA[pick("v-entry").value][pick("v-episode").value]; }
function show() {
  const e = episode();
  const last = e.turns.length;
  step = Math.max(0, Math.min(step, last));
  pick("v-prev").disabled = step === 0;
  pick("v-next").disabled = step === last;
  if (step === last) {
    const outcome = e.success ? "solved" : "not solved";
    pick("v-turn").textContent = `Final state (after ${last} turns): ${outcome}, return ${Number(e.return.toFixed(3))}`;
    pick("v-board").textContent = e.final;
    ["v-think", "v-answer", "v-actions", "v-rewards", "v-raw"].forEach(id => pick(id).textContent = "");
    return;
  }
  const t = e.turns[step];
  pick("v-turn").textContent = `Turn ${step + 1} of ${last}`;
  pick("v-board").textContent = t.board;
  pick("v-think").textContent = t.think;
  pick("v-answer").textContent = t.answer;
  pick("v-raw").textContent = t.raw;
  pick("v-actions").textContent = `parsed: [${t.actions.join(", ")}]  executed ids: [${t.executed.join(", ")}]`;
  pick("v-rewards").textContent = `env rewards: [${t.rewards.join(", ")}]  format penalty: ${t.penalty}`;
}
function chooseEntry() { fill(pick("v-episode"), Object.keys(DATA[pick("v-entry").value])); step = 0; show(); }
fill(pick("v-entry"), Object.keys(DATA));
pick("v-entry").addEventListener("change", chooseEntry);
pick("v-episode").addEventListener("change", () => { step = 0; show(); });
pick("v-prev").addEventListener("click", () => { step -= 1; show(); });
pick("v-next").addEventListener("click", () => { step += 1; show(); });
chooseEntry();
"""


# Columns of free text (from submission.json) that wrap instead of widening the table.
WRAPPED = ("model", "recipe", "contact", "notes")


def _sort_key(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def html_table(table_id: str, rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str]) -> str:
    """A sortable table; each cell carries its raw value in ``data-sort``."""
    head = "".join(f"<th>{html.escape(title)}</th>" for title in columns.values())
    body = []
    for row in rows:
        shown = display_row(row)
        cells = []
        for key in columns:
            # Interval cells sort by their lower bound.
            raw = row.get({"ci95": "success_low", "gap_ci95": "gap_low"}.get(key, key))
            # Numbers align right; free text from submission.json may wrap.
            kind = ' class="num"' if isinstance(raw, (int, float)) and not isinstance(raw, bool) else ""
            kind = ' class="text"' if key in WRAPPED else kind
            text = html.escape(cell_value(shown.get(key)))
            cells.append(f'<td{kind} data-sort="{html.escape(_sort_key(raw))}">{text}</td>')
        body.append("<tr>" + "".join(cells) + "</tr>")
    return (f'<div class="scroll"><table id="{table_id}" class="sortable"><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _json_for_script(data: Any) -> str:
    # ASCII with every "<" escaped: no text inside can end the <script> element.
    return json.dumps(data, sort_keys=True, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")


def render_page(rows: Sequence[Mapping[str, Any]], general: Sequence[Mapping[str, Any]],
                info: Sequence[Mapping[str, Any]], plots: Mapping[str, bytes], viewer: Mapping[str, Any]) -> str:
    images = "".join(
        f'<p><img alt="{html.escape(name)}" src="data:image/png;base64,{base64.b64encode(data).decode()}"></p>'
        for name, data in plots.items()
    )
    sections = []
    ordered = sorted_rows(rows)
    for number, suite in enumerate(sorted({row["suite"] for row in rows})):
        table = html_table(f"main-{number}", [r for r in ordered if r["suite"] == suite], MAIN_COLUMNS)
        sections.append(f"<h2>{html.escape(suite)}</h2>{table}")
    if general:
        table = html_table("generalization", general, GENERALIZATION_COLUMNS)
        sections.append("<h2>Generalization</h2><p>Held-out success minus in-distribution success, "
                        f"with Newcombe's 95% interval.</p>{table}")
    sections.append("<h2>Entries</h2>" + html_table("entries", info, ENTRY_COLUMNS))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>ragen-bench leaderboard</title>
<style>{_STYLE}</style>
</head>
<body>
<h1>ragen-bench leaderboard</h1>
<p>Every number is recomputed by replaying each submitted episode in a fresh env. Click a column title to sort.</p>
{"".join(sections)}
<h2>Transcripts</h2>
<div id="viewer">
<p><label>entry <select id="v-entry"></select></label>
<label>episode <select id="v-episode"></select></label>
<button id="v-prev" type="button">previous turn</button>
<button id="v-next" type="button">next turn</button></p>
<p><strong id="v-turn"></strong></p>
<div class="grid">
<div><h3>Board (the prompt of this turn)</h3><pre id="v-board"></pre></div>
<div><h3>Think</h3><pre id="v-think"></pre><h3>Answer</h3><pre id="v-answer"></pre>
<p id="v-actions"></p><p id="v-rewards"></p>
<details><summary>raw reply</summary><pre id="v-raw"></pre></details></div>
</div>
</div>
<h2>Plots</h2>
{images}
<script type="application/json" id="viewer-data">{_json_for_script(viewer)}</script>
<script>{_SCRIPT}</script>
</body>
</html>
"""
