"""What ``leaderboard verify`` adds for a multi-agent game run (``RAGEN/TicTacToe-v0`` ...).

A game record is the agent seat's trajectory plus ``game`` (seat, opponent, outcome, every
move of every seat, the totals per seat; :func:`ragen_bench.eval.games.game_record`).  It is
replayed by :func:`ragen_bench.eval.replay.replay_game`, the code that plays games: the
recorded replies answer for the agent's seat (and for an agent opponent's, from its own
recorded trajectory), a scripted opponent is built afresh and chooses again from the
seed's random stream, and the game is dealt from the seed -- so no move, deal, outcome or
total of the record is trusted.  The record the replay writes must equal the submitted
one field by field; a difference names the episode and the seat whose side it is.

Beyond what single-agent runs are checked for, a game entry must play every seat (the
seat decides who moves first) against the opponent its manifest names, and its summary's
``games`` (win/draw/loss, illegal moves, length) must equal :func:`summarize_games` of
the replayed records.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ragen_bench.leaderboard.errors import LeaderboardError, as_leaderboard_error
from ragen_bench.leaderboard.tokens import check_tokens

if TYPE_CHECKING:
    from ragen_bench.eval.config import EvalConfig


def check_seats(plan: Sequence[tuple[str, str, int, int]], *, name: str) -> None:
    """Refuse a game run that leaves a seat of a game unplayed (its planned episodes all one seed, say)."""
    from ragen_bench.games.registry import game_entry
    from ragen_bench.games.seeds import seating

    played: dict[str, set[str]] = {}
    for env_id, _, seed, _ in plan:
        played.setdefault(env_id, set()).add(seating(env_id, seed)[0])
    for env_id, seats in sorted(played.items()):
        count = game_entry(env_id).seats
        if len(seats) < count:
            every = "both seats" if count == 2 else f"all {count} seats"
            raise LeaderboardError(
                f"plays only {', '.join(sorted(seats))}: a game entry plays {every} (the seat decides who moves "
                f"first, and the seed decides the seat); run at least the panel's first {count} seeds (play --seed "
                "plays one)", file=name, field="config.limit",
            )


def replay_game_record(record: Mapping[str, Any], run: EvalConfig, where: Mapping[str, Any]) -> dict[str, Any]:
    """Replay one game record of ``run``, the manifest's checked config; what its summary reads.

    After the replay has matched, each chat seat's token counts are checked as a single-agent
    turn's are, the prompt of turn ``k`` being the seat's first ``2k`` messages.
    """
    from ragen_bench.eval import metrics
    from ragen_bench.eval.replay import replay_game

    with as_leaderboard_error():
        replay_game(record, run.game, run.env_kwargs, where=where, opponent=run.opponent)
    game = record["game"]
    seat = game["agent_seat"]
    sides = [(seat, record)]
    if game["opponent_trajectory"] is not None:  # an agent opponent, in a two-player game: the other seat
        sides.append(("player_1" if seat == "player_0" else "player_0", game["opponent_trajectory"]))
    for side, trajectory in sides:
        messages = trajectory["messages"]
        for number, turn in enumerate(trajectory["turns"], start=1):
            prompt = messages[: 2 * number]
            size = None if turn["prompt_tokens"] is None else (sum(len(m["content"]) for m in prompt), len(prompt))
            check_tokens(turn, size, run.game.chat, {**where, "seat": side, "turn": number})
    # What summarize_games reads, and no more: a run's records are kept until the summary is checked.
    return {
        "env_id": record["env_id"], "split": record["split"],
        "game": {key: game[key] for key in ("opponent", "outcome", "agent_seat", "forfeit", "moves")},
        "turns": [{"valid": turn["valid"], "null_content": metrics._null_content(turn)} for turn in record["turns"]],
    }
