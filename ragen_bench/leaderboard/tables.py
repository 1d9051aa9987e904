"""The leaderboard's tables as they are shown: columns, cells and row order.

Both renderings read them: ``README.md`` (:mod:`.build`, Markdown cells, :func:`markdown_table`)
and ``index.html`` (:mod:`.page`, HTML cells from :func:`cell_value`).  A table row is a plain
dict of numbers and submission text (:func:`ragen_bench.leaderboard.build.entry_rows`);
:func:`display_row` joins its interval columns into text cells.
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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


# Free-text columns a table row shows shortened (:func:`short_text`): the page opens the whole text
# on demand, and the entries table (``fold=False``) shows it in full, so the rankings stay one line a row.
FOLDED = ("model", "recipe")
SHORT_CHARS = 40


def short_text(value: Any) -> str:
    """:func:`cell_value`, cut at a word boundary to at most :data:`SHORT_CHARS` characters and an ellipsis."""
    text = cell_value(value)
    if len(text) <= SHORT_CHARS:
        return text
    cut = text[:SHORT_CHARS + 1].rsplit(" ", 1)[0] if " " in text[:SHORT_CHARS + 1] else text[:SHORT_CHARS]
    return cut.rstrip(",;: ") + "\u2026"


def anchor(title: str) -> str:
    """The fragment GitHub gives a Markdown heading ``title``; the page uses the same ids, so links agree."""
    return re.sub(r"[^\w\- ]", "", title.lower()).replace(" ", "-")


def suite_plot_name(suite: str) -> str:
    """The file of ``suite``'s success plot (one per suite, so each stays legible at page width)."""
    return f"success-{anchor(suite)}.png"


# Cells :func:`display_row` (and the games section's outcome intervals) formats from numbers alone ("[0.100, 0.200]",
# "0.500 (k=2)", "+0.010"): no submission text, so their brackets stay as written.
FORMATTED_COLUMNS = frozenset({"ci95", "pass@k", "gap", "gap_ci95", "score_ci95", "mcnemar_p", "win_ci95", "draw_ci95",
                               "loss_ci95"})


def markdown_cell(key: str, value: Any, fold: bool = True) -> str:
    """The Markdown cell of column ``key``: :func:`cell_text`, but links as autolinks, numbers as formatted
    and, with ``fold``, :data:`FOLDED` columns as :func:`short_text`."""
    if key == "link" and isinstance(value, str):
        return link_cell(value)
    if fold and key in FOLDED:
        return cell_text(short_text(value))
    return cell_value(value) if key in FORMATTED_COLUMNS else cell_text(value)


# The detail table's columns, key -> title.  A key that is a field of an env's recomputed summary
# (a group of summary.json, ragen_bench.eval.metrics.group_summary) is filled from it by
# build.entry_rows, so showing another such field is one line here.
MAIN_COLUMNS = {
    "entry": "entry", "model": "model", "recipe": "recipe", "trained_on_train": "trained on train",
    "env": "env", "budget": "budget", "coverage": "coverage", "success": "success", "ci95": "95% CI", "progress": "progress", "pass@1": "pass@1",
    "pass@k": "pass@k", "mean_return": "mean return", "efficiency": "efficiency",
    "valid_action_rate": "valid actions", "tokens_per_episode": "tokens/episode",
    "paper": "paper (reported, not verified)",
}
ENTRY_COLUMNS = {
    "entry": "entry", "model": "model", "recipe": "recipe", "trained_on_train": "trained on train", "date": "date",
    "contact": "contact", "link": "link", "episodes": "episodes", "notes": "notes",
}
PAIRED_COLUMNS = {
    "entry": "entry", "base": "base entry", "env": "env", "pairs": "shared episodes", "success": "success",
    "base_success": "base success", "only_entry": "solved by entry only", "only_base": "solved by base only",
    "mcnemar_p": "McNemar p", "note": "note",
}
GENERALIZATION_COLUMNS = {
    "entry": "entry", "train_env": "train env", "test_env": "held-out env", "axis": "axis",
    "in_distribution": "in-distribution", "held_out": "held-out", "gap": "gap", "gap_ci95": "gap 95% CI",
}


# What the ranking's score is, said once for the README and the page.
SCORE_TEXT = (
    "score: the unweighted mean over the suite's envs of each env's progress on its test panel: its success "
    "rate, or where the world has a score of its own (Crafter's achievements, TextWorld's points, NetHack's "
    "progression, as BALROG scores them) the mean of that score from 0 to 1; "
    "95% CI: the per-env Wilson intervals combined by the MOVER method (Zou and Donner 2008), the panels "
    "being independent samples. Equal scores share a rank; ranks compare only entries played under the same "
    "chat budget (budget: turns / actions per reply / actions per episode, hN: the last N turns shown; each id's: "
    "the budget each env's id declares, `ragen-bench envs show ID`). coverage: panel seeds played over the panels' "
    "seeds (summed over the envs) x samples per seed: a slice shows as less than the whole."
)
# What each other column means, said once for the README and the page.
METRICS_TEXT = (
    "Per-env columns: progress on the env's test panel (the success rate where the world has no score of its "
    "own). success: fraction of episodes solved, with its 95% Wilson interval; progress: the world's own score "
    "from 0 to 1 where it has one (BALROG's), shown where it differs from success; pass@k: unbiased estimate with the largest k the samples allow; mean return: env rewards "
    "plus format penalties; efficiency: optimal length / actions over solved episodes; coverage: panel seeds "
    "played x samples per seed."
)
REPORTED_MARK = "reported, not verified"
# What each ranking column means: on the page, its title's help on hover.
RANKING_HELP = {
    "rank": "position by score among the entries played under the same budget (the vision track, with pictures, "
            "apart); equal scores share a rank",
    "entry": "the submission's name: click it for its model, recipe, date, contact and link",
    "budget": "the chat budget its episodes were played under: turns / actions per reply / actions per episode",
    "score": ("what the ranking orders by: the mean over the suite's envs of each env's progress on its test "
              "panel (its success rate, or its own score where the world has one), from 0 to 1, higher is better"),
    "score_ci95": "95% confidence interval of the score: the envs' Wilson intervals combined by the MOVER method",
    "coverage": "panel seeds played / the panels' seeds (summed over the envs) x samples per seed",
    "model": "the model or agent, as submitted (a shortened one opens whole on a click)",
    "recipe": ("prompted, scripted, or the training recipe in brief, as submitted (a shortened one opens whole "
               "on a click)"),
}


def scores_beyond_success(rows: Sequence[Mapping[str, Any]]) -> bool:
    """Whether any detail row's progress differs from its success: a world of the rows has a score of its own."""
    return any(row["progress"] != row["success"] for row in rows)


def env_help(env_id: str) -> str:
    """The help of an env's column in a ranking (its title is :func:`short_env`)."""
    return (f"{env_id}: progress on its test panel: the fraction of episodes solved, or the mean of the world's "
            "own score where it has one")


# Terms a ranking's column titles and budget cells abbreviate: (term, meaning, pattern). The page's legend
# under a ranking lists the terms whose pattern occurs in that ranking's titles or budget cells.
ABBREVIATIONS = (
    ("CI", "confidence interval", r"\bCI\b"),
    ("RG-", "a reasoning-gym dataset", r"^RG-"),
    ("TWX-", "a TextWorld-Express game", r"^TWX-"),
    ("TA-", "a TextArena game", r"^TA-"),
    ("budget t/a/e", "turns / actions per reply / actions per episode", r"\b\d+/\d+/\d+\b"),
    ("hN", "the prompt shows only the last N turns", r"\bh\d+\b"),
    ("each id's", "each env played under the budget its id declares (`ragen-bench envs show ID`)", r"each id's"),
    ("vision", "the vision track: each request also showed the state's picture (chat.images), ranked apart", r"\bvision\b"),
)
METHODS_HEADING = "How the tables are computed"
PAIRED_HEADING = "Trained entries against their base entries"
PAIRED_TEXT = (
    "Each trained entry against its base entry (the checkpoint it was trained from), paired on the "
    "episodes both played (same env, split, seed and sample): successes of each, the discordant "
    "counts, and McNemar's exact two-sided p-value, as `ragen-bench leaderboard compare` computes them."
)


@dataclass(frozen=True)
class Reported:
    """Success rates another source published for our ``(env id, split)`` pairs: shown beside ours, never verified."""

    name: str  # who reports, e.g. "RAGEN paper"
    recipe: str  # what was run and where it is printed
    url: str
    success: dict[tuple[str, str], float]

    @property
    def label(self) -> str:
        return f"{self.name}: {self.recipe}"


@dataclass(frozen=True)
class Board:
    """Every table of the leaderboard, as rows (:mod:`.build` makes them, the README and the page show them)."""

    ranking: list[dict[str, Any]]
    rows: list[dict[str, Any]]
    paired: list[dict[str, Any]]
    general: list[dict[str, Any]]
    info: list[dict[str, Any]]
    reported: Reported
    # ``(heading, note)`` of the sections other modules render (the games), listed before the entries.
    sections: tuple[tuple[str, str], ...] = ()

    def suites(self) -> list[str]:
        """Broadest first (most envs, then by name): the first ranking is the broad score."""
        return sorted({row["suite"] for row in self.rows}, key=lambda suite: (-len(self.envs_of(suite)), suite))

    def envs_of(self, suite: str) -> list[str]:
        return sorted({row["env"] for row in self.rows if row["suite"] == suite})

    def ranking_of(self, suite: str) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """``suite``'s ranking rows (the reported numbers last, unranked) and their columns: one per env."""
        ranked = [row for row in self.ranking if row["suite"] == suite]
        envs = self.envs_of(suite)
        reported = {env: self.reported.success[(env, "test")] for env in envs if (env, "test") in self.reported.success}
        if reported:
            ranked = [*ranked, {"entry": f"{self.reported.name} ({REPORTED_MARK})", "recipe": self.reported.recipe,
                                **reported}]
        columns = {"rank": "rank", "entry": "entry", "budget": "budget", "score": "score", "score_ci95": "95% CI",
                   **{env: short_env(env) for env in envs}, "coverage": "coverage", "model": "model", "recipe": "recipe"}
        return ranked, columns

    def detail_of(self, suite: str) -> list[dict[str, Any]]:
        return [row for row in self.rows if row["suite"] == suite]

    def size_of(self, suite: str) -> str:
        """``"19 envs, 2 entries"``."""
        entries = len({row["entry"] for row in self.detail_of(suite)})
        return f"{_envs(len(self.envs_of(suite)))}, {entries} entr{'ies' if entries != 1 else 'y'}"

    def contents(self) -> list[tuple[str, str]]:
        """``(heading, note)`` of each section as the README and the page order them: the suites, broadest first."""
        sections = [(suite, _envs(len(self.envs_of(suite)))) for suite in self.suites()]
        sections.append((METHODS_HEADING, ""))
        if self.paired:
            sections.append((PAIRED_HEADING, ""))
        if self.general:
            sections.append(("Generalization", ""))
        return [*sections, *self.sections, ("Entries", "")]


def _envs(count: int) -> str:
    return f"{count} env{'s' * (count != 1)}"


def short_env(env_id: str) -> str:
    """A column title for an env: the id without the ``RAGEN/`` prefix and the ``-v0`` version."""
    return env_id.removeprefix("RAGEN/").removesuffix("-v0")


def display_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row with its interval columns joined into one text cell, as the tables show it."""
    shown = dict(row)
    if row.get("score_low") is not None:
        shown["score_ci95"] = f"[{row['score_low']:.3f}, {row['score_high']:.3f}]"
    if "success_low" in row:
        shown["ci95"] = f"[{row['success_low']:.3f}, {row['success_high']:.3f}]"
    if "progress" in row and row["progress"] == row.get("success"):
        shown["progress"] = None  # nothing beyond success: shown as "-"
    if "k" in row:
        shown["pass@k"] = f"{row['pass@k']:.3f} (k={row['k']})"
    if "gap_low" in row:
        shown["gap"] = f"{row['gap']:+.3f}"
        shown["gap_ci95"] = f"[{row['gap_low']:+.3f}, {row['gap_high']:+.3f}]"
    return shown


def markdown_table(rows: Sequence[Mapping[str, Any]], columns: Mapping[str, str], *, fold: bool = True) -> str:
    lines = ["| " + " | ".join(columns.values()) + " |", "|" + "---|" * len(columns)]
    for row in rows:
        shown = display_row(row)
        lines.append("| " + " | ".join(markdown_cell(key, shown.get(key), fold) for key in columns) + " |")
    return "\n".join(lines)


def sorted_rows(rows: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """By suite, env and split, then best success first (ties by entry name)."""
    return sorted(rows, key=lambda r: (r["suite"], r["env"], r["split"], -r["success"], r["entry"]))
