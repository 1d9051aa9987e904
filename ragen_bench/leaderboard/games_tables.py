"""The leaderboard's games section: per game, the rating ladder and each entry's record against each opponent.

Both come from verified game entries only (:func:`ragen_bench.leaderboard.build.load_entries`
verifies every folder first): the win/draw/loss table is each entry's recomputed ``games``
summary (:func:`ragen_bench.eval.games.summarize_games`, 95% Wilson intervals), the ladder
:func:`ragen_bench.leaderboard.ladder.ladders` of the replayed games.  ``README.md`` and
``index.html`` show the same tables in the same order.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.ladder import LADDER_COLUMNS, LADDER_TEXT, check_unique, ladders, rated_games
from ragen_bench.leaderboard.tables import anchor, markdown_table, short_env

if TYPE_CHECKING:
    from ragen_bench.leaderboard.verify import VerifiedRun

GAMES_HEADING = "Games"
OUTCOMES = ("win", "draw", "loss")
RECORD_COLUMNS = {
    "entry": "entry", "player": "player", "opponent": "opponent", "coverage": "coverage",
    **{key: title for outcome in OUTCOMES
       for key, title in ((outcome, outcome), (f"{outcome}_ci95", f"{outcome} 95% CI"))},
    "illegal": "illegal moves", "forfeits": "forfeits", "length": "mean length",
}
RECORD_TEXT = (
    "record: per game, each entry against each fixed opponent on the test panel (both seats, the seed deciding "
    "the seat): win, draw and loss rates with 95% Wilson intervals, the illegal-move rate (of the entry's turns: "
    "replies that were malformed or named no legal move), forfeits and the mean game length in moves."
)


@dataclass(frozen=True)
class GamesBoard:
    """The games section's rows: each entry's record per opponent, and the ladder."""

    records: list[dict[str, Any]]
    ladder: list[dict[str, Any]]

    def envs(self) -> list[str]:
        return sorted({row["env"] for row in self.records})

    def note(self) -> str:
        count = len(self.envs())
        return f"{count} game{'s' * (count != 1)}"


def player_of(run: VerifiedRun) -> str:
    return run.info.player or run.info.name


def games_board(runs: Sequence[VerifiedRun]) -> GamesBoard:
    """The games section of the verified game runs ``runs`` (none: an empty board)."""
    records, games = [], []
    names = [run.info.name for run in runs]
    if len(set(names)) < len(names):
        twice = next(name for name in names if names.count(name) > 1)
        raise LeaderboardError(f"entry {twice!r} is given twice: its games would be rated twice", field="name")
    for run in runs:
        config = run.manifest["config"]
        panels = {(env["env_id"], env["split"]): env["panel_seeds"] for env in run.manifest["envs"]}
        for group in run.summary["games"]:
            seeds = group["games"] // config["samples"]
            records.append({
                "env": group["env_id"], "entry": run.info.name, "player": player_of(run),
                "opponent": group["opponent"], "games": group["games"],
                "coverage": f"{seeds}/{panels[(group['env_id'], group['split'])]} seeds x {config['samples']}",
                **{outcome: group[f"{outcome}_rate"] for outcome in OUTCOMES},
                **{f"{outcome}_ci95": "[{:.3f}, {:.3f}]".format(*group[f"{outcome}_ci95"]) for outcome in OUTCOMES},
                "illegal": group["illegal_move_rate"], "forfeits": group["forfeits"],
                "length": group["mean_game_length"],
            })
        games.extend(rated_games(run.info.name, player_of(run), run.rows, run.games))
    check_unique(games)
    records.sort(key=lambda row: (row["env"], row["opponent"], -row["win"], -row["draw"], row["entry"]))
    return GamesBoard(records=records, ladder=ladders(games))


def refuse_player(run: VerifiedRun) -> None:
    """``player`` names a game entry's player on the ladder; a single-agent entry has no ladder to be on."""
    if run.info.player is not None:
        raise LeaderboardError("player is for game entries (the games' ladder); this entry plays no game",
                               file=str(run.path / "submission.json"), field="player")


def rows_of(rows: Sequence[Mapping[str, Any]], env: str) -> list[Mapping[str, Any]]:
    return [row for row in rows if row["env"] == env]


def games_readme(board: GamesBoard) -> str:
    """The README's games section: per game, its ladder and its records."""
    parts = [f"## {GAMES_HEADING}\n\n{LADDER_TEXT} {RECORD_TEXT}"]
    for env in board.envs():
        parts.append(f"### {short_env(env)}: ladder\n\n" + markdown_table(rows_of(board.ladder, env), LADDER_COLUMNS))
        parts.append(f"### {short_env(env)}: record against each opponent\n\n"
                     + markdown_table(rows_of(board.records, env), RECORD_COLUMNS))
    return "\n\n".join(parts)
