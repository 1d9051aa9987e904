"""A game seen from the policy's seat, with the episode interface veRL's agent loop plays.

:class:`GameSeatEpisode` plays one :class:`~ragen_bench.chat.GameMatch` of a game: the seed decides
the policy's seat (:func:`~ragen_bench.games.seeds.seating`), a fresh scripted ``opponent`` takes
each other seat, and they move inside :meth:`step` until the policy must answer again.
It exposes what :class:`~ragen_bench.integrations.verl.agent_loop.ChatEpisodeAgentLoop` reads of a
:class:`~ragen_bench.chat.ChatEpisode` (``messages``, ``turn``, ``done``, :meth:`step`,
:meth:`trajectory`), so the loop lays out its tokens by the same rules, and its trajectory and
score are the ones the local trainer trains on (``ragen_bench.train.games``).

Self-play is not offered here: veRL's worker treats every output of one call as rows of one episode
(the last row's score is copied onto the others), while the two seats of a game have opposite scores.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragen_bench.chat import AgentReply, ChatConfig, Trajectory


class GameSeatEpisode:
    """The policy's seat of one game against a scripted opponent (module docstring)."""

    def __init__(self, env_id: str, chat: ChatConfig, *, opponent: str, game: Mapping[str, Any] | None = None,
                 seed: int, sample: int = 0, split: str = "train") -> None:
        from ragen_bench.chat import GameMatch
        from ragen_bench.eval.config import GAME_DEFAULTS, game_chat_config, scripted_opponents
        from ragen_bench.games.seeds import seating

        known = scripted_opponents(env_id)
        if opponent not in known:
            raise ValueError(f"{env_id} has no scripted player {opponent!r}; known: {', '.join(sorted(known))}")
        config = game_chat_config(chat, {**GAME_DEFAULTS["game"], **dict(game or {})})
        self.seat, others = seating(env_id, seed)
        self.env_id, self.seed = env_id, seed
        self._policy = _Seat()
        players = {self.seat: self._policy, **{other: known[opponent]() for other in others}}
        self.match = GameMatch(env_id, players, config, seed=seed, split=split, sample=sample)

    @property
    def messages(self) -> list[dict[str, str]]:
        return self.match.seats[self.seat].transcript

    @property
    def turn(self) -> int:
        return len(self.match.seats[self.seat].turns) + 1

    @property
    def done(self) -> bool:
        return self.match.done

    def step(self, reply: AgentReply) -> None:
        self.match.answer(self.seat, reply)

    def trajectory(self) -> Trajectory:
        """The seat's trajectory; a game the loop stopped early (no room left) is scored on the turns played."""
        if self.match.done:
            return self.match.result().trajectories[self.seat]
        from ragen_bench.chat import Trajectory

        chat = self.match.seats[self.seat]
        return Trajectory(
            env_id=self.env_id, split=self.match.split, seed=self.seed, sample=self.match.sample,
            template_hash=self.match.config.template_hash(), messages=[dict(m) for m in chat.transcript],
            turns=list(chat.turns), success=False, total_reward=sum(t.reward for t in chat.turns),
            num_turns=len(chat.turns), num_actions=chat.moves, num_valid_actions=sum(t.valid for t in chat.turns),
            num_effective_actions=chat.moves, optimal_length=None, terminated=False, truncated=True,
        )


class _Seat:
    """Marks the policy's seat as a chat seat; the loop answers it through :meth:`GameSeatEpisode.step`."""

    name = "policy"

    def act(self, requests: Any) -> list[Any]:
        raise RuntimeError("the policy's seat is answered by the agent loop, not asked here")
