"""Write the "Chat budget" block of every family's env card from the id table.

    .venv/bin/python scripts/chat_budget_cards.py   # rewrites data/<family>/README.md's block

The block (``ragen_bench.catalog.budget_block``) lies between its markers; a card without them
gets a "## Chat budget" section before "## Version history".  tests/test_chat_budgets.py checks
that every card holds the block its ids' budgets make.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ragen_bench.catalog import BUDGET_BEGIN, BUDGET_END, budget_block
from ragen_bench.registry import ENTRIES

DATA = Path(__file__).resolve().parents[1] / "data"
HISTORY = "## Version history"


def rewrite(text: str, block: str) -> str:
    """``text`` with its budget block replaced by ``block`` (or a new section holding it)."""
    if BUDGET_BEGIN in text:
        start, end = text.index(BUDGET_BEGIN), text.index(BUDGET_END) + len(BUDGET_END)
        return text[:start] + block + text[end:]
    at = text.index(HISTORY)
    return f"{text[:at]}## Chat budget\n\n{block}\n\n{text[at:]}"


def main() -> int:
    for family in dict.fromkeys(row.family for row in ENTRIES):
        card = DATA / family / "README.md"
        card.write_text(rewrite(card.read_text(encoding="utf-8"), budget_block(family)), encoding="utf-8")
        print(f"wrote {card}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
