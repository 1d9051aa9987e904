"""One served episode at a time, played through the chat layer exactly as ``ragen-bench eval`` plays it.

A :class:`ChatSession` is what one client of ``ragen-bench serve`` (or one ``RAGEN/Chat-v0``) owns:

* ``reset`` picks the id (one of the served ids, the first by default) and the episode, either
  by ``seed`` or by a panel item (``split`` and ``index`` -> that panel's seed, the seed eval plays
  for that item), then builds the episode's first prompt;
* ``step`` takes the model's reply text and plays it as eval does (:class:`~ragen_bench.chat.ChatEpisode`:
  the same parser, action-name matching, budgets and format penalty); a malformed reply is an
  invalid turn that costs the format penalty, never an error;
* a game id (:mod:`ragen_bench.games`) is played in opponent mode: the client takes the seat eval's
  agent takes for that seed (:func:`ragen_bench.games.seeds.agent_seat`) and the game's default
  scripted opponent plays the other, as in ``ragen-bench eval env=<game>`` without ``opponent=``.

Chat settings: the id's declared budget (:func:`ragen_bench.chat.config.budgeted_settings`) over
ChatConfig's defaults; games keep GameChatConfig's (eval's ``game.*`` defaults).  Every request a
client can get wrong raises :class:`ServeError` with a one-line reason; nothing it sends is
executed or used as a path.  This module imports no serving library: the OpenEnv server
(:mod:`.server`) and the in-process ``RAGEN/Chat-v0`` (:mod:`.gym_env`) are both built on it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import gymnasium

from ragen_bench import panels, suites
from ragen_bench.chat import AgentReply, ChatEpisode, GameChatConfig, GameMatch, Trajectory
from ragen_bench.chat.config import ChatConfig, budgeted_settings, check_chat
from ragen_bench.chat.episode import info_lite
from ragen_bench.envs.base import check_seed
from ragen_bench.games.registry import GAME_IDS, game_entry
from ragen_bench.registry import ENV_IDS

# The longest reply text a step takes.  Eval cuts replies at ChatConfig.max_response_chars (4,096 by
# default) before parsing; a reply far beyond any budget is refused instead of held.
MAX_REPLY_CHARS = 65_536


class ServeError(ValueError):
    """A client's request that cannot be served; the message says why, in one line."""


@dataclass(frozen=True)
class Step:
    """What a client sees after a reset or a step.

    ``messages`` is the prompt of the next turn exactly as eval's agent gets it (the whole
    transcript once ``done``); ``reward`` is the turn's reward (env rewards plus the format
    penalty, ``0.0`` after a reset), so an episode's rewards sum to eval's ``total_reward``;
    ``info`` holds JSON scalars and lists only.
    """

    messages: list[dict[str, str]]
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)

    @property
    def done(self) -> bool:
        return self.terminated or self.truncated


def served_ids(name: str) -> tuple[str, ...]:
    """The ids ``ragen-bench serve NAME`` serves: the id itself, or a suite's ids (in suite order)."""
    if not isinstance(name, str):
        raise ServeError(f"an env id or suite name must be a str, got {type(name).__name__}")
    if name in ENV_IDS or name in GAME_IDS:
        return (name,)
    if name in suites.names():
        return tuple(dict.fromkeys(panel.env_id for panel in suites.get(name).panels()))
    raise ServeError(f"unknown env id or suite {name!r}; `ragen-bench envs list` shows the ids, suites: "
                     f"{', '.join(suites.names())}")


@lru_cache(maxsize=512)
def _panel(env_id: str, split: str) -> panels.Panel:
    return panels.load(env_id, split)


def panel_seed(env_id: str, split: Any, index: Any) -> int:
    """The seed of item ``index`` of ``env_id``'s ``split`` panel: the seed eval plays for that item."""
    if not isinstance(split, str) or split not in panels.available(env_id):
        raise ServeError(f"split: {env_id} has panels {panels.available(env_id)}, got {split!r}")
    seeds = _panel(env_id, split).seeds
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(seeds):
        raise ServeError(f"index: the {split} panel of {env_id} has items 0..{len(seeds) - 1}, got {index!r}")
    return seeds[index]


def panel_size(env_id: str, split: str) -> int:
    """How many items ``env_id``'s ``split`` panel holds (their indexes are ``0..size - 1``)."""
    return len(_panel(env_id, split).seeds)


def task(env_id: str, split: str, index: int) -> dict[str, Any]:
    """One panel item as the OpenEnv task API lists it."""
    return {"id": f"{env_id}/{split}/{index}", "env_id": env_id, "split": split, "index": index,
            "seed": panel_seed(env_id, split, index)}


@lru_cache(maxsize=512)
def chat_config(env_id: str) -> ChatConfig:
    """The chat settings a served single-agent id is played with: its declared budget."""
    return check_chat(budgeted_settings(env_id))


class _ServedSeat:
    """The client's seat in a game: a chat player whose replies arrive through :meth:`ChatSession.step`."""

    name = "client"

    def act(self, requests: Sequence[Any]) -> list[AgentReply]:
        raise RuntimeError("the served seat answers through ChatSession.step, never act()")


class ChatSession:
    """The episodes of one client, one at a time (see the module docstring)."""

    def __init__(self, env_ids: Sequence[str]) -> None:
        if not env_ids:
            raise ServeError("a session needs at least one env id")
        self.env_ids = tuple(env_ids)
        self._envs: dict[str, gymnasium.Env[Any, Any]] = {}
        self._episode: ChatEpisode | None = None
        self._match: GameMatch | None = None
        self._seat = ""
        self._where: dict[str, Any] = {}

    @property
    def default_id(self) -> str:
        return self.env_ids[0]

    @property
    def started(self) -> bool:
        return self._episode is not None or self._match is not None

    # -- lifecycle --------------------------------------------------------------------

    def reset(self, *, env_id: str | None = None, seed: Any = None, split: Any = None, index: Any = None) -> Step:
        """Start an episode of ``env_id`` (default: the first served id) by ``seed`` or by panel item."""
        env_id = self.default_id if env_id is None else env_id
        if env_id not in self.env_ids:
            raise ServeError(f"env_id: this server serves {', '.join(self.env_ids)}; got {env_id!r}")
        if (seed is None) == (split is None and index is None):
            raise ServeError("reset takes either seed=N or split=NAME with index=K (a panel item)")
        if seed is None:
            if split is None or index is None:
                raise ServeError("a panel item needs both split and index")
            seed = panel_seed(env_id, split, index)
        self._episode, self._match = None, None
        if env_id in GAME_IDS:
            self._start_game(env_id, seed, split or "")
        else:
            self._start_episode(env_id, seed, split or "")
        self._where = {"env_id": env_id, "seed": self._seed(), "split": split, "index": index}
        return self._view(0.0, {})

    def step(self, reply: Any) -> Step:
        """Play one reply (the model's whole text) and return the next prompt, the turn's reward and info."""
        if not self.started:
            raise ServeError("step before reset: call reset first")
        if self.done:
            raise ServeError("the episode is over: call reset for a new one")
        check_reply(reply)
        if self._match is not None:
            return self._game_step(reply)
        self._episode.step(AgentReply(text=reply))
        record = self._episode.trajectory()
        return self._view(record.turns[-1].reward, _turn_info(record.turns[-1]), record)

    @property
    def done(self) -> bool:
        if self._match is not None:
            return self._match.done
        return self._episode is not None and self._episode.done

    def state(self) -> dict[str, Any]:
        """Where the session stands: the episode's id, seed, panel item, turns played and whether it is over."""
        if not self.started:
            return {"env_id": None, "turns": 0, "done": False}
        return {**self._where, "turns": self._turns(), "done": self.done}

    def close(self) -> None:
        for env in self._envs.values():
            env.close()
        self._envs.clear()
        self._episode, self._match = None, None

    # -- single-agent episodes --------------------------------------------------------

    def _start_episode(self, env_id: str, seed: Any, split: str) -> None:
        env = self._envs.get(env_id)
        if env is None:
            env = self._envs[env_id] = gymnasium.make(env_id)
        seed = _checked_seed(env_id, seed, env.unwrapped.seed_limit)
        episode = ChatEpisode(env, chat_config(env_id), env_id=env_id, seed=seed, split=split)
        episode.reset()
        self._episode = episode

    # -- games ------------------------------------------------------------------------

    def _start_game(self, env_id: str, seed: Any, split: str) -> None:
        from ragen_bench.games.opponents import OPPONENTS
        from ragen_bench.games.seeds import seating

        seed = _checked_seed(env_id, seed, None)
        entry = game_entry(env_id)
        seat, others = seating(env_id, seed)
        players = {seat: _ServedSeat(), **{other: OPPONENTS[entry.family][entry.default_opponent]() for other in others}}
        try:
            self._match = GameMatch(env_id, players, GameChatConfig(), seed=seed, split=split)
        except ValueError as error:  # the game's own seed rule (its seed limit)
            raise ServeError(f"seed: {error}") from None
        self._seat = seat

    def _game_step(self, reply: str) -> Step:
        match, seat = self._match, self._seat
        moves = len(match.moves)
        match.answer(seat, AgentReply(text=reply))
        # Everything this answer earned lands on its own turn: the move's reward, the opponent's
        # replies' (a win or loss) and a forfeit's, so the turn's reward is the step's.
        turn = match.seats[seat].turns[-1]
        info = {**_turn_info(turn), "moves": [[s, m] for s, m in match.moves[moves:]]}
        if match.done:
            info.update(outcome=match.result().outcome(seat), forfeit=match.forfeit)
        return self._view(turn.reward, info)

    # -- views ------------------------------------------------------------------------

    def _seed(self) -> int:
        return self._match.seed if self._match is not None else self._episode.seed

    def _turns(self) -> int:
        if self._match is not None:
            return len(self._match.seats[self._seat].turns)
        return self._episode.turn - 1

    def _view(self, reward: float, turn_info: Mapping[str, Any], record: Trajectory | None = None) -> Step:
        """The client's view now; ``record`` is the episode's trajectory where the caller has it already."""
        info: dict[str, Any] = {**self._where, "turns": self._turns()}
        if self._match is not None:
            match, seat = self._match, self._seat
            chat = match.seats[seat]
            messages = [dict(m) for m in chat.transcript]
            info.update(seat=seat, opponent=game_entry(match.env_id).default_opponent,
                        actions_left=chat.chat.max_actions_per_episode - chat.moves)
            done = match.done
            success = done and match.winner() == seat
            terminated, truncated = done, False
        else:
            episode = self._episode
            record = record or episode.trajectory()
            messages = episode.messages
            info["actions_left"] = episode.config.max_actions_per_episode - record.num_actions
            success, terminated, truncated = record.success, record.terminated, record.truncated
        info.update(turn_info, success=success)
        return Step(messages=messages, reward=float(reward), terminated=terminated, truncated=truncated, info=info)


def check_reply(reply: Any) -> None:
    """Refuse what is no reply: a non-str, a str above :data:`MAX_REPLY_CHARS` characters, a lone surrogate."""
    if not isinstance(reply, str):
        raise ServeError(f"a reply must be a str, got {type(reply).__name__}")
    if len(reply) > MAX_REPLY_CHARS:
        raise ServeError(f"a reply holds at most {MAX_REPLY_CHARS} characters, got {len(reply)}")
    try:
        reply.encode("utf-8")
    except UnicodeEncodeError as error:
        # A lone surrogate (JSON can escape one) is no text: no UTF-8 response could echo it back.
        raise ServeError(f"a reply must be Unicode text; character {error.start} is a lone surrogate") from None


def _checked_seed(env_id: str, seed: Any, limit: int | None) -> int:
    try:
        checked = check_seed(env_id, seed) if limit is None else check_seed(env_id, seed, limit)
    except (TypeError, ValueError) as error:
        raise ServeError(str(error)) from None
    if checked is None:
        raise ServeError("seed must be an int")
    return checked


def _turn_info(turn: Any) -> dict[str, Any]:
    """What a client needs of one played turn: was the reply valid, what it named and what ran."""
    return {
        "valid": turn.valid,
        "format_penalty": turn.format_penalty,
        "parsed_actions": list(turn.parsed_actions),
        "action_ids": list(turn.action_ids),
        "env_rewards": list(turn.env_rewards),
        "env_info": info_lite(turn.info),
    }
