"""The paper rows of a suite section: what a benchmark's own authors published for the suite it mirrors.

Today one suite has them: ``balrog-v0``, beside BALROG's text-track leaderboard
(:data:`ragen_bench.data.balrog.PUBLISHED`).  Its rows are per world, as BALROG scores them, not per id
as our rankings are, so they stand in a table of their own under the suite's ranking, marked as
reported: no episode of theirs was replayed here, and their episodes are not our panels' seeds.
README and page both read :func:`paper_table`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ragen_bench.leaderboard.tables import REPORTED_MARK


@dataclass(frozen=True)
class PaperTable:
    """A suite's paper rows: their heading, what they are and where they come from, and the rows."""

    heading: str
    note: str
    columns: dict[str, str]
    rows: list[dict[str, Any]]


def paper_table(suite: str) -> PaperTable | None:
    """The paper rows of section ``suite`` ("suite <name>"), or None when its suite has none."""
    from ragen_bench.data import balrog

    if suite != f"suite {balrog.SUITE}":
        return None
    columns = {"model": "model", "agent": "agent", "date": "date", **balrog.WORLDS, "average": "average",
               "episodes": "episodes per world"}
    rows = [{"model": row.model, "agent": row.agent, "date": row.date,
             # BALROG's % progression as a fraction, the scale of our success rates.
             **{world: row.progress[world] / 100 for world in balrog.WORLDS}, "average": row.average / 100,
             "episodes": "/".join(str(row.episodes[world]) for world in balrog.WORLDS)}
            for row in sorted(balrog.PUBLISHED, key=lambda row: (-row.average, row.model))]
    note = (f"BALROG's text-track leaderboard as its authors publish it ({balrog.PUBLISHED_SOURCE}, the data of "
            f"{balrog.PUBLISHED_URL}; paper {balrog.PAPER_URL}): {REPORTED_MARK}. Per world, BALROG's progression "
            "from 0 to 1 (success in BabyAI, BabaIsAI and MiniHack, achievements in Crafter, points in TextWorld, "
            "dungeon and experience levels in NetHack) over its own unseeded episodes; average: the mean of the six. "
            "Our ranking above scores the same progress on each id's first test seeds (averaged over our ids, not per "
            "world), and leaves out BabaIsAI and some tasks (ragen_bench/data/balrog.py), so the two tables stand "
            "side by side, not as one ranking.")
    return PaperTable(heading=f"{suite}: BALROG's published rows ({REPORTED_MARK})", note=note, columns=columns,
                      rows=rows)
