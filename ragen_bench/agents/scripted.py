"""Scripted reference agents: ``random`` (the floor) and ``optimal`` (the ceiling).

Both read the live env from :attr:`AgentRequest.env` -- only to look, never to act --
and answer in the chat format a model must use (``<think>..</think><answer>A ||
B</answer>``, or ``<answer>`` only with ``think=False``), so their episodes go through
exactly the parsing and bookkeeping a model's do.  The default ``think=True`` reply
parses under both chat variants (no-think parsing just looks for ``<answer>``), and
actions beyond a smaller per-turn limit are dropped by the parser and re-planned
next turn from the live state, so the defaults suit any :class:`ChatConfig`.

Random
    ``actions_per_turn`` uniformly drawn valid action names per turn (free-text envs:
    one random string over the action space's characters).  Its random stream is
    derived from ``(seed, episode_key, turn)`` alone, so replies do not depend on
    batching, ordering or process.

Optimal
    Follows ``env.unwrapped.optimal_action()``.  To send several actions in one turn
    (up to ``max_actions_per_turn``) it steps a deep copy of the unwrapped env and asks
    the copy for each next action; the live env is never stepped.  The copy carries
    the env's random generator too, so even on stochastic dynamics (slippery
    FrozenLake) the copy's future is the live env's future under the same actions: the
    plan is exactly the one-action-per-turn policy's trajectory, only batched into
    fewer turns.  (The copy is made by :func:`clone_env`, which is what keeps this
    agent fast enough for the eval harness's throughput target.)  Free-text envs get one action per turn.  When the env knows no
    optimal action the reply names none (and so earns the format penalty).
"""

from __future__ import annotations

import copy
import random
from collections.abc import Sequence
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

from ragen_bench.agents.base import AgentReply, AgentRequest
from ragen_bench.chat.parser import ANSWER_CLOSE, ANSWER_OPEN, THINK_CLOSE, THINK_OPEN

_RANDOM_TEXT_MAX_CHARS = 16
_DECLARATIONS = (spaces.Space, EnvSpec)


def format_reply(actions: Sequence[str], *, thought: str, think: bool, separator: str = "||") -> str:
    """A well-formed reply naming ``actions`` (with a ``<think>`` block when ``think``)."""
    answer = f"{ANSWER_OPEN}{f' {separator} '.join(actions)}{ANSWER_CLOSE}"
    return f"{THINK_OPEN}{thought}{THINK_CLOSE}{answer}" if think else answer


def _live_env(request: AgentRequest) -> Any:
    if request.env is None:
        raise ValueError(f"scripted agents need the live env; request {request.episode_key!r} has none")
    return request.env.unwrapped


def _action_text(unwrapped: Any, action: Any) -> str:
    names = unwrapped.action_names
    return str(action) if names is None else names[int(action)]


class _ScriptedAgent:
    """Scripted agents reply to each request on its own, from the live env."""

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return [AgentReply(self._reply(request)) for request in requests]

    def close(self) -> None:
        """Nothing to release."""

    def _reply(self, request: AgentRequest) -> str:
        raise NotImplementedError


class RandomAgent(_ScriptedAgent):
    """Uniformly random valid actions, deterministic per (seed, episode, turn)."""

    name = "random"

    def __init__(self, *, seed: int = 0, think: bool = True, actions_per_turn: int = 1, separator: str = "||") -> None:
        if actions_per_turn < 1:
            raise ValueError(f"actions_per_turn must be >= 1, got {actions_per_turn}")
        self.seed = seed
        self.think = think
        self.actions_per_turn = actions_per_turn
        self.separator = separator

    def _reply(self, request: AgentRequest) -> str:
        unwrapped = _live_env(request)
        # String seeds are hashed with sha512 by CPython: stable across processes.
        rng = random.Random(f"{self.seed}/{request.episode_key}/{request.turn}")
        names = unwrapped.action_names
        if names is None:
            actions = [_random_text(rng, unwrapped.action_space)]
        else:
            actions = [names[_index(rng, len(names))] for _ in range(self.actions_per_turn)]
        return format_reply(actions, thought="I pick at random.", think=self.think, separator=self.separator)


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


class OptimalAgent(_ScriptedAgent):
    """Plays the env's own optimal policy, several actions per turn where allowed."""

    name = "optimal"

    def __init__(self, *, think: bool = True, max_actions_per_turn: int = 5, separator: str = "||") -> None:
        if max_actions_per_turn < 1:
            raise ValueError(f"max_actions_per_turn must be >= 1, got {max_actions_per_turn}")
        self.think = think
        self.max_actions_per_turn = max_actions_per_turn
        self.separator = separator

    def _reply(self, request: AgentRequest) -> str:
        unwrapped = _live_env(request)
        plan = [_action_text(unwrapped, action) for action in self.plan(unwrapped, request.actions_left)]
        thought = "I follow a shortest plan from this state." if plan else "I know no plan from this state."
        return format_reply(plan, thought=thought, think=self.think, separator=self.separator)

    def plan(self, unwrapped: Any, actions_left: int | None = None) -> list[Any]:
        """Up to ``max_actions_per_turn`` optimal actions from the live env's state.

        ``actions_left`` (the episode's remaining budget) is passed on as each action's
        horizon, so the plan is optimal within the budget.  An env may offer
        ``optimal_plan(max_actions)`` (the same sequence, from a plan it already holds);
        it is used when present because it spares the copy.
        """
        def horizon(planned: int) -> int | None:
            return None if actions_left is None else actions_left - planned

        if unwrapped.action_names is None or self.max_actions_per_turn == 1:
            first = unwrapped.optimal_action(steps_left=horizon(0))
            return [] if first is None else [first]
        known_plan = getattr(unwrapped, "optimal_plan", None)
        if known_plan is not None:
            return list(known_plan(self.max_actions_per_turn))
        first = unwrapped.optimal_action(steps_left=horizon(0))
        if first is None:
            return []
        plan = [first]
        shadow = clone_env(unwrapped)
        while len(plan) < self.max_actions_per_turn:
            _, _, terminated, truncated, _ = shadow.step(plan[-1])
            if terminated or truncated:
                break
            action = shadow.optimal_action(steps_left=horizon(len(plan)))
            if action is None:
                break
            plan.append(action)
        return plan


def clone_env(unwrapped: Any) -> Any:
    """A deep copy of an env to step privately, made cheaply.

    ``copy.deepcopy`` is slow on random generators (``random.Random`` state is a
    625-int tuple copied element by element), so the env's top-level generators are
    cloned through their own state calls first and handed to ``deepcopy`` in its memo.
    Spaces and the registration spec are shared, not copied: they are declarations
    that stepping never changes.
    """
    memo: dict[int, Any] = {}
    for value in vars(unwrapped).values():
        twin = value if isinstance(value, _DECLARATIONS) else _clone_rng(value)
        if twin is not None:
            memo[id(value)] = twin
    return copy.deepcopy(unwrapped, memo)


def _clone_rng(value: Any) -> Any:
    if isinstance(value, random.Random):
        twin = type(value).__new__(type(value))  # skips seeding from OS entropy
        twin.setstate(value.getstate())
        return twin
    if isinstance(value, np.random.Generator):
        bit_generator = type(value.bit_generator)(0)  # a fixed seed skips OS entropy
        bit_generator.state = value.bit_generator.state
        return np.random.Generator(bit_generator)
    if isinstance(value, np.random.RandomState):
        twin = np.random.RandomState()
        twin.set_state(value.get_state(legacy=False))
        return twin
    return None


def make_random_agent(**settings: Any) -> RandomAgent:
    return RandomAgent(**settings)


def make_optimal_agent(**settings: Any) -> OptimalAgent:
    return OptimalAgent(**settings)
