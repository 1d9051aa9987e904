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
import re
from collections.abc import Collection, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragen_bench.leaderboard.tables import (
    ABBREVIATIONS, ENTRY_COLUMNS, FOLDED, GENERALIZATION_COLUMNS, MAIN_COLUMNS, METHODS_HEADING, METRICS_TEXT,
    PAIRED_COLUMNS, PAIRED_HEADING, PAIRED_TEXT, RANKING_HELP, REPORTED_MARK, SCORE_TEXT, Board, anchor, cell_value,
    display_row, env_help, scores_beyond_success, short_env, short_text, suite_plot_name,
)
from ragen_bench.leaderboard.paper import ours_by_world, paper_table
from ragen_bench.leaderboard.viewer import VIEWER_MARKUP, VIEWER_SCRIPT, VIEWER_STYLE

if TYPE_CHECKING:
    from ragen_bench.leaderboard.games_tables import GamesBoard

_STYLE = """
body { font-family: system-ui, sans-serif; margin: 1.5em auto; max-width: 1600px; color: #222; padding: 0 0.5em; }
table { border-collapse: collapse; margin: 0.5em 0 1.5em; font-size: 0.85em; }
th, td { border: 1px solid #ccc; padding: 0.25em 0.5em; text-align: left; }
td { white-space: nowrap; }
td.text { white-space: normal; min-width: 10em; max-width: 18em; }
/* A ranking has a column per env: their titles stand upright so that 22 envs fit without scrolling. */
table.ranking th:nth-child(n+6):not(:nth-last-child(-n+2)) { writing-mode: vertical-rl; transform: rotate(180deg);
  text-align: left; vertical-align: bottom; padding: 0.4em 0.15em; }
table.ranking { font-size: 0.72em; }
table.ranking td { padding: 0.25em 0.25em; }
table.ranking td.num { padding: 0.25em 0.12em; }
table.ranking td.text { min-width: 5em; max-width: 8em; }
table.ranking td.broken { white-space: normal; }
table.ranking th { padding: 0.25em 0.3em; }
details > summary { cursor: pointer; margin: 0.3em 0; }
/* The sections' links stay in view while the page scrolls; a link's target clears them. */
nav#contents { position: sticky; top: 0; z-index: 1; background: #fff; border-bottom: 1px solid #ccc;
  padding: 0.4em 0; font-size: 0.9em; line-height: 1.6; }
nav#contents a { margin-right: 0.9em; white-space: nowrap; }
nav#contents .size { color: #666; font-size: 0.9em; }
section { scroll-margin-top: 6.5em; }
h2 { margin-bottom: 0.1em; }
p.size { margin: 0; color: #555; font-size: 0.9em; }
/* A shortened model or recipe: one or two lines, the whole text on a click. */
td.fold details > summary { margin: 0; }
table.ranking td.fold { min-width: 8em; max-width: 13em; }
.note { font-size: 0.85em; color: #444; max-width: 80em; }
.scroll { overflow-x: auto; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
th { background: #f0f0f0; cursor: pointer; user-select: none; }
th[aria-sort="ascending"]::after { content: " \\25B2"; }
th[aria-sort="descending"]::after { content: " \\25BC"; }
img { max-width: 100%; }
label { margin-right: 1em; }
/* The headline column reads first: bold, over a bar as long as the score (no width taken from the env columns). */
th.score, td.score { font-weight: 700; }
th.score { background: #cfe3f3; }
td.score { background: linear-gradient(to right, #cfe3f3 calc(var(--score) * 100%), transparent 0); }
p.howto { margin: 0.2em 0 0; font-size: 0.9em; }
dl.legend { margin: -1em 0 1em; font-size: 0.85em; color: #444; }
dl.legend dt, dl.legend dd { display: inline; margin: 0; }
dl.legend dt { font-weight: 600; }
dl.legend dd:not(:last-child)::after { content: ";"; margin-right: 0.4em; }
/* An entry's link lands on its row of the entries table, below the contents, marked. */
#entries tr { scroll-margin-top: 6.5em; }
#entries tr:target { background: #fff3c4; }
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
# Interval cells that break at their space ("[0.930," over "0.947]"), so a 19-env ranking fits at 1280 px.
BROKEN = ("score_ci95",)


def _sort_key(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


# Interval cells sort by their lower bound.
_SORTED_BY = {"ci95": "success_low", "gap_ci95": "gap_low", "score_ci95": "score_low"}


def entry_anchor(name: str) -> str:
    """The id of entry ``name``'s row in the entries table, where its name links from a ranking."""
    return f"entry-{name}"


def _cell(key: str, row: Mapping[str, Any], shown: Mapping[str, Any], fold: bool, linked: Collection[str]) -> str:
    raw = row.get(_SORTED_BY.get(key, key))
    # Numbers align right; free text from submission.json may wrap.
    kind = "num" if isinstance(raw, (int, float)) and not isinstance(raw, bool) else ""
    kind = "text" if key in WRAPPED else "broken" if key in BROKEN else kind
    text = html.escape(cell_value(shown.get(key)))
    short = html.escape(short_text(shown.get(key)))
    style = ""
    if fold and key in FOLDED and short != text:
        kind, text = "text fold", f"<details><summary>{short}</summary>{text}</details>"
    elif key == "entry" and row.get("entry") in linked:
        text = f'<a href="#{html.escape(entry_anchor(row["entry"]))}">{text}</a>'
    if key == "score" and isinstance(raw, float):
        kind, style = "num score", f' style="--score: {raw:.4f}"'
    classes = f' class="{kind}"' if kind else ""
    return f'<td{classes}{style} data-sort="{html.escape(_sort_key(raw))}">{text}</td>'


def html_table(table_id: str, rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str], *,
               css: str = "", fold: bool = True, titles: Mapping[str, str] | None = None,
               linked: Collection[str] = (), row_ids: bool = False) -> str:
    """A sortable table (CSS classes ``sortable`` and ``css``); each cell carries its raw value in ``data-sort``.

    With ``fold``, a long model or recipe shows shortened, the whole text in a ``<details>``. ``titles`` are
    the columns' help on hover; an entry named in ``linked`` links to its row of the entries table, whose rows
    (``row_ids``) carry :func:`entry_anchor` ids.
    """
    help_of = titles or {}
    head = "".join("<th" + (' class="score"' if key == "score" else "")
                   + (f' title="{html.escape(help_of[key])}"' if key in help_of else "")
                   + f">{html.escape(title)}</th>" for key, title in columns.items())
    body = []
    for row in rows:
        shown = display_row(row)
        row_id = f' id="{html.escape(entry_anchor(row["entry"]))}"' if row_ids else ""
        body.append(f"<tr{row_id}>" + "".join(_cell(key, row, shown, fold, linked) for key in columns) + "</tr>")
    return (f'<div class="scroll"><table id="{table_id}" class="{f"sortable {css}".strip()}">'
            f'<thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _json_for_script(data: Any) -> str:
    # ASCII with every "<" escaped: no text inside can end the <script> element.
    return json.dumps(data, sort_keys=True, ensure_ascii=True, separators=(",", ":")).replace("<", "\\u003c")


def _image(name: str, data: bytes) -> str:
    return f'<p><img alt="{html.escape(name)}" src="data:image/png;base64,{base64.b64encode(data).decode()}"></p>'


def _section(title: str, body: str) -> str:
    """A section the contents link to: its id is the README heading's anchor, so both link alike."""
    return f'<section id="{html.escape(anchor(title))}"><h2>{html.escape(title)}</h2>{body}</section>'


def _howto(envs: int, own_scores: bool) -> str:
    """One line above a ranking: what orders it and where the help is."""
    rate = "progress" if own_scores else "success rate"
    score = f"its env's {rate}" if envs == 1 else f"the mean of its {envs} envs' {rate}" + ("" if own_scores else "s")
    return (f'<p class="howto">How to read: ranked by <b>score</b>, {score} (1.000: all solved). Hover a column '
            "title for its meaning; click an entry for its details.</p>")


def _legend(columns: Mapping[str, str], rows: Sequence[Mapping[str, Any]]) -> str:
    """The abbreviations a ranking's column titles and budget cells use, each with its meaning."""
    texts = [*columns.values(), *(str(row["budget"]) for row in rows if row.get("budget"))]
    terms = [("env columns", "env ids without RAGEN/ and -v0 (hover a title for the whole id)")]
    terms += [(term, meaning) for term, meaning, pattern in ABBREVIATIONS
              if any(re.search(pattern, text) for text in texts)]
    return ('<dl class="legend">'
            + "".join(f"<dt>{html.escape(term)}</dt> <dd>{html.escape(meaning)}</dd>" for term, meaning in terms)
            + "</dl>")


def _suite_section(board: Board, number: int, suite: str, plots: Mapping[str, bytes]) -> str:
    ranked, columns = board.ranking_of(suite)
    titles = {key: RANKING_HELP.get(key) or env_help(key) for key in columns}
    detail = board.detail_of(suite)
    entries = {row["entry"] for row in board.info}
    return _section(suite, f'<p class="size">{html.escape(board.size_of(suite))}</p>'
                    + _howto(len(board.envs_of(suite)), scores_beyond_success(detail))
                    + html_table(f"ranking-{number}", ranked, columns, css="ranking", titles=titles, linked=entries)
                    + _legend(columns, ranked)
                    + _image(suite_plot_name(suite), plots[suite_plot_name(suite)])
                    + f"<details><summary>detail: one row per entry and env ({len(detail)} rows)</summary>"
                    + html_table(f"main-{number}", detail, MAIN_COLUMNS) + "</details>" + _paper(suite, number, detail))


def _paper(suite: str, number: int, detail: Sequence[Mapping[str, Any]]) -> str:
    """The suite's paper rows (:mod:`.paper`) under its ranking, our entries in their columns first: for each,
    a heading, what it is, its table."""
    return "".join(f'<h3>{html.escape(table.heading)}</h3><p class="note">{html.escape(table.note)}</p>'
                   + html_table(f"{name}-{number}", table.rows, table.columns)
                   for name, table in (("worlds", ours_by_world(suite, detail)), ("paper", paper_table(suite)))
                   if table is not None)


def _contents(board: Board) -> str:
    # Most sections are suites: without the common "suite " the links take two lines, not three.
    links = [f'<a href="#{html.escape(anchor(title))}">{html.escape(title.removeprefix("suite "))}'
             + (f' <span class="size">({html.escape(note)})</span>' if note else "") + "</a>"
             for title, note in [*board.contents(), ("Episodes", "")]]
    return f'<nav id="contents" aria-label="sections">{" ".join(links)}</nav>'


def games_page(board: GamesBoard, linked: Sequence[str]) -> str:
    """The page's games section (sortable tables as the rest of the page has them; entries link to their rows)."""
    from ragen_bench.leaderboard.games_tables import (
        GAMES_HEADING, LADDER_COLUMNS, LADDER_TEXT, RECORD_COLUMNS, RECORD_TEXT, rows_of,
    )

    body = [f'<p class="note">{html.escape(LADDER_TEXT)} {html.escape(RECORD_TEXT)}</p>']
    for number, env in enumerate(board.envs()):
        body.append(f'<h3 id="game-{html.escape(anchor(short_env(env)))}">{html.escape(short_env(env))}</h3>'
                    + html_table(f"ladder-{number}", rows_of(board.ladder, env), LADDER_COLUMNS, css="ladder")
                    + html_table(f"record-{number}", rows_of(board.records, env), RECORD_COLUMNS, linked=linked))
    return (f'<section id="{html.escape(anchor(GAMES_HEADING))}"><h2>{GAMES_HEADING}</h2>'
            f'<p class="size">{html.escape(board.note())}</p>{"".join(body)}</section>')


def render_page(board: Board, plots: Mapping[str, bytes], viewer: Mapping[str, Any],
                games: GamesBoard | None = None) -> str:
    """The page: the sections' links, each suite (broadest first: the overall ranking leads), the shared tables,
    the games, the episode viewer; each plot in the section it belongs to."""
    sections = [_suite_section(board, number, suite, plots) for number, suite in enumerate(board.suites())]
    reported = board.reported
    sections.append(_section(METHODS_HEADING, f'<p class="note">{html.escape(SCORE_TEXT)} {html.escape(METRICS_TEXT)} '
                             f'The last row of a ranking, where there is one, is what the <a href="'
                             f'{html.escape(reported.url)}">{html.escape(reported.label)}</a> reports for the same '
                             f"env: {REPORTED_MARK} (the authors' own runs and eval sets).</p>"))
    if board.paired:
        sections.append(_section(PAIRED_HEADING, f'<p class="note">{html.escape(PAIRED_TEXT)}</p>'
                                 + html_table("paired", board.paired, PAIRED_COLUMNS)
                                 + _image("learning_curves.png", plots["learning_curves.png"])))
    if board.general:
        sections.append(_section("Generalization", "<p>Held-out success minus in-distribution success, with "
                                 "Newcombe's 95% interval.</p>"
                                 + html_table("generalization", board.general, GENERALIZATION_COLUMNS)
                                 + _image("generalization.png", plots["generalization.png"])))
    if games is not None:
        sections.append(games_page(games, [row["entry"] for row in board.info]))
    sections.append(_section("Entries", html_table("entries", board.info, ENTRY_COLUMNS, fold=False,
                                                   row_ids=True)))
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
<p>Every number is recomputed by replaying each submitted episode in a fresh env. Suites come broadest first.
Click a column title to sort, a shortened model or recipe to read it whole, an entry for its details.</p>
{_contents(board)}
{"".join(sections)}
<section id="episodes">{VIEWER_MARKUP}</section>
<script type="application/json" id="viewer-data">{_json_for_script(viewer)}</script>
<script>{_SCRIPT}{VIEWER_SCRIPT}</script>
</body>
</html>
"""
