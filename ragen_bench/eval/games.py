"""Evaluating an agent at a multi-agent game against a fixed opponent.

``ragen-bench eval env=RAGEN/TicTacToe-v0 agent=... opponent=...`` plays one game per
planned episode (panel seed x sample).  The seed decides the agent's seat
(:func:`ragen_bench.games.seeds.agent_seat`: seats go round along a panel) and the
game's random stream (opponent tie-breaks, the Prisoner's Dilemma's length).

``opponent`` is a scripted player of the game by name (``random``, ``minimax``,
``strong``, ``tit_for_tat`` ...; ``null``: the game's default) or an agent config
mapping (``{name: hf, model: ...}``), which plays through the chat layer like the agent.

Each game is one line of ``episodes.jsonl``: the agent seat's trajectory (the usual
record, ``success`` meaning a win, so resume, shards, merge and compare read it
unchanged) plus a ``game`` object: seat, opponent, outcome, the moves of every seat and
the opponent's own trajectory when it is a chat agent (two-player games).  In a game of more
seats a scripted opponent plays each other seat.  :func:`summarize_games` reduces
those to win/draw/loss rates with 95% Wilson intervals, the illegal-move rate, the
agent's replies without content and the mean game length; ``summary.json`` carries them
under ``games``.
"""

from __future__ import annotations

import math
from dataclasses import replace
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragen_bench import runfiles
from ragen_bench.eval import metrics, rundir
from ragen_bench.eval.config import EvalConfig, scripted_opponents
from ragen_bench.eval.plan import Instance, batches

if TYPE_CHECKING:
    from ragen_bench.chat.protocol import AgentReply, AgentRequest

OUTCOMES = ("win", "draw", "loss")


class _SeatView:
    """What a privileged scripted agent (``random``) may read of a game: the move names and the legal moves.

    A free-text game (TextArena's) has no names; its seat's action space lists the moves its text showed (``valid``).
    """

    __slots__ = ("_game", "_seat", "action_names", "action_space")

    def __init__(self, game: Any, seat: str) -> None:
        self._game, self._seat = game, seat
        self.action_names = None if game.action_names is None else tuple(game.action_names)
        self.action_space = game.action_space(seat)

    def legal_actions(self) -> list[int]:
        """The seat's legal moves in the live game now: the ones of its action mask (none for a free-text game)."""
        if self.action_names is None:
            return []
        mask = self._game.observe(self._seat)["action_mask"]
        return [int(move) for move in mask.nonzero()[0]]

    def optimal_action(self, steps_left: int | None = None) -> None:
        return None  # no single-agent optimum exists in a game

    def optimal_plan(self, max_actions: int) -> None:
        return None

    def baseline_action(self, steps_left: int | None = None) -> None:
        return None  # no scripted baseline for a seat either


class _PrivilegedSeat:
    """Gives a ``needs_live_env`` agent its game's seat view (move names, legal moves) with every request."""

    def __init__(self, agent: Any, views: Mapping[str, _SeatView]) -> None:
        self.agent, self.name, self.views = agent, agent.name, dict(views)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return self.agent.act([replace(request, live_env=self.views[request.episode_key]) for request in requests])


def play_games(
    config: EvalConfig,
    todo: Sequence[Instance],
    agent: Any,
    opponent_agent: Any,
    rows: list[metrics.Row],
    progress: Any,
    on_record: Callable[[Mapping[str, Any]], None] | None = None,
) -> None:
    """Play ``todo`` of a game run in lock-step groups; each finished game is appended to the log and ``rows``.

    ``opponent_agent`` is the opponent built from ``config.opponent_agent`` (else a fresh scripted
    ``config.opponent`` plays each game); ``on_record`` sees each game's log line once it is written.
    """
    from ragen_bench.chat import GameMatch, play_matches
    from ragen_bench.chat.protocol import wants_live_env
    from ragen_bench.games.seeds import seating

    with rundir.EpisodeLog(config.out / rundir.EPISODES) as log:
        for group in batches(todo, config.lockstep_episodes):
            matches = []
            for instance in group:
                seat, others = seating(instance.env_id, instance.seed)
                # A scripted opponent of its own at each other seat (each keeps its own state), or the agent opponent.
                players = {seat: agent, **{other: opponent_agent or scripted_opponents(instance.env_id)[config.opponent]()
                                           for other in others}}
                match = GameMatch(
                    instance.env_id, players, config.game, seed=instance.seed, split=instance.split,
                    sample=instance.sample, env_kwargs=config.env_kwargs,
                )
                matches.append(match)
            for player in (agent, opponent_agent):
                if player is not None and wants_live_env(player):
                    _privilege(matches, player)

            def record(result: Any) -> None:
                data = game_record(result, config.opponent)
                log.append(data)
                row = metrics.episode_row(data)
                rows.append(row)
                progress.add(row)
                if on_record is not None:
                    on_record(data)

            play_matches(matches, on_finished=record)
            log.sync()
            progress.refresh()


def _privilege(matches: Sequence[Any], agent: Any) -> None:
    """Seat a wrapper of ``agent`` that hands it each game's seat view (the privileged channel)."""
    views = {}
    for match in matches:
        seat = next(seat for seat, player in match.players.items() if player is agent)
        views[match.seats[seat].key] = _SeatView(match.game, seat)
    wrapper = _PrivilegedSeat(agent, views)
    for match in matches:
        match.players = {seat: wrapper if p is agent else p for seat, p in match.players.items()}


def game_record(result: Any, opponent: str) -> dict[str, Any]:
    """The log line of one game: the agent seat's trajectory dict plus ``game`` (see the module docstring).

    ``opponent``: the opponent's label (:attr:`~ragen_bench.eval.config.EvalConfig.opponent`).
    """
    from ragen_bench.games.seeds import seating

    seat, others = seating(result.env_id, result.seed)
    data = result.trajectories[seat].to_dict()
    rival = result.trajectories.get(others[0]) if len(others) == 1 else None  # an agent opponent: two-seat games
    data["game"] = {
        "agent_seat": seat,
        "opponent": opponent,
        "outcome": result.outcome(seat),
        "winner": result.winner,
        "forfeit": result.forfeit,
        "moves": [[who, move] for who, move in result.moves],
        "totals": dict(result.totals),
        "opponent_trajectory": None if rival is None else rival.to_dict(),
    }
    return data


def summarize_games(records: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per ``(env_id, split, opponent)``: outcome rates (95% Wilson intervals), illegal moves, null replies, length."""
    groups: dict[tuple[str, str, str], list[Mapping[str, Any]]] = {}
    for record in records:
        game = record["game"]
        groups.setdefault((record["env_id"], record["split"], game["opponent"]), []).append(record)
    summaries = []
    for (env_id, split, opponent), games in sorted(groups.items()):
        n = len(games)
        counts = {outcome: sum(g["game"]["outcome"] == outcome for g in games) for outcome in OUTCOMES}
        turns = [turn for g in games for turn in g["turns"]]
        summary: dict[str, Any] = {"env_id": env_id, "split": split, "opponent": opponent, "games": n}
        for outcome in OUTCOMES:
            summary[f"{outcome}_rate"] = counts[outcome] / n
            summary[f"{outcome}_ci95"] = list(metrics.wilson_interval(counts[outcome], n))
        summary["seat_player_0_games"] = sum(g["game"]["agent_seat"] == "player_0" for g in games)
        summary["illegal_move_rate"] = sum(not t["valid"] for t in turns) / len(turns) if turns else None
        summary["forfeits"] = sum(g["game"]["forfeit"] == g["game"]["agent_seat"] for g in games)
        # The agent seat's replies without content (refusal, tool call, content filter), as in ``groups``.
        summary["null_content_replies"] = sum(metrics._null_content(turn) for turn in turns)
        summary["mean_game_length"] = math.fsum(len(g["game"]["moves"]) for g in games) / n
        summaries.append(summary)
    return summaries


def add_game_summary(out: Path) -> list[dict[str, Any]]:
    """Add ``games`` (:func:`summarize_games` over the whole log) to the run's ``summary.json``."""
    records = [record for record in rundir.iter_episodes(out / rundir.EPISODES) if "game" in record]
    summary = rundir.read_json(out / rundir.SUMMARY)
    summary["games"] = summarize_games(records)
    runfiles.write_json_atomic(out / rundir.SUMMARY, summary)
    return summary["games"]


def table_rows(games: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The ``games`` summaries as rows for :func:`ragen_bench.eval.report.format_table`.

    ``null_replies`` is ``None`` (shown "-") for summaries written before ``null_content_replies`` existed.
    """
    return [
        {
            "env": g["env_id"], "split": g["split"], "opponent": g["opponent"], "games": g["games"],
            **{
                column: value
                for outcome in OUTCOMES
                for column, value in (
                    (outcome, g[f"{outcome}_rate"]),
                    (f"{outcome} ci95", "[{:.3f}, {:.3f}]".format(*g[f"{outcome}_ci95"])),
                )
            },
            "illegal": g["illegal_move_rate"], "forfeits": g["forfeits"],
            "null_replies": g.get("null_content_replies"), "length": g["mean_game_length"],
        }
        for g in games
    ]
