"""A model stand-in whose reply is a function of its prompt, usable by eval and as an endpoint.

Eval plays it as ``agent.name=tests_verifiers.prompt_agent:PromptAgent``; :class:`PromptEndpoint`
answers verifiers' calls with the same function.  Equal records then mean equal prompts at every
turn, including prompts a history window cuts and replies eval calls malformed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ragen_bench.chat import AgentReply, AgentRequest
from ragen_bench.integrations.scripted_server import ScriptedEndpoint

# Well-formed, missing the think block, no answer at all, an unknown action beside a valid one.
REPLIES = ("<think>a</think><answer>Up || Left</answer>", "<answer>Down</answer>", "no answer at all",
           "<think>b</think><answer>Sideways || Right</answer>")


def reply_for(messages: Sequence[Mapping[str, Any]]) -> str:
    return REPLIES[sum(map(ord, str(messages[-1]["content"]))) % len(REPLIES)]


class PromptAgent:
    """Eval's side (the keys eval's default agent group passes are taken and not used)."""

    name = "prompt-agent"

    def __init__(self, think: bool = True, max_actions_per_turn: int = 5, separator: str = "||") -> None:
        del think, max_actions_per_turn, separator

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return [AgentReply(reply_for(request.messages)) for request in requests]

    def close(self) -> None:
        """Nothing to release."""


class PromptEndpoint(ScriptedEndpoint):
    """The endpoint's side: no replay, no episode header needed; the reply of the prompt."""

    def reply(self, key: str | None, messages: Any) -> str:
        return reply_for(messages)
