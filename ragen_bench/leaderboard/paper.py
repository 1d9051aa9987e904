"""The paper rows of a suite section: what a benchmark's own authors published for the suite it mirrors.

Today one suite has them: ``balrog-v0``, beside BALROG's text-track leaderboard
(:data:`ragen_bench.data.balrog.PUBLISHED`).  Its rows are per world, as BALROG scores them, not per id
as our rankings are, so they stand in a table of their own under the suite's ranking, marked as
reported: no episode of theirs was replayed here, and their episodes are not our panels' seeds.
Beside them, :func:`ours_by_world` folds the suite's verified entries into the same per-world columns.
README and page both read :func:`paper_table` and :func:`ours_by_world`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
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


def ours_by_world(suite: str, detail: Sequence[Mapping[str, Any]]) -> PaperTable | None:
    """The suite's verified entries in BALROG's columns (None for a suite without paper rows, or no entry).

    A world's number is its ids' progress pooled over their episodes, as BALROG averages a world's
    episodes; the average is over the worlds played here (BabaIsAI never is), so it is the mean of five.
    """
    from ragen_bench.data import balrog

    if suite != f"suite {balrog.SUITE}" or not detail:
        return None
    world_of = {task.env_id: task.world for task in balrog.TASKS if task.env_id is not None}
    # Every entry of a suite has rows for all its ids (verify holds it to the suite), so all play these worlds.
    played = [world for world in balrog.WORLDS if any(world_of.get(row["env"]) == world for row in detail)]
    rows = []
    for entry in sorted({row["entry"] for row in detail}):
        envs = [row for row in detail if row["entry"] == entry]
        progress, episodes = {}, {}
        for world in played:
            mine = [row for row in envs if world_of.get(row["env"]) == world]
            episodes[world] = sum(row["episodes"] for row in mine)
            progress[world] = math.fsum(row["progress"] * row["episodes"] for row in mine) / episodes[world]
        rows.append({"entry": entry, "model": envs[0]["model"], **progress,
                     "average": math.fsum(progress.values()) / len(played),
                     "episodes": "/".join(str(episodes.get(world, 0)) for world in balrog.WORLDS)})
    columns = {"entry": "entry", "model": "model", **balrog.WORLDS, "average": f"average ({len(played)} world{'s' if len(played) != 1 else ''})",
               "episodes": "episodes per world"}
    note = ("The entries ranked above, in BALROG's columns: per world, the progress of its ids pooled over their "
            f"episodes (verified by replay); average: the mean over the {len(played)} worlds played here (BabaIsAI "
            "is left out: ragen_bench/data/balrog.py), where BALROG's average is over six.")
    return PaperTable(heading=f"{suite}: our entries by BALROG's worlds", note=note, columns=columns,
                      rows=sorted(rows, key=lambda row: (-row["average"], row["entry"])))
