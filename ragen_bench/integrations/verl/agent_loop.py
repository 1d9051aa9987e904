"""A veRL agent loop that plays one :class:`~ragen_bench.chat.ChatEpisode` per trajectory.

veRL instantiates the class once per trajectory (``agent_loop_config_path`` lists it by its
import path; ``@register`` also adds it to veRL's in-process registry) and calls :meth:`run`
with the dataset row.  The row names the env and the seed (``extra_info``); the episode is
played turn by turn against veRL's inference server, token ids in and out.

The token context follows the single-machine trainer's rules exactly, from the same code, not
restated: :class:`ragen_bench.chat.tokens.TokenLayout` (turn 1's prompt is the chat template's
rendering of the episode's first messages; each later turn appends the sampled ids and then the
template text that follows that reply) and :class:`ragen_bench.train.stops.ReplyStops` (where a
reply ends, and the end-of-turn id a stop string adds).  So both trainers see the same rows:

* ``response_ids``: every reply's sampled ids, with the template/observation ids between them;
* ``response_mask``: 1 on the sampled ids (and on the end-of-turn id that closes a reply
  stopped by a stop string, as the local trainer trains on it), 0 on everything the template
  and the env wrote;
* the response always ends on a reply (the final observation is not appended), so the score
  that veRL puts on the last response token sits on a masked token and reaches GAE;
* ``reward_score``: the episode's total score, format penalties included (as the local trainer's
  ``score_placement: last``), plus DAPO's overlong charge of each reply when ``overlong_buffer.len``
  is set (:func:`ragen_bench.starpo.shaping.overlong_penalty` on the reply's token count, as the
  local trainer charges it on the reply's last token; on the last token instead, the return of
  every earlier token is the same for GRPO's sums and for GAE with gamma = lam = 1); per-turn
  records go to ``extra_fields["turns"]``.

The episode stops early, unfinished, when the next turn could not fit in
``rollout.response_length``; it is then scored on the turns it played.

With a context window (``chat.history_window``: RAGEN-2's ``limited_multi_turn`` and
``single_turn``) a turn's prompt is not an extension of the last one, so the loop returns one
``AgentLoopOutput`` per turn, as the local trainer trains one row per turn: the chat template's
rendering of the windowed messages (the ids eval's ``hf`` agent sends at that turn), then that
turn's reply, all of it masked.  veRL's V1 agent-loop worker stores each output as its own row
(``{uid}_{session}_{turn}``), copies the last row's score onto the others (every row carries the
episode's total, as RAGEN-2 credits windowed samples) and computes GRPO from each session's last
row, broadcast to its other rows (each episode counts once in its group's mean and std, as the
local trainer's episode deduplication); GAE runs on each row as its own sequence.  An empty reply
has no row; its turn record goes with the next row that has one.  DAPO's overlong charge per
reply needs the full history (veRL's score copy leaves no row of its own for it).

A row whose env is a two-player game (``RAGEN/TicTacToe-v0`` ...) is played as the policy's seat of
one game against the loop's scripted ``opponent`` (:class:`~ragen_bench.integrations.verl.game_seat.GameSeatEpisode`:
the seed decides the seat, the opponent moves between the policy's replies, ``game`` holds eval's
illegal-move rules), with the full history: the same row and score as the local trainer's
``opponent=<name>`` rollouts.
"""

from __future__ import annotations

import uuid
from typing import Any

import gymnasium
import torch

import ragen_bench  # noqa: F401  (registers the env ids in this worker process)
from ragen_bench.games.registry import GAME_IDS
from ragen_bench.agents.local_models import DEFAULT_STOP_STRINGS
from ragen_bench.chat import AgentReply, ChatEpisode
from ragen_bench.chat.config import check_chat
from ragen_bench.chat.tokens import TokenLayout
from ragen_bench.chat.trajectory import Trajectory
from ragen_bench.integrations.verl.data import AGENT_NAME
from ragen_bench.integrations.verl.game_seat import GameSeatEpisode
from ragen_bench.starpo.shaping import overlong_penalty
from ragen_bench.train.stops import ReplyStops
from verl.experimental.agent_loop.agent_loop import AgentLoopBase, AgentLoopOutput, register


@register(AGENT_NAME)
class ChatEpisodeAgentLoop(AgentLoopBase):
    """Plays ``extra_info.env_id`` reset with ``extra_info.seed`` as a chat (module docstring).

    Constructor keys beyond veRL's (set in the agent-loop YAML the recipe writes):
    ``chat`` (:class:`ChatConfig` fields), ``max_new_tokens`` (per turn), ``stop_strings`` and
    ``overlong_buffer`` (``len``, ``penalty_factor``: the train config's; ``len`` 0 or absent: off),
    ``opponent`` and ``game`` (a game's scripted opponent and illegal-move rules; module docstring).
    """

    def __init__(
        self,
        *args: Any,
        chat: dict[str, Any] | None = None,
        max_new_tokens: int = 128,
        stop_strings: list[str] | tuple[str, ...] = DEFAULT_STOP_STRINGS,
        overlong_buffer: dict[str, Any] | None = None,
        opponent: str | None = None,
        game: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, **kwargs)
        self.opponent, self.game = opponent, dict(game or {})
        self.chat = check_chat(dict(chat or {}))
        if max_new_tokens < 1:
            raise ValueError(f"agent loop {AGENT_NAME!r}: max_new_tokens must be >= 1, got {max_new_tokens}")
        self.max_new_tokens = max_new_tokens
        overlong = dict(overlong_buffer or {})
        self.overlong_len = int(overlong.get("len", 0))
        self.overlong_factor = float(overlong.get("penalty_factor", 1.0))
        if self.overlong_len:  # the same checks the local trainer's shaping makes, before any episode
            overlong_penalty(torch.zeros(1), max_new_tokens, self.overlong_len, self.overlong_factor)
            if self.chat.history_window is not None:
                raise ValueError(
                    f"agent loop {AGENT_NAME!r}: overlong_buffer needs the full history (chat.history_window null): "
                    "veRL gives every row of an episode its last row's score, so a reply's own charge has no row"
                )
        if self.tokenizer.eos_token_id is None:
            raise ValueError(f"agent loop {AGENT_NAME!r}: the tokenizer names no end-of-turn (eos) token")
        self.layout = TokenLayout(self.tokenizer)
        # Engines honour stop strings differently (and a fake server may ignore them), so replies are
        # cut here, by the local trainer's rules.
        self.stops = ReplyStops(self.tokenizer, tuple(stop_strings), context=f"agent loop {AGENT_NAME!r}: ")

    async def run(self, sampling_params: dict[str, Any], **kwargs: Any) -> AgentLoopOutput | list[AgentLoopOutput]:
        info = kwargs.get("extra_info") or {}
        missing = [key for key in ("env_id", "seed") if key not in info]
        if missing:
            raise ValueError(f"agent loop {AGENT_NAME!r}: the dataset row's extra_info lacks {missing}")
        env_id, seed = str(info["env_id"]), int(info["seed"])
        if env_id in GAME_IDS:
            return await self._play_extending(self._game_episode(env_id, seed, kwargs, info), sampling_params)
        episode = ChatEpisode(
            gymnasium.make(env_id),
            self.chat,
            env_id=env_id,
            seed=seed,
            sample=int(kwargs.get("session_id", 0)),
            split=str(info.get("split", "train")),
        )
        episode.reset()
        if self.chat.history_window is None:
            return await self._play_extending(episode, sampling_params)
        return await self._play_windowed(episode, sampling_params)

    def _game_episode(self, env_id: str, seed: int, kwargs: dict[str, Any], info: dict[str, Any]) -> GameSeatEpisode:
        """The policy's seat of a game against the loop's opponent (full history only)."""
        if self.opponent is None:
            raise ValueError(f"agent loop {AGENT_NAME!r}: {env_id} is a two-player game; the loop's config names "
                             "no opponent (opponent: random, minimax, ...)")
        if self.chat.history_window is not None:
            raise ValueError(f"agent loop {AGENT_NAME!r}: a game is played with the full history (chat.history_window "
                             f"null), got {self.chat.history_window}")
        return GameSeatEpisode(env_id, self.chat, opponent=self.opponent, game=self.game, seed=seed,
                               sample=int(kwargs.get("session_id", 0)), split=str(info.get("split", "train")))

    def _prompt_ids(self, episode: ChatEpisode | GameSeatEpisode) -> list[int]:
        """The chat template's rendering of the next turn's messages, checked against ``rollout.prompt_length``."""
        prompt_ids = self.layout.prompt_ids(episode.messages)
        if len(prompt_ids) > self.rollout_config.prompt_length:
            raise ValueError(
                f"{episode.env_id} seed {episode.seed}: the prompt of turn {episode.turn} has {len(prompt_ids)} "
                f"tokens, more than data.max_prompt_length={self.rollout_config.prompt_length}; raise it in the recipe"
            )
        return prompt_ids

    async def _reply(self, episode: ChatEpisode | GameSeatEpisode, request_id: str, context: list[int], sampling_params: dict[str, Any],
                     room: int) -> tuple[list[int], list[float], bool]:
        """One turn: sample at most ``room`` ids after ``context``, cut them at a stop string, play the reply;
        its ids (the end-of-turn id a stop string adds included), their log-probs and whether it ended."""
        output = await self.server_manager.generate(
            request_id,
            prompt_ids=context,
            sampling_params={**sampling_params, "max_tokens": min(self.max_new_tokens, room),
                             "stop": list(self.stops.stop_strings)},
        )
        ids, stopped, appended = self.stops.closed(output.token_ids)
        sampled = len(ids) - appended
        log_probs = list(output.log_probs or [0.0] * len(output.token_ids))[:sampled]
        # The end-of-turn id a stop string adds was not sampled; veRL recomputes old log-probs anyway.
        log_probs += [0.0] * (len(ids) - sampled)
        text = self.tokenizer.decode(ids, skip_special_tokens=True, clean_up_tokenization_spaces=False)
        episode.step(AgentReply(text=text, prompt_tokens=len(context), completion_tokens=len(ids),
                                finish_reason="stop" if stopped else "length"))
        return ids, log_probs, bool(ids) and ids[-1] == self.layout.end_id

    async def _play_extending(self, episode: ChatEpisode | GameSeatEpisode, sampling_params: dict[str, Any]) -> AgentLoopOutput:
        """The full history: one row, every turn extending the last one's ids (module docstring)."""
        layout = self.layout
        prompt_ids = self._prompt_ids(episode)
        budget = self.rollout_config.response_length
        request_id = uuid.uuid4().hex  # one id per episode: the server keeps its prefix cache
        response: list[int] = []
        mask: list[int] = []
        log_probs: list[float] = []
        ended = False  # whether the last reply closed with the end-of-turn id
        stopped_early = False
        while not episode.done:
            bridge = layout.bridge_ids(episode.messages, ended=ended) if episode.turn > 1 else []
            # Room for the bridge, one sampled token and the end-of-turn id a stop string adds.
            room = budget - len(response) - len(bridge) - 1
            if room < 1:
                stopped_early = True
                break
            response += bridge
            mask += [0] * len(bridge)
            log_probs += [0.0] * len(bridge)
            ids, reply_log_probs, ended = await self._reply(episode, request_id, [*prompt_ids, *response],
                                                            sampling_params, room)
            response += ids
            mask += [1] * len(ids)
            log_probs += reply_log_probs
        # An empty last reply (an aborted request) would leave template ids at the end, where
        # the score would sit on an unmasked token that GAE ignores.
        while mask and not mask[-1]:
            del response[-1], mask[-1], log_probs[-1]
        self._require_tokens(episode, bool(response))
        trajectory = episode.trajectory()
        charges = [0.0] * len(trajectory.turns)
        if self.overlong_len:
            lengths = torch.tensor([turn.completion_tokens for turn in trajectory.turns])
            charges = overlong_penalty(lengths, self.max_new_tokens, self.overlong_len, self.overlong_factor).tolist()
        return AgentLoopOutput(
            prompt_ids=prompt_ids,
            response_ids=response,
            response_mask=mask,
            response_logprobs=log_probs,
            reward_score=float(trajectory.total_reward) + sum(charges),
            num_turns=len(trajectory.messages) - 1,
            metrics={},
            extra_fields=self._extra_fields(trajectory, trajectory.turns, charges, stopped_early=stopped_early),
        )

    async def _play_windowed(self, episode: ChatEpisode, sampling_params: dict[str, Any]) -> list[AgentLoopOutput]:
        """A context window: one row per turn, the windowed prompt then the reply (module docstring)."""
        # Room for one sampled token and the end-of-turn id a stop string adds, in every turn's own row.
        room = self.rollout_config.response_length - 1
        if room < 1:
            raise ValueError(f"agent loop {AGENT_NAME!r}: rollout.response_length must be >= 2 for a reply")
        turns: list[tuple[list[int], list[int], list[float]]] = []
        while not episode.done:
            prompt_ids = self._prompt_ids(episode)
            # A fresh request id per turn: the prompt is not an extension of the last one.
            ids, log_probs, _ = await self._reply(episode, uuid.uuid4().hex, prompt_ids, sampling_params, room)
            turns.append((prompt_ids, ids, log_probs))
        self._require_tokens(episode, any(ids for _, ids, _ in turns))
        trajectory = episode.trajectory()
        # An empty reply has no ids to train on, so no row of its own: its record goes with the next
        # row that has one (the last row after the final reply), which keeps every turn readable.
        rows = [t for t, (_, ids, _) in enumerate(turns) if ids]
        owner = [next((n for n, r in enumerate(rows) if r >= t), len(rows) - 1) for t in range(len(turns))]
        outputs = []
        for n, t in enumerate(rows):
            held = [turn for turn, row in enumerate(owner) if row == n]
            prompt_ids, ids, log_probs = turns[t]
            outputs.append(AgentLoopOutput(
                prompt_ids=prompt_ids,
                response_ids=ids,
                response_mask=[1] * len(ids),
                response_logprobs=log_probs,
                # Each row is credited with the episode's total (RAGEN-2's windowed samples); veRL copies the
                # last row's score onto the others and computes GRPO from the last row of each session.
                reward_score=float(trajectory.total_reward) if n + 1 == len(rows) else None,
                num_turns=len(trajectory.messages) - 1,
                metrics={},
                extra_fields=self._extra_fields(trajectory, [trajectory.turns[i] for i in held], [0.0] * len(held),
                                                stopped_early=False),
            ))
        return outputs

    def _require_tokens(self, episode: ChatEpisode | GameSeatEpisode, any_tokens: bool) -> None:
        if not any_tokens:
            raise RuntimeError(
                f"agent loop {AGENT_NAME!r}: the server returned no token for any turn of {episode.env_id} seed "
                f"{episode.seed} (aborted requests?); the trajectory has nothing to train on"
            )

    @staticmethod
    def _extra_fields(trajectory: Trajectory, turns: list[Any], charges: list[float], *, stopped_early: bool) -> dict[str, Any]:
        """The row's episode facts (from the finished ``trajectory``) and the records of the turns whose replies
        it holds, in order."""
        return {
            # veRL's worker copies the last row's reward_extra_info onto the other rows of a multi-row episode
            # (agent_loop_tq.py, _agent_loop_postprocess); only its own reward loop would set one.
            "reward_extra_info": {},
            "env_id": trajectory.env_id,
            "seed": trajectory.seed,
            "success": trajectory.success,
            "stopped_early": stopped_early,
            "turns": [
                {
                    "reward": turn.reward,
                    "format_penalty": turn.format_penalty,
                    "valid": turn.valid,
                    "actions": len(turn.action_ids),
                    "tokens": turn.completion_tokens,
                    "overlong_penalty": charge,
                }
                for turn, charge in zip(turns, charges, strict=True)
            ],
        }
