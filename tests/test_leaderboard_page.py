"""How the page reads (:mod:`ragen_bench.leaderboard.page`): the broadest suite leads, the contents
link to every section, long models and recipes fold, each suite's plot shows at its own size, and
``README.md`` has the same sections in the same order.  Browser checks run in headless Chromium
on the committed page, the one a reader opens.
"""

from __future__ import annotations

import csv
import io
import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from ragen_bench.leaderboard.tables import SHORT_CHARS, anchor, cell_value, short_text

from .conftest import REPO_ROOT
from .test_leaderboard_build import browser, open_page  # noqa: F401

BOARD = REPO_ROOT / "leaderboard"


@given(st.text())
def test_short_text_is_a_prefix_of_the_cell(text: str) -> None:
    short, whole = short_text(text), cell_value(text)
    if short != whole:
        assert short.endswith("\u2026") and whole.startswith(short[:-1]) and len(short) <= SHORT_CHARS + 1


def test_short_text_cuts_at_a_word() -> None:
    assert short_text("StarPO (no filter: filter.ratio=1.0) from cpu-sokoban-small-sft") == (
        "StarPO (no filter: filter.ratio=1.0)\u2026")
    assert short_text("scripted") == "scripted"


def test_anchor_is_githubs_heading_fragment() -> None:
    assert anchor("env RAGEN/Bandit-v0") == "env-ragenbandit-v0"
    assert anchor("Trained entries against their base entries") == "trained-entries-against-their-base-entries"


def readme_headings() -> list[str]:
    return re.findall(r"^## (.+)$", (BOARD / "README.md").read_text(), re.M)


def envs_of_suite(suite: str) -> int:
    rows = csv.DictReader(io.StringIO((BOARD / "leaderboard.csv").read_text()))
    return len({row["env"] for row in rows if row["suite"] == suite})


def test_readme_leads_with_the_broadest_suite_and_links_every_section() -> None:
    headings = readme_headings()
    suites = [h for h in headings if h.startswith(("suite ", "env "))]
    assert suites[0] == "suite breadth-v0"
    assert [envs_of_suite(s) for s in suites] == sorted((envs_of_suite(s) for s in suites), reverse=True)
    contents = next(line for line in (BOARD / "README.md").read_text().splitlines() if line.startswith("Sections"))
    assert re.findall(r"\]\(#([^)]+)\)", contents) == [anchor(h) for h in headings]


def test_page_has_the_readmes_sections_in_order_and_its_links_reach_them(browser: Any) -> None:
    page, errors = open_page(browser, BOARD / "index.html")
    titles = page.eval_on_selector_all("section > h2", "hs => hs.map(h => h.textContent)")
    assert titles == [*readme_headings(), "Episodes"]
    links = page.eval_on_selector_all("nav#contents a", "as => as.map(a => a.getAttribute('href'))")
    ids = page.eval_on_selector_all("section", "ss => ss.map(s => '#' + s.id)")
    assert links == ids
    # The first screen: the broad suite's ranking, its first entry in view.
    first = page.eval_on_selector("#ranking-0 tbody tr", "r => r.getBoundingClientRect().bottom")
    assert first < 900 and page.text_content("section h2") == "suite breadth-v0"
    # A link brings its section's title below the contents, which stay at the top.
    page.click("nav#contents a[href='#generalization']")
    page.wait_for_function("document.querySelector('#generalization h2').getBoundingClientRect().top < 200")
    nav = page.eval_on_selector("nav#contents", "n => n.getBoundingClientRect().bottom")
    assert page.eval_on_selector("#generalization h2", "h => h.getBoundingClientRect().top") >= nav
    assert errors == []


def submission(name: str) -> dict[str, Any]:
    return json.loads((BOARD / "submissions" / name / "submission.json").read_text())


def test_a_long_recipe_folds_and_opens_whole(browser: Any) -> None:
    page, errors = open_page(browser, BOARD / "index.html")
    recipe = submission("cpu-sokoban-grpo-rl")["recipe"]
    row = page.locator("table.ranking tbody tr", has_text="cpu-sokoban-grpo-rl").first
    cell = row.locator("td.fold").last
    assert cell.locator("summary").text_content() == short_text(recipe)
    assert recipe not in cell.inner_text()  # rendered text: a closed <details> shows its summary only
    cell.locator("summary").click()
    assert recipe in cell.inner_text()
    # Folded, a ranking row is a few lines, not the 15 a wrapped recipe made.
    heights = page.eval_on_selector_all("table.ranking tbody tr:not(:has(details[open]))",
                                        "rows => rows.map(r => r.getBoundingClientRect().height)")
    assert max(heights) < 80, max(heights)
    # In full, unfolded, in the entries table.
    assert recipe in page.locator("#entries tbody tr", has_text="cpu-sokoban-grpo-rl").first.text_content()
    assert errors == []


def test_each_suite_shows_its_plot_unscaled(browser: Any) -> None:
    """At 1280 px every plot is drawn at its own size (no shrinking), one per suite in its section."""
    page, errors = open_page(browser, BOARD / "index.html")
    page.wait_for_function("Array.from(document.images).every(i => i.complete)")
    plots = page.eval_on_selector_all(
        "section img", "is => is.map(i => [i.closest('section').id, i.naturalWidth, i.clientWidth])")
    suites = [anchor(h) for h in readme_headings() if h.startswith(("suite ", "env "))]
    assert [section for section, _, _ in plots][:len(suites)] == suites
    assert all(0 < natural <= shown for _, natural, shown in plots), plots
    assert errors == []
