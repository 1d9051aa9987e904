"""The committed page's games section, in headless Chromium: a ladder and a record table per game, from
every committed game entry; the same numbers as ``ladder.csv`` and ``games.csv``; entries linked to
their details; tables sortable like the rest of the page."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

from ragen_bench.leaderboard.tables import short_env

from .conftest import REPO_ROOT
from .test_leaderboard_build import browser, open_page  # noqa: F401

BOARD = REPO_ROOT / "leaderboard"


def csv_rows(name: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO((BOARD / name).read_text())))


def game_entries() -> dict[str, str]:
    """Each committed game entry's name -> its game (from its manifest)."""
    found = {}
    for folder in sorted((BOARD / "submissions").iterdir()):
        summary = json.loads((folder / "summary.json").read_text())
        if "games" in summary:
            found[folder.name] = summary["games"][0]["env_id"]
    return found


def test_the_games_section_holds_every_game_entry_and_the_csvs_numbers(browser: Any) -> None:
    entries = game_entries()
    games = sorted(set(entries.values()))
    assert len(games) == 17  # TicTacToe, ConnectFour, PrisonersDilemma, the 8 OpenSpiel ids and 6 TextArena games
    page, errors = open_page(browser, BOARD / "index.html")
    blocks = page.eval_on_selector_all("#games h3", """hs => hs.map(h => {
        const first = h.nextElementSibling;
        const tables = [first, first.nextElementSibling].map(d => d.querySelector('table'));
        return [h.textContent, tables.map(t => Array.from(t.tBodies[0].rows).map(
            r => Array.from(r.cells).map(c => c.textContent)))];
    })""")
    assert [title for title, _ in blocks] == [short_env(game) for game in games]
    ladder, records = csv_rows("ladder.csv"), csv_rows("games.csv")
    for game, (_, (ladder_rows, record_rows)) in zip(games, blocks, strict=True):
        expected = [row for row in ladder if row["env"] == game]
        # The ladder: rank, player, kind, rating, mu, sigma as the CSV has them, best rating first.
        assert [row[:4] for row in ladder_rows] == [[r["rank"], r["player"], r["kind"], f"{float(r['ordinal']):.3f}"]
                                                    for r in expected]
        ratings = [float(row[3]) for row in ladder_rows]
        assert ratings == sorted(ratings, reverse=True)
        # Every scripted opponent met is a player; every entry of the game has its record rows.
        assert {r["opponent"] + " (opponent)" for r in records if r["env"] == game} <= {row[1] for row in ladder_rows}
        assert sorted(row[0] for row in record_rows) == sorted(name for name, env in entries.items() if env == game)
    assert errors == []


def test_a_record_row_links_to_its_entry_and_the_ladder_sorts(browser: Any) -> None:
    page, errors = open_page(browser, BOARD / "index.html")
    link = page.locator("#games table[id^='record-'] tbody tr a").first
    name = link.text_content()
    link.click()
    page.wait_for_function("location.hash.startsWith('#entry-')")
    assert page.evaluate("location.hash") == f"#entry-{name}"
    assert page.locator(f"#entries tr[id='entry-{name}'] td").first.text_content() == name
    # A click on the ladder's "games" title sorts its rows by games, ascending.
    page.click("#ladder-0 th:text-is('games')")
    games = page.eval_on_selector_all("#ladder-0 tbody tr", "rs => rs.map(r => Number(r.cells[6].textContent))")
    assert games == sorted(games) and len(games) >= 3
    assert errors == []
