"""Training on a multi-agent game: rollouts against a named scripted opponent, or self-play.

``ragen-bench train env=RAGEN/TicTacToe-v0 opponent=random`` plays each rollout as a game
(:class:`~ragen_bench.chat.GameMatch`, the chat layer eval plays games through, with eval's
``game.*`` rules for illegal moves): the seed decides the policy's seat
(:func:`~ragen_bench.games.seeds.agent_seat`, so consecutive train seeds alternate seats) and the
opponent's tie-breaks, and the trajectory trained on is the policy seat's, scored as the chat
layer scores it: +1 a win, 0 a draw, -1 a loss (a forfeit after ``game.max_retries`` illegal
replies included), plus the format penalty of each invalid reply.  A group is the
``group_size`` games of one seed: one seat, one opponent stream.

``opponent=self`` seats the policy in every seat and trains on every seat's trajectory.  Each
seat's trajectory is numbered ``2 * j + seat`` (``sample``) so that the two conversations of one
game keep their own keys, and its group is ``(seed, seat)``: the advantage baseline of a seat is
the mean of that seat's returns in the same position (role-conditioned, docs/train.md, "Games").

The supervised warm start on a game (``algo=sft``) plays ``sft.agent``, one of the game's scripted
players, through the same chat layer against ``opponent`` and keeps its games that it did not lose
(``random``: every game, a format-only warm start).

Validation and the test play the game's val/test panels against the training opponent (self-play:
the game's default opponent), with eval's seat alternation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ragen_bench.agents.scripted import _ScriptedAgent
from ragen_bench.train.config import SELF_PLAY, TrainConfig

if TYPE_CHECKING:
    from ragen_bench.chat.game import MatchResult
    from ragen_bench.chat.protocol import AgentRequest
    from ragen_bench.chat.trajectory import Trajectory

SEATS = ("player_0", "player_1")


def is_game(env_id: str) -> bool:
    from ragen_bench.games.registry import GAME_IDS

    return env_id in GAME_IDS


def eval_opponent(c: TrainConfig) -> str:
    """Who validation and the test play: the training opponent, or under self-play the game's default one."""
    from ragen_bench.games.registry import game_entry

    return game_entry(c.env).default_opponent if c.opponent == SELF_PLAY else str(c.opponent)


def eval_keys(c: TrainConfig) -> dict[str, Any]:
    """The eval config keys that make validation and the test play the game (nothing for a single-agent env)."""
    if not is_game(c.env):
        return {}
    from ragen_bench.eval.config import GAME_DEFAULTS

    return {"opponent": eval_opponent(c), "game": {**GAME_DEFAULTS["game"], **c.game}}


def play(c: TrainConfig, seeds: Sequence[int], agent: Any, *, split: str = "train") -> list[Trajectory]:
    """``group_size`` games of each seed with ``agent`` in the policy's seat(s); the trajectories to train on."""
    from ragen_bench.chat import GameMatch, play_matches
    from ragen_bench.eval.config import scripted_opponents
    from ragen_bench.games.seeds import seating

    config = c.game_chat_config
    matches = []
    for seed in seeds:
        for j in range(c.rollout.group_size):
            if c.opponent == SELF_PLAY:  # two-player games only (train/config.py)
                players = dict.fromkeys(SEATS, agent)
            else:
                seat, others = seating(c.env, seed)
                players = {seat: agent, **{other: scripted_opponents(c.env)[str(c.opponent)]() for other in others}}
            matches.append(GameMatch(c.env, players, config, seed=seed, split=split, sample=j))
    return [trajectory for result in play_matches(matches) for trajectory in policy_trajectories(result, c.opponent)]


def policy_trajectories(result: MatchResult, opponent: str | None) -> list[Trajectory]:
    """The policy's trajectories of one game: its seat's, or under self-play each seat's, numbered per seat.

    A self-play seat that never replied (the first mover forfeited at once) has nothing to train on.
    """
    from ragen_bench.games.seeds import seating

    if opponent != SELF_PLAY:
        return [result.trajectories[seating(result.env_id, result.seed)[0]]]
    return [replace(result.trajectories[seat], sample=2 * result.sample + index) for index, seat in enumerate(SEATS)
            if result.trajectories[seat].turns]


def samples_key(trajectory: Trajectory, opponent: str | None) -> str:
    """The key the policy agent sampled ``trajectory``'s turns under (self-play: its seat's conversation)."""
    from ragen_bench.chat.trajectory import episode_key

    if opponent != SELF_PLAY:
        return trajectory.episode_key
    base = episode_key(trajectory.env_id, trajectory.split, trajectory.seed, trajectory.sample // 2)
    return f"{base}/{SEATS[trajectory.sample % 2]}"


def group_of(trajectory: Trajectory, opponent: str | None) -> int:
    """A trajectory's group: its seed, or under self-play its (seed, seat) pair as one int."""
    return 2 * trajectory.seed + trajectory.sample % 2 if opponent == SELF_PLAY else trajectory.seed


# -- the supervised warm start on a game ------------------------------------------------------


class ScriptedSeat(_ScriptedAgent):
    """A scripted game player (``choose(game, seat)``) answering through the chat layer, as a model would."""

    def __init__(self, player: Any, *, think: bool, separator: str = "||") -> None:
        self.player, self.name, self.think, self.separator = player, f"scripted:{player.name}", think, separator
        self.games: dict[str, tuple[Any, str]] = {}  # episode key -> (the live game, the seat)

    needs_live_env = False

    def _choose(self, request: AgentRequest) -> tuple[list[str], str]:
        game, seat = self.games[request.episode_key]
        move = self.player.choose(game, seat)
        # A free-text game (TextArena's) has no action names: its player chooses the move's text itself.
        return [move if game.action_names is None else game.action_names[move]], f"{self.player.name} plays this."


def sft_records(c: TrainConfig, seeds: Sequence[int]) -> list[dict[str, Any]]:
    """The warm start's chat records: ``sft.agent`` against ``opponent`` on ``seeds``, its won and drawn games.

    ``sft.agent=random`` keeps every game, lost ones too, as on a single-agent env: a format-only warm
    start whose moves carry no preference, so that what RL adds is measured from an uninformed player.
    """
    from ragen_bench.chat import GameMatch, play_matches
    from ragen_bench.eval.config import scripted_opponents
    from ragen_bench.games.seeds import seating
    from ragen_bench.train.sft_data import record_of

    config = c.game_chat_config
    players = scripted_opponents(c.env)
    agent = ScriptedSeat(players[c.sft.agent](), think=config.chat.think, separator=config.chat.action_separator)
    matches = []
    seats = {}
    for seed in seeds:
        seat, others = seating(c.env, seed)
        seats[seed] = seat
        match = GameMatch(c.env, {seat: agent, **{other: players[str(c.opponent)]() for other in others}}, config,
                          seed=seed, split="train")
        agent.games[match.seats[seat].key] = (match.game, seat)
        matches.append(match)
    return [record_of(result.trajectories[seats[result.seed]]) for result in play_matches(matches)
            if c.sft.agent == "random" or result.outcome(seats[result.seed]) != "loss"]


def describe(c: TrainConfig) -> str:
    """``--dry-run``'s line about a game: who the policy plays, the illegal-move rules, who validation plays."""
    rules = c.game_chat_config
    who = "self-play: the policy in both seats, groups per (seed, seat)" if c.opponent == SELF_PLAY else \
        f"against {c.opponent}, the policy's seat alternating with the seed"
    return (f"game {c.env} {who}; illegal replies: {rules.max_retries} retries then {rules.on_illegal}; "
            f"validation/test against {eval_opponent(c)}")
