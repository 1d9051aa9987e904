"""The games' rating ladder: one openskill rating per player and game, from verified games only.

Players are the game entries' players (an entry's ``player``, by default its name: entries of
one agent against different opponents pool their games under one player) and the opponents
they played (a scripted ``minimax``, ``mcts`` ... or an agent opponent, by its label).  Each
verified game is one two-player match: a win ranks the entry's player first, a loss second,
and a draw is a tie (equal ranks), which moves both ratings toward each other.

The model is openskill's Plackett-Luce with fixed parameters (:data:`MODEL`) and ``tau = 0``:
the players are frozen checkpoints and scripts whose skill does not drift between games, so
no variance is added back before each update.  The updates are sequential, so the order of
the games is part of the result: it is fixed as rounds, by ``(game, seed, sample, player,
opponent)`` -- every player's game on a seed before any game on the next seed -- so that no
entry's games all come before another's.  Same games in, same ratings out, byte for byte:
the arithmetic is the same floats in the same order, and the rows round to
:data:`DIGITS` decimals.  There is no overall ladder across games: a rating says how a player
fares at one game's rules, and skill at Nim says nothing of skill at poker.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ragen_bench.leaderboard.errors import LeaderboardError, needs_extra

# openskill's defaults (mu 25, sigma 25/3, beta 25/6) written out, so a new default cannot move a rating.
MODEL = {"mu": 25.0, "sigma": 25.0 / 3.0, "beta": 25.0 / 6.0, "tau": 0.0}
DIGITS = 3
# The ranks of (entry's player, opponent) for the entry's outcome; lower ranks first, equal ranks tie.
RANKS = {"win": [0, 1], "draw": [0, 0], "loss": [1, 0]}
OPPONENT_SUFFIX = " (opponent)"

LADDER_COLUMNS = {
    "rank": "rank", "player": "player", "kind": "kind", "ordinal": "rating (mu - 3 sigma)", "mu": "mu",
    "sigma": "sigma", "games": "games", "wins": "wins", "draws": "draws", "losses": "losses",
}
LADDER_TEXT = (
    "ladder: per game, an openskill Plackett-Luce rating (mu, sigma) per player, from the verified games only; "
    "ranked by the conservative rating mu - 3 sigma. Players are the entries' players and the opponents they "
    "played; a draw is a tie. The games are rated in rounds by seed (fixed order, tau = 0), so the same games "
    "give the same ratings."
)


@dataclass(frozen=True, order=True)
class RatedGame:
    """One verified game as the ladder reads it; the field order is the rating order."""

    env: str
    seed: int
    sample: int
    player: str  # the entry's player
    opponent: str  # the opponent's label, as the record names it
    outcome: str  # the entry's: win, draw or loss
    entry: str  # the entry the game comes from


def rated_games(entry: str, player: str, rows: Sequence[Mapping[str, Any]],
                games: Sequence[Mapping[str, Any]]) -> list[RatedGame]:
    """The games of one verified game run: its summary rows (seed, sample) beside its replayed games, in step."""
    return [RatedGame(row["env_id"], row["seed"], row["sample"], player, game["game"]["opponent"],
                      game["game"]["outcome"], entry)
            for row, game in zip(rows, games, strict=True)]


def check_unique(games: Iterable[RatedGame]) -> None:
    """Refuse one player's game counted twice: two of its entries holding the same game against the same opponent."""
    seen: dict[tuple[str, int, int, str, str], str] = {}
    for game in games:
        key = (game.env, game.seed, game.sample, game.player, game.opponent)
        first = seen.setdefault(key, game.entry)
        if first != game.entry:
            raise LeaderboardError(
                f"entries {first!r} and {game.entry!r} both rate as player {game.player!r} and both hold "
                f"{game.env} seed {game.seed} sample {game.sample} against {game.opponent}: a game is rated once; "
                "give one of them another player", file=game.entry, field="player",
            )


def ladders(games: Iterable[RatedGame]) -> list[dict[str, Any]]:
    """The ladder rows of every game, by game then rank: each player's rating, its ordinal and its record."""
    skill = needs_extra("openskill.models")
    model = skill.PlackettLuce(**MODEL)
    ratings: dict[tuple[str, str, str], Any] = {}
    record: dict[tuple[str, str, str], list[int]] = {}
    for game in sorted(games):
        ours, theirs = (game.env, "entry", game.player), (game.env, "opponent", game.opponent)
        for key in (ours, theirs):
            if key not in ratings:
                ratings[key], record[key] = model.rating(), [0, 0, 0]
        [[ratings[ours]], [ratings[theirs]]] = model.rate([[ratings[ours]], [ratings[theirs]]],
                                                          ranks=RANKS[game.outcome])
        index = ("win", "draw", "loss").index(game.outcome)
        record[ours][index] += 1
        record[theirs][2 - index] += 1
    rows = []
    for env in sorted({key[0] for key in ratings}):
        board = []
        for key in (key for key in ratings if key[0] == env):
            rating, (wins, draws, losses) = ratings[key], record[key]
            board.append({
                "env": env, "player": key[2] + (OPPONENT_SUFFIX if key[1] == "opponent" else ""),
                "kind": key[1], "mu": round(rating.mu, DIGITS), "sigma": round(rating.sigma, DIGITS),
                "ordinal": round(rating.mu - 3 * rating.sigma, DIGITS), "games": wins + draws + losses,
                "wins": wins, "draws": draws, "losses": losses,
            })
        board.sort(key=lambda row: (-row["ordinal"], row["player"]))
        for row in board:
            row["rank"] = 1 + sum(other["ordinal"] > row["ordinal"] for other in board)
        rows.extend(board)
    return rows
