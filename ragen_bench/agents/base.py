"""The agent protocol: what every agent receives and returns.

An agent turns chat prompts into assistant texts, a batch at a time.  It knows the
conversation only through :class:`AgentRequest.messages` (OpenAI chat format).  The
live env rides along in :attr:`AgentRequest.env` solely for the scripted reference
agents (``random`` and ``optimal``); model-backed agents must ignore it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:  # gymnasium is light, but agents never need it at run time
    import gymnasium


@dataclass(frozen=True)
class AgentRequest:
    """One prompt: the conversation so far, ending with a user message.

    ``episode_key`` is stable for the whole episode (e.g.
    ``"RAGEN/Sokoban-6x6-v0/test/123/0"``) so stochastic agents can derive a
    per-episode random stream that does not depend on batching; ``turn`` is 1-based.
    """

    messages: list[dict[str, str]]
    env: gymnasium.Env[Any, Any] | None
    episode_key: str
    turn: int
    # The episode's remaining action budget (the prompt states it too); scripted planners
    # use it so that "optimal" means optimal within the budget, e.g. on slippery ice.
    actions_left: int | None = None


@dataclass(frozen=True)
class AgentReply:
    """The assistant text for one request, with token counts when the agent knows them."""

    text: str
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


@runtime_checkable
class Agent(Protocol):
    """Anything with a name that answers a batch of requests, one reply per request, in order."""

    name: str

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]: ...

    def close(self) -> None: ...
