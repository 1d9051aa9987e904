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
    assert suites[0] == "suite textarena-v0"
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
    assert first < 900 and page.text_content("section h2") == "suite textarena-v0"
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
    # The plots (inline); the viewer's frames load lazily, only once scrolled to (a long-horizon first episode's are
    # below the fold), so they are not waited for.
    page.wait_for_function("Array.from(document.images).filter(i => i.loading !== 'lazy').every(i => i.complete)")
    plots = page.eval_on_selector_all(
        "section img:not([loading=lazy])", "is => is.map(i => [i.closest('section').id, i.naturalWidth, i.clientWidth])")
    suites = [anchor(h) for h in readme_headings() if h.startswith(("suite ", "env "))]
    assert [section for section, _, _ in plots][:len(suites)] == suites
    assert all(0 < natural <= shown for _, natural, shown in plots), plots
    assert errors == []


# What the comparison with TextArena's, BALROG's and tau-bench's pages brought (docs/leaderboard.md): a line on
# how to read each ranking, help on every column title, a legend of the abbreviations, entries that link to
# their details, and the score column marked as the one the ranking orders by.

RANKINGS = "table.ranking"


def suite_envs() -> dict[str, set[str]]:
    envs: dict[str, set[str]] = {}
    for row in csv.DictReader(io.StringIO((BOARD / "leaderboard.csv").read_text())):
        envs.setdefault(anchor(row["suite"]), set()).add(row["env"])
    return envs


def test_every_ranking_column_title_has_help(browser: Any) -> None:
    page, errors = open_page(browser, BOARD / "index.html")
    tables = page.eval_on_selector_all(RANKINGS, """ts => ts.map(t => [t.closest('section').id,
        Array.from(t.tHead.rows[0].cells).map(h => [h.textContent, h.getAttribute('title') || ''])])""")
    envs = suite_envs()
    assert len(tables) == len(envs)
    for section, headers in tables:
        assert all(len(help_text) > 20 for _, help_text in headers), headers
        # An env's column (titled by the id's middle) names the whole id in its help.
        named = {help_text.split(":")[0] for title, help_text in headers if help_text.startswith("RAGEN/")}
        assert named == envs[section], section
        assert all(f"RAGEN/{title}-v0: " in help_text for title, help_text in headers if help_text.startswith("RAGEN/"))
    assert errors == []


def test_each_ranking_has_a_legend_of_the_abbreviations_it_uses(browser: Any) -> None:
    page, errors = open_page(browser, BOARD / "index.html")
    tables = page.eval_on_selector_all(RANKINGS, """ts => ts.map(t => {
        const titles = Array.from(t.tHead.rows[0].cells).map(h => h.textContent);
        const budget = titles.indexOf('budget');
        const legend = t.closest('div.scroll').nextElementSibling;
        return [titles, Array.from(t.tBodies[0].rows).map(r => r.cells[budget].textContent),
                legend.matches('dl.legend') ? Array.from(legend.querySelectorAll('dt')).map(d => d.textContent) : []];
    })""")
    assert tables
    for titles, budgets, terms in tables:
        used = {token for title in titles for token in re.findall(r"\b[A-Z]{2,}\b", title)}
        assert used <= {token for term in terms for token in re.findall(r"\b[A-Z]{2,}\b", term)}, (used, terms)
        assert any("budget" in term for term in terms) == any(re.search(r"\d+/\d+/\d+", b) for b in budgets)
        assert ("hN" in terms) == any(re.search(r"\bh\d+\b", b) for b in budgets)
        assert "env columns" in terms
    assert errors == []


def test_the_legend_names_only_what_its_ranking_uses() -> None:
    from ragen_bench.leaderboard.page import _legend

    legend = _legend({"rank": "rank", "RAGEN/RG-leg_counting-v0": "RG-leg_counting"}, [{"budget": "800/1/700 h5"}])
    terms = re.findall(r"<dt>(.*?)</dt>", legend)
    assert terms == ["env columns", "RG-", "budget t/a/e", "hN"]
    assert re.findall(r"<dt>(.*?)</dt>", _legend({"score_ci95": "95% CI"}, [{"budget": "each id&#x27;s"}])) == [
        "env columns", "CI"]
    assert "each id&#x27;s" in _legend({}, [{"budget": "each id's"}])


def test_an_entry_links_to_its_details(browser: Any) -> None:
    page, errors = open_page(browser, BOARD / "index.html")
    links = page.eval_on_selector_all(f"{RANKINGS} tbody tr", """rows => rows.map(r => {
        const a = r.cells[1].querySelector('a');
        const target = a && document.getElementById(a.getAttribute('href').slice(1));
        return [r.cells[0].textContent, r.cells[1].textContent, target ? target.closest('table').id : null,
                target ? target.cells[0].textContent : null];
    })""")
    ranked = [row for row in links if row[0] != "-"]
    assert ranked and all(table == "entries" and name == entry for _, name, table, entry in ranked), ranked
    # The reported row is no entry: it has no details row, so no link.
    assert all(table is None for rank, _, table, _ in links if rank == "-")
    page.click(f"{RANKINGS} tbody tr a >> nth=1")  # the second entry on the page (a ranking may hold one)
    page.wait_for_function("location.hash.startsWith('#entry-')")
    target = page.evaluate("location.hash")
    box = page.eval_on_selector(target, "r => [r.getBoundingClientRect().top, getComputedStyle(r).backgroundColor]")
    nav = page.eval_on_selector("nav#contents", "n => n.getBoundingClientRect().bottom")
    assert nav <= box[0] < 900 and box[1] != "rgba(0, 0, 0, 0)", box
    assert errors == []


def test_the_score_is_the_marked_column(browser: Any) -> None:
    page, errors = open_page(browser, BOARD / "index.html")
    tables = page.eval_on_selector_all(RANKINGS, """ts => ts.map(t => {
        const titles = Array.from(t.tHead.rows[0].cells).map(h => h.textContent);
        const look = c => [Number(getComputedStyle(c).fontWeight), getComputedStyle(c).backgroundImage,
                           c.style.getPropertyValue('--score'), c.dataset.sort];
        return [titles.indexOf('score'), Array.from(t.tHead.rows[0].cells).map(look),
                Array.from(t.tBodies[0].rows).map(r => Array.from(r.cells).map(look))];
    })""")
    assert len(tables) == len(suite_envs())
    for index, headers, rows in tables:
        assert headers[index][0] >= 700 and all(weight >= 700 for weight, *_ in headers)  # titles are bold anyway
        for row in rows:
            weight, bar, length, value = row[index]
            if value:  # every ranked entry's score: bold, over a bar as long as the score
                assert weight >= 700 and "linear-gradient" in bar and abs(float(length) - float(value)) < 1e-4
            others = [cell for number, cell in enumerate(row) if number != index]
            assert all(weight < 600 and bar == "none" for weight, bar, _, _ in others), row
    assert errors == []


def test_each_ranking_says_in_one_line_how_to_read_it(browser: Any) -> None:
    page, errors = open_page(browser, BOARD / "index.html")
    lines = page.eval_on_selector_all(RANKINGS, """ts => ts.map(t => {
        const p = t.closest('div.scroll').previousElementSibling;
        const envs = Array.from(t.tHead.rows[0].cells).filter(h => (h.title || '').startsWith('RAGEN/')).length;
        return [p.matches('p.howto') ? p.textContent : '', envs,
                p.getBoundingClientRect().height / parseFloat(getComputedStyle(p).fontSize)];
    })""")
    for text, envs, height in lines:
        assert text.startswith("How to read: ranked by score")
        assert (f"its {envs} envs'" in text) if envs > 1 else ("its env's" in text)
        assert height < 2, (text, height)  # one line at 1280 px
    assert errors == []


def test_the_comparison_screenshots_are_there_and_small() -> None:
    """docs/leaderboard.md shows the four first screens side by side: each 1280x800, a few hundred KB in all."""
    from PIL import Image

    docs = REPO_ROOT / "docs"
    section = (docs / "leaderboard.md").read_text().split("## Compared with TextArena, BALROG and tau-bench", 1)[1]
    shown = re.findall(r"!\[[^\]]*\]\((leaderboard-compare/[^)]+\.png)\)", section.split("\n## ", 1)[0])
    assert sorted(shown) == sorted(f"leaderboard-compare/{p.name}" for p in (docs / "leaderboard-compare").iterdir())
    assert len(shown) == 4
    for name in shown:
        with Image.open(docs / name) as image:
            assert image.size == (1280, 800), name
    assert sum((docs / name).stat().st_size for name in shown) < 300_000
