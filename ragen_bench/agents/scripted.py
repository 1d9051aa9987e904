"""Scripted reference agents: ``random`` (the floor), ``optimal`` (the ceiling) and ``baseline``.

All are privileged agents (``needs_live_env = True``, see :mod:`ragen_bench.chat.protocol`):
they read the live env through :attr:`AgentRequest.live_env`, a read-only view, and answer
in the chat format a model must use (``<think>..</think><answer>A || B</answer>``, or
``<answer>`` only with ``think=False``), so their episodes go through exactly the parsing
and bookkeeping a model's do.  The default ``think=True`` reply
parses under both chat variants (no-think parsing just looks for ``<answer>``), and
actions beyond a smaller per-turn limit are dropped by the parser and re-planned
next turn from the live state, so the defaults suit any :class:`ChatConfig`.

To a request with ``tools`` (``chat.action_format=tools``) they answer by one call of the
``act`` function instead (:func:`tool_reply`), naming at most the schema's ``maxItems``
actions, with the ``<think>`` block as the reply's text when ``think``: the tools-mode
path runs whole without a model.

Random
    ``actions_per_turn`` uniformly drawn valid action names per turn (free-text envs:
    one random string over the action space's characters, or one of the actions its
    space lists as ``valid`` now, where it lists them).  Where the view knows which
    actions are legal now (``legal_actions()``: a game seat's view, from the action
    mask), it draws uniformly among those; in the single-agent envs every named action
    is valid in every state.  Its random stream is derived from ``(sampling_seed,
    episode_key, turn)`` alone, so replies do not depend on batching, ordering or process.

Optimal
    Follows the env's ``optimal_action()``.  To send several actions in one turn
    (up to ``max_actions_per_turn``) it steps a private copy of the env
    (:meth:`LiveEnvView.clone`) and asks the copy for each next action; the live env is
    never stepped.  The copy carries the env's random generator too, so even on
    stochastic dynamics (slippery FrozenLake) the copy's future is the live env's future
    under the same actions: the plan is exactly the one-action-per-turn policy's
    trajectory, only batched into fewer turns.  Free-text envs get one action per turn.  When the env knows no
    optimal action the reply names none (and so earns the format penalty).

Baseline
    Follows the env's ``baseline_action()``, one action per turn: the optimal action where the env has
    a reference agent (BabyAI's bot, TextWorld's walkthroughs, every solver), the family's scripted
    policy where it has none (Crafter's collector, MiniHack/NetHack's explorer), and no action (the
    format penalty) where it has neither (TextArena).  One a turn, because a scripted policy may
    keep memory that a copy of the env would not share back.

:func:`play_optimal` plays it on a list of seeds under a chat config (with :func:`unbounded`: with
only the env's own caps), which is how each id's declared chat budget is measured and tested.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Sequence
from typing import Any, ClassVar

import gymnasium

from ragen_bench.chat.config import ChatConfig
from ragen_bench.chat.episode import ChatEpisode
from ragen_bench.chat.lockstep import run_lockstep
from ragen_bench.chat.parser import ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN
from ragen_bench.agents.sampling import check_sampling_seed
from ragen_bench.chat.protocol import AgentError, AgentReply, AgentRequest, LiveEnvView
from ragen_bench.chat.tools import TOOL_NAME, arguments_text, max_items
from ragen_bench.chat.trajectory import Trajectory

_RANDOM_TEXT_MAX_CHARS = 16
# Turns, actions and reply characters "unbounded": far beyond every env's own step cap (2048's 700 is
# the largest) and every text action space (10,000 characters at most).
UNBOUNDED = 100_000


def format_reply(actions: Sequence[str], *, thought: str, think: bool, separator: str = "||") -> str:
    """A well-formed reply naming ``actions`` (with a ``<think>`` block when ``think``)."""
    answer = f"{ANSWER_OPEN}{f' {separator} '.join(actions)}{ANSWER_CLOSE}"
    return f"{THINK_OPEN}{thought}{THINK_CLOSE}{answer}" if think else answer


def tool_reply(actions: Sequence[str], *, thought: str, think: bool) -> AgentReply:
    """A well-formed tools-mode reply: one ``act`` call naming ``actions`` (the thought as its text when ``think``)."""
    call = {"id": "call_0", "type": "function", "function": {"name": TOOL_NAME, "arguments": arguments_text(actions)}}
    return AgentReply(f"{THINK_OPEN}{thought}{THINK_CLOSE}" if think else "", tool_calls=[call])


def _live_env(request: AgentRequest) -> LiveEnvView:
    if request.live_env is None:
        raise AgentError(
            f"scripted agents need the live env view; request {request.episode_key!r} has none "
            "(run_lockstep sets it for agents with needs_live_env = True)"
        )
    return request.live_env


def _action_text(view: LiveEnvView, action: Any) -> str:
    names = view.action_names
    return str(action) if names is None else names[int(action)]


class _ScriptedAgent:
    """Scripted agents reply to each request on its own, from the live env: in text, or by a tool call."""

    needs_live_env: ClassVar[bool] = True
    acts_by_tools: ClassVar[bool] = True
    think: bool
    separator: str

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return [self._answer(request, *self._choose(request)) for request in requests]

    def close(self) -> None:
        """Nothing to release."""

    def _answer(self, request: AgentRequest, actions: list[str], thought: str) -> AgentReply:
        if request.tools is None:
            return AgentReply(format_reply(actions, thought=thought, think=self.think, separator=self.separator))
        return tool_reply(actions[: max_items(request.tools)], thought=thought, think=self.think)

    def _choose(self, request: AgentRequest) -> tuple[list[str], str]:
        """The actions to name, and the thought to give for them."""
        raise NotImplementedError


class RandomAgent(_ScriptedAgent):
    """Uniformly random valid (in a game: legal) actions, deterministic per (sampling_seed, episode, turn)."""

    name = "random"

    def __init__(
        self, *, sampling_seed: int = 0, think: bool = True, actions_per_turn: int = 1, separator: str = "||"
    ) -> None:
        if actions_per_turn < 1:
            raise ValueError(f"actions_per_turn must be >= 1, got {actions_per_turn}")
        check_sampling_seed(sampling_seed)
        self.sampling_seed = sampling_seed
        self.think = think
        self.actions_per_turn = actions_per_turn
        self.separator = separator

    def _choose(self, request: AgentRequest) -> tuple[list[str], str]:
        view = _live_env(request)
        # String seeds are hashed with sha512 by CPython: stable across processes.
        rng = random.Random(f"{self.sampling_seed}/{request.episode_key}/{request.turn}")
        names = view.action_names
        if names is None:
            # A text space that lists the actions valid now (TextWorld-Express's) is drawn from that list.
            valid = getattr(view.action_space, "valid", None)
            actions = [valid[_index(rng, len(valid))] if valid else _random_text(rng, view.action_space)]
        else:
            legal = _legal_actions(view, len(names))
            actions = [names[legal[_index(rng, len(legal))]] for _ in range(self.actions_per_turn)]
        return actions, "I pick at random."


def _legal_actions(view: Any, size: int) -> list[int]:
    """The actions legal now: the view's ``legal_actions()`` where it has one (a game seat), else all ``size``.

    With every action legal the draw is the one it always was (the index itself).
    """
    legal_actions = getattr(view, "legal_actions", None)
    legal = None if legal_actions is None else [int(action) for action in legal_actions()]
    return legal or list(range(size))


def _index(rng: random.Random, size: int) -> int:
    # rng.random() is the Mersenne Twister primitive CPython keeps stable; randrange's
    # implementation may change between releases.
    return int(rng.random() * size)


def _random_text(rng: random.Random, space: Any) -> str:
    charset = sorted(space.character_set)
    low = max(1, space.min_length)
    high = max(low, min(space.max_length, _RANDOM_TEXT_MAX_CHARS))
    length = low + _index(rng, high - low + 1)
    return "".join(charset[_index(rng, len(charset))] for _ in range(length))


class _PolicyAgent(_ScriptedAgent):
    """Names the actions its :meth:`plan` finds in the live env; none (a format penalty) where it finds none."""

    # The thought given with a plan, and with none.
    thoughts: ClassVar[tuple[str, str]]

    def _choose(self, request: AgentRequest) -> tuple[list[str], str]:
        view = _live_env(request)
        plan = [_action_text(view, action) for action in self.plan(view, request.actions_left)]
        return plan, self.thoughts[0] if plan else self.thoughts[1]

    def plan(self, view: LiveEnvView, actions_left: int | None = None) -> list[Any]:
        raise NotImplementedError


class OptimalAgent(_PolicyAgent):
    """Plays the env's own optimal policy, several actions per turn where allowed."""

    name = "optimal"
    thoughts = ("I follow a shortest plan from this state.", "I know no plan from this state.")

    def __init__(self, *, think: bool = True, max_actions_per_turn: int = 5, separator: str = "||") -> None:
        if max_actions_per_turn < 1:
            raise ValueError(f"max_actions_per_turn must be >= 1, got {max_actions_per_turn}")
        self.think = think
        self.max_actions_per_turn = max_actions_per_turn
        self.separator = separator

    def plan(self, view: LiveEnvView, actions_left: int | None = None) -> list[Any]:
        """Up to ``max_actions_per_turn`` optimal actions from the live env's state.

        ``actions_left`` (the episode's remaining budget) is passed on as each action's
        horizon, so the plan is optimal within the budget.  An env may offer
        ``optimal_plan(max_actions)`` (the same sequence, from a plan it already holds);
        it is used when present because it spares the copy.
        """
        def horizon(planned: int) -> int | None:
            return None if actions_left is None else actions_left - planned

        if view.action_names is None or self.max_actions_per_turn == 1:
            first = view.optimal_action(steps_left=horizon(0))
            return [] if first is None else [first]
        known_plan = view.optimal_plan(self.max_actions_per_turn)
        if known_plan is not None:
            return known_plan
        first = view.optimal_action(steps_left=horizon(0))
        if first is None:
            return []
        plan = [first]
        shadow = view.clone()
        while len(plan) < self.max_actions_per_turn:
            _, _, terminated, truncated, _ = shadow.step(plan[-1])
            if terminated or truncated:
                break
            action = shadow.optimal_action(steps_left=horizon(len(plan)))
            if action is None:
                break
            plan.append(action)
        return plan


class BaselineAgent(_PolicyAgent):
    """Plays the env's scripted baseline (``baseline_action()``), one action per turn."""

    name = "baseline"
    thoughts = ("I follow the scripted baseline from this state.", "I know no baseline move from this state.")

    def __init__(self, *, think: bool = True, separator: str = "||") -> None:
        self.think = think
        self.separator = separator

    def plan(self, view: LiveEnvView, actions_left: int | None = None) -> list[Any]:
        """The baseline's next action within the episode's remaining budget, or none."""
        action = view.baseline_action(steps_left=actions_left)
        return [] if action is None else [action]


def play_optimal(
    env_id: str, config: ChatConfig, seeds: Sequence[int], *, split: str = "test", env: gymnasium.Env | None = None
) -> list[Trajectory]:
    """The optimal agent's episodes of ``env_id`` on ``seeds`` under ``config``, in seed order.

    The agent takes ``config``'s per-turn limit, thinking and separator, as eval gives them.  One
    env plays every episode in turn (a TextWorld-Express env runs a JVM: one, not one per seed):
    ``env`` when given (an env of ``env_id``, left open for the caller's next call), else a new one.
    """
    agent = OptimalAgent(
        think=config.think, max_actions_per_turn=config.max_actions_per_turn, separator=config.action_separator
    )
    live = gymnasium.make(env_id) if env is None else env
    try:
        return [
            run_lockstep([ChatEpisode(live, config, env_id=env_id, seed=seed, split=split)], agent)[0]
            for seed in seeds
        ]
    finally:
        if env is None:
            live.close()


def unbounded(config: ChatConfig) -> ChatConfig:
    """``config`` with turns, actions per episode and reply length unbounded: only the env's own caps
    end an episode, and no reply is cut."""
    return dataclasses.replace(
        config, max_turns=UNBOUNDED, max_actions_per_episode=UNBOUNDED, max_response_chars=UNBOUNDED
    )
