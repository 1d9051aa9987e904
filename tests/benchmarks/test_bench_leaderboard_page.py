"""How fast the committed leaderboard page (``leaderboard/index.html``, every entry) loads and answers in Chromium.

One round: a fresh tab opens the page and waits for its ``load`` event, then the first
click on the score header of the first ranking must sort that table. The timed span is
the whole of it; the page's own Navigation Timing (``domInteractive``, ``loadEventEnd``)
is printed beside it. Debian's Chromium, headless, through playwright (no download).
"""

from __future__ import annotations

from typing import Any

import pytest

from ..conftest import REPO_ROOT
from ..test_leaderboard_build import CHROMIUM, CHROMIUM_FLAGS

PAGE = REPO_ROOT / "leaderboard" / "index.html"


@pytest.fixture(scope="module")
def chromium() -> Any:
    playwright_api = pytest.importorskip("playwright.sync_api")
    if not CHROMIUM.exists():
        pytest.skip("no /usr/bin/chromium (apt-get install chromium)")
    with playwright_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS, headless=True)
        yield browser
        browser.close()


def test_bench_leaderboard_page_load_and_first_sort(benchmark: Any, chromium: Any) -> None:
    timings: list[dict[str, float]] = []
    orders: list[list[str]] = []

    def open_and_sort() -> None:
        tab = chromium.new_page(viewport={"width": 1280, "height": 900})
        tab.goto(PAGE.as_uri(), wait_until="load")
        tab.click("#ranking-0 thead th:text-is('score')")
        orders.append(tab.eval_on_selector_all("#ranking-0 tbody tr", "rows => rows.map(r => r.cells[2].dataset.sort)"))
        timings.append(tab.evaluate("""() => {
            const t = performance.getEntriesByType("navigation")[0];
            return {interactive: t.domInteractive, load: t.loadEventEnd};
        }"""))
        tab.close()

    benchmark.pedantic(open_and_sort, rounds=5, warmup_rounds=1)
    # The click sorted the ranking by score, ascending (the unranked reported row, no score, last).
    scores = [[float(value) for value in order if value] for order in orders]
    assert all(values == sorted(values) and len(values) >= 2 for values in scores)
    assert all(timing["load"] > 0 for timing in timings)
    print("navigation timing (ms):", [(round(t["interactive"]), round(t["load"])) for t in timings])
