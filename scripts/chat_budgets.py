"""Measure the chat budget each id needs: the optimal agent on the test panel, three ways.

    .venv/bin/python scripts/chat_budgets.py                       # every id, whole test panels
    .venv/bin/python scripts/chat_budgets.py RAGEN/Sudoku-4x4-v0 --limit 32

Per id, one markdown row: its declared budget (``ragen_bench.registry.chat_budget``), the optimal
agent's wins under the chat defaults, under the declared budget and with turns, actions and reply
length unbounded (only the env's own caps end an episode), and the most turns, actions and reply
characters among its unbounded wins.  An id beyond RAGEN's set declares that longest win when the defaults lose an
episode the unbounded run wins (``ragen_bench.registry.ChatBudget``); these rows are its evidence.
"""

from __future__ import annotations

import argparse
import sys

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import panels, registry
from ragen_bench.agents.scripted import play_optimal, unbounded
from ragen_bench.catalog import budget_text
from ragen_bench.chat.config import ChatConfig, budgeted_settings

HEADER = (
    "| id | declared budget | defaults | declared | unbounded | longest unbounded win (turns, actions, reply chars) |\n"
    "|---|---|---|---|---|---|"
)


def row(env_id: str, limit: int | None) -> str:
    seeds = panels.load(env_id, "test").seeds[:limit]
    declared = ChatConfig(**budgeted_settings(env_id))
    wins = {}
    for name, config in (("defaults", ChatConfig()), ("declared", declared), ("unbounded", unbounded(declared))):
        wins[name] = play_optimal(env_id, config, seeds)
    won = [t for t in wins["unbounded"] if t.success]
    chars = max((turn.response_chars for t in won for turn in t.turns), default=0)
    longest = f"{max(t.num_turns for t in won)}, {max(t.num_actions for t in won)}, {chars}" if won else "-"
    counts = " | ".join(f"{sum(t.success for t in wins[name])}/{len(seeds)}" for name in wins)
    return f"| `{env_id}` | {budget_text(registry.chat_budget(env_id))} | {counts} | {longest} |"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ids", nargs="*", help="ids to measure (default: every registered id)")
    parser.add_argument("--limit", type=int, default=None, help="the first N test seeds only")
    args = parser.parse_args(argv)
    print(HEADER)
    for env_id in args.ids or registry.ENV_IDS:
        print(row(env_id, args.limit), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
