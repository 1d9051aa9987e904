"""The agent protocol: what the chat layer sends an agent and what it must send back.

An agent turns chat prompts into assistant texts, a batch at a time.  It knows the
conversation through :attr:`AgentRequest.messages` (OpenAI chat format) and nothing else.

The privileged channel
    The scripted reference agents (``random``, ``optimal``) answer from the live env, not
    from the text.  An agent class that sets the class attribute ``needs_live_env = True``
    declares this; :func:`ragen_bench.chat.run_lockstep` then fills
    :attr:`AgentRequest.live_env` with a :class:`LiveEnvView` of the episode's env.  For
    every other agent that field is ``None``: a model-backed agent cannot peek at the
    state by accident, and its requests are exactly what a remote model could be sent.

Tool calls
    Under ``chat.action_format=tools`` each request carries :attr:`AgentRequest.tools`, an
    OpenAI tools schema (:mod:`ragen_bench.chat.tools`), and the reply names its actions in
    :attr:`AgentReply.tool_calls` (OpenAI's ``message.tool_calls`` shape).  An agent class
    declares that it can answer so with the class attribute ``acts_by_tools = True``;
    :func:`ragen_bench.chat.run_lockstep` refuses a tools-mode episode to any other agent.

Pictures
    Under ``chat.images=true`` each request also carries :attr:`AgentRequest.image`, a PNG of the
    current state (:mod:`ragen_bench.chat.images`), shown with the last user message.  An agent that
    reads no pictures ignores it; the OpenAI-compatible agent sends it as an ``image_url`` part.

What a reply must be
    ``act`` returns one :class:`AgentReply` per request, in order; ``text`` is a ``str``,
    token counts are ``None`` or non-negative ``int`` (not ``bool``), ``finish_reason`` and
    ``refusal`` are ``None`` or a ``str``, ``null_content`` is a ``bool`` and, when true,
    ``text`` is empty; ``tool_calls`` is ``None`` or a list of JSON objects.  :func:`check_replies` enforces this before any reply of a
    batch is used, so a broken agent fails with one :class:`AgentError` naming it, and no
    half-recorded batch reaches a run directory.
"""

from __future__ import annotations

import copy
import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar, Protocol, TypeGuard, TypeVar, runtime_checkable

import numpy as np
from gymnasium import spaces
from gymnasium.envs.registration import EnvSpec

if TYPE_CHECKING:
    import gymnasium


class AgentError(RuntimeError):
    """An agent (or its construction) failed in a way the user must fix.

    Bad settings, a server refusing our credentials, retries exhausted, a reply that breaks
    the protocol.  The message names the agent and what was wrong; the CLI prints it as
    one line.
    """


class AgentStopped(Exception):
    """An agent ends the run early on purpose: a person quit ``ragen-bench play`` (``q``,
    Ctrl-C, a closed terminal).

    The episode in flight is dropped (nothing of it is recorded, so every record is a whole
    episode that replays); :func:`ragen_bench.eval.run_eval` keeps the finished episodes,
    writes the summary and leaves the run ``complete: false``, to be resumed by the same
    command.  The message says why the run stopped.
    """


class LiveEnvView:
    """A read-only look at an episode's live env, for privileged (scripted) agents.

    It exposes the env's declarations, optimal policy and scripted baseline, and a private copy to step for
    look-ahead; it offers no way to step or reset the live env itself.
    """

    __slots__ = ("_env",)

    def __init__(self, env: gymnasium.Env[Any, Any]) -> None:
        self._env = env.unwrapped

    @property
    def action_names(self) -> tuple[str, ...] | None:
        return self._env.action_names

    @property
    def action_space(self) -> spaces.Space[Any]:
        return self._env.action_space

    def optimal_action(self, steps_left: int | None = None) -> int | str | None:
        """The env's next optimal action within ``steps_left`` actions (``None``: unknown)."""
        return self._env.optimal_action(steps_left=steps_left)

    def optimal_plan(self, max_actions: int) -> list[Any] | None:
        """The env's own next ``max_actions`` optimal actions, or ``None`` if it offers no plan."""
        known_plan = getattr(self._env, "optimal_plan", None)
        return None if known_plan is None else list(known_plan(max_actions))

    def baseline_action(self, steps_left: int | None = None) -> int | str | None:
        """The env's next scripted-baseline action (``None``: it has none).

        An env without ``baseline_action`` (one not built on ``envs.base.TextEnv``) gets the base's
        default, its optimal action.
        """
        baseline = getattr(self._env, "baseline_action", self._env.optimal_action)
        return baseline(steps_left=steps_left)

    def clone(self) -> gymnasium.Env[Any, Any]:
        """A private copy of the unwrapped env (random generators included) to step freely."""
        return clone_env(self._env)


@dataclass(frozen=True)
class AgentRequest:
    """One prompt: the conversation so far, ending with a user message.

    ``episode_key`` is stable for the whole episode (e.g.
    ``"RAGEN/Sokoban-6x6-v0/test/123/0"``) so stochastic agents can derive a
    per-episode random stream that does not depend on batching; ``turn`` is 1-based.
    ``actions_left`` is the episode's remaining action budget (the prompt states it too).
    ``live_env`` is set only for agents with ``needs_live_env = True`` (module docstring).
    """

    messages: list[dict[str, Any]]
    episode_key: str
    turn: int
    actions_left: int | None = None
    live_env: LiveEnvView | None = None
    # chat.action_format=tools: the OpenAI tools schema the reply must call (None in text mode).
    tools: list[dict[str, Any]] | None = None
    # chat.images=true: the current state's picture, a PNG file's bytes (None otherwise).
    image: bytes | None = None


@dataclass(frozen=True)
class AgentReply:
    """The assistant text for one request, with what the agent knows about how it ended.

    ``finish_reason`` is why generation stopped, ``None`` when unknown: ``"stop"``,
    ``"length"`` (cut by the token limit), ``"content_filter"``, ``"tool_calls"``..., as the
    server / transformers / vLLM report it.

    ``null_content`` marks an answer that carried no text at all (an OpenAI-compatible
    server's ``message.content: null``: a refusal, a tool call, a content filter); ``text``
    is then ``""`` and the turn is malformed like any unparseable reply, but the record
    says why.  ``refusal`` is the refusal text the server sent instead, if any.

    ``tool_calls`` are the function calls of a reply to a request with ``tools``, in OpenAI's
    shape (``[{"id": ..., "type": "function", "function": {"name": ..., "arguments": "<JSON>"}}]``),
    exactly as the model made them (the episode judges them); ``None``: the reply made none.
    """

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    finish_reason: str | None = None
    null_content: bool = False
    refusal: str | None = None
    tool_calls: list[dict[str, Any]] | None = None


@runtime_checkable
class Agent(Protocol):
    """Anything with a name that answers a batch of requests, one reply per request, in order."""

    name: str

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]: ...

    def close(self) -> None: ...


class PrivilegedAgent(Agent, Protocol):
    """An agent that reads :attr:`AgentRequest.live_env` (the scripted reference agents)."""

    needs_live_env: ClassVar[bool]


def wants_live_env(agent: object) -> TypeGuard[PrivilegedAgent]:
    """Whether ``agent`` declared itself privileged (``needs_live_env = True``, exactly)."""
    return getattr(agent, "needs_live_env", False) is True


def acts_by_tools(agent: object) -> bool:
    """Whether ``agent`` declared it answers tools requests with tool calls (``acts_by_tools = True``, exactly)."""
    return getattr(agent, "acts_by_tools", False) is True


def require_acts_by_tools(agent: object) -> None:
    """Refuse tools-mode episodes to an agent that writes text only: its every reply would be scored malformed."""
    if not acts_by_tools(agent):
        raise AgentError(f"agent {agent_name(agent)!r} does not act by tool calls; chat.action_format=tools needs "
                         "one that does (openai, hf, vllm, optimal, random) or chat.action_format=text")


def agent_name(agent: object) -> str:
    """The agent's ``name``, or its class name when it has no usable one."""
    name = getattr(agent, "name", None)
    return name if isinstance(name, str) else type(agent).__name__


def reply_problem(reply: object) -> str | None:
    """What makes ``reply`` break the protocol, or ``None`` when it is a valid reply."""
    if not isinstance(reply, AgentReply):
        return f"a reply must be an AgentReply, got {type(reply).__name__}"
    if not isinstance(reply.text, str):
        return f"text must be a str, got {type(reply.text).__name__}"
    for field in ("prompt_tokens", "completion_tokens"):
        value = getattr(reply, field)
        if value is not None and (type(value) is not int or value < 0):
            return f"{field} must be None or a non-negative int, got {value!r} ({type(value).__name__})"
    for field in ("finish_reason", "refusal"):
        value = getattr(reply, field)
        if value is not None and not isinstance(value, str):
            return f"{field} must be None or a str, got {type(value).__name__}"
    if type(reply.null_content) is not bool:
        return f"null_content must be a bool, got {reply.null_content!r} ({type(reply.null_content).__name__})"
    if reply.null_content and reply.text:
        return f"a null_content reply has no text, got {len(reply.text)} characters"
    return tool_calls_problem(reply.tool_calls)


def tool_calls_problem(tool_calls: object) -> str | None:
    """Why ``tool_calls`` cannot be a reply's (recorded as JSON), or ``None``.

    Only the container is the protocol's: what the calls say is the model's, judged by the episode.
    """
    if tool_calls is None:
        return None
    if type(tool_calls) is not list or not all(type(call) is dict for call in tool_calls):
        return f"tool_calls must be None or a list of objects, got {type(tool_calls).__name__}"
    try:
        readback = json.loads(json.dumps(tool_calls, ensure_ascii=True, allow_nan=False))
    except (TypeError, ValueError, RecursionError) as error:
        return f"tool_calls must be JSON data: {type(error).__name__}: {str(error)[:200]}"
    if readback != tool_calls:
        # A tuple, a non-string key, a surrogate pair: the record would read back as something else.
        return "tool_calls must be JSON data that reads back as itself (lists, objects with string keys, text)"
    return None


def check_replies(agent: object, requests: Sequence[AgentRequest], replies: object) -> Sequence[AgentReply]:
    """``replies`` if they answer ``requests`` per the protocol; otherwise one :class:`AgentError`."""
    name = agent_name(agent)
    if not isinstance(replies, Sequence) or isinstance(replies, str):
        raise AgentError(f"agent {name!r} broke the protocol: act() must return a list, got {type(replies).__name__}")
    if len(replies) != len(requests):
        raise AgentError(
            f"agent {name!r} broke the protocol: {len(replies)} replies for {len(requests)} requests"
        )
    for request, reply in zip(requests, replies):
        problem = reply_problem(reply)
        if problem is not None:
            raise AgentError(
                f"agent {name!r} broke the protocol in its reply for {request.episode_key!r} "
                f"(turn {request.turn}): {problem}"
            )
    return replies


# -- cloning an env for look-ahead ------------------------------------------------------------

_DECLARATIONS = (spaces.Space, EnvSpec)
# A string bound: gymnasium.Env is imported for type checking only.
_EnvT = TypeVar("_EnvT", bound="gymnasium.Env[Any, Any]")


def clone_env(unwrapped: _EnvT) -> _EnvT:
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


def _clone_rng(value: Any) -> random.Random | np.random.Generator | np.random.RandomState | None:
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
