"""``ragen-bench leaderboard ladder [PATH ...]``: the games' rating ladder of game submissions, verified first.

Every folder is verified exactly as ``leaderboard verify`` does (every game replayed) before
one of its games is rated, so no ladder ever holds an unverified game; a folder that is no
game entry is refused in one line.  With no path, every game entry under ``--submissions``.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from ragen_bench.leaderboard.errors import LeaderboardError

if TYPE_CHECKING:
    from ragen_bench.leaderboard.verify import VerifiedRun


def game_runs(paths: list[Path]) -> list[VerifiedRun]:
    """Each folder verified; a single-agent one refused (the ladder rates games only)."""
    from ragen_bench.leaderboard.verify import verify

    runs = []
    for path in paths:
        run = verify(path)
        if "games" not in run.summary:
            raise LeaderboardError("is no game entry: the ladder rates games only (a single-agent entry is ranked "
                                   "by leaderboard build)", file=str(path))
        runs.append(run)
    return runs


def _game_entries(root: Path) -> list[VerifiedRun]:
    """Every submission under ``root`` verified (as ``build`` does), the game entries kept."""
    from ragen_bench.leaderboard.verify import verify

    if not root.is_dir():
        raise LeaderboardError("no submissions folder", file=str(root))
    runs = [verify(folder) for folder in sorted(root.iterdir())
            if not folder.name.startswith(".") and (folder.is_dir() or folder.is_symlink())]
    games = [run for run in runs if "games" in run.summary]
    if not games:
        raise LeaderboardError("holds no game entries", file=str(root))
    return games


def _ladder(args: argparse.Namespace) -> int:
    from ragen_bench.eval.report import format_table
    from ragen_bench.leaderboard.games_tables import games_board
    from ragen_bench.leaderboard.ladder import LADDER_COLUMNS
    from ragen_bench.leaderboard.tables import short_env

    runs = game_runs([Path(path) for path in args.paths]) if args.paths else _game_entries(Path(args.submissions))
    board = games_board(runs)
    blocks = []
    for env in board.envs():
        rows = [{title: row[key] for key, title in LADDER_COLUMNS.items()} for row in board.ladder if row["env"] == env]
        blocks.append(f"{short_env(env)}\n{format_table(rows)}")
    print("\n\n".join(blocks))
    return 0


def add_ladder(commands: argparse._SubParsersAction) -> None:
    """The ``ladder`` subcommand of ``ragen-bench leaderboard``."""
    ladder = commands.add_parser("ladder", help="verify game submissions and print each game's rating ladder")
    ladder.add_argument("paths", nargs="*", help="game submission folders (default: every one under --submissions)")
    ladder.add_argument("--submissions", default="leaderboard/submissions", help="default: leaderboard/submissions")
    ladder.set_defaults(handler=_ladder)
