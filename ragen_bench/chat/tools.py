"""Actions as tool calls (``chat.action_format=tools``): the ``act`` function and how a reply's calls are read.

A tools-mode request offers one function in the OpenAI tools schema, ``act``, whose one
argument ``actions`` is an array of strings: the env's action names as an ``enum`` where the
env has names, free text otherwise.  ``maxItems`` is the turn's action limit (a free-text env
takes one action a turn, as in text mode).

A reply is well formed when it makes exactly one call, of ``act``, whose ``arguments`` are a
JSON text of at most ``max_chars`` characters encoding an object with the one key ``actions``,
a list of at most ``maxItems`` strings.  Anything else -- no call, several, another function,
arguments that are no JSON text or no such object, a non-string action, too many actions -- is a
malformed turn, judged like an unparseable ``<answer>``: the format penalty, no action executed.
Nothing here raises, and the JSON read is bounded by ``max_chars``.  The action strings are
stripped and then looked up exactly as text answers' are (the episode's job: names ignore ASCII
case, an ``enum`` the model ignored is no excuse).

In the transcript a turn is two messages, as in text mode: the assistant's, with the reply's
text and, when the call was well formed, one canonical call (id ``call_<turn>``, the actions as
read); then a ``tool`` message answering that call with what the next user message would say
(the reward and the next state), or a ``user`` message when there was no call to answer.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from ragen_bench.chat.parser import ParsedResponse

TOOL_NAME = "act"
TOOL_DESCRIPTION = "Take actions in the game, in order."


def act_tool(action_names: Sequence[str] | None, max_actions: int) -> list[dict[str, Any]]:
    """The ``tools`` list of a request: the ``act`` function (see the module docstring)."""
    items: dict[str, Any] = {"type": "string"}
    if action_names is not None:
        items["enum"] = list(action_names)
    limit = 1 if action_names is None else max_actions
    return [{
        "type": "function",
        "function": {
            "name": TOOL_NAME,
            "description": TOOL_DESCRIPTION,
            "parameters": {
                "type": "object",
                "properties": {"actions": {"type": "array", "items": items, "minItems": 1, "maxItems": limit}},
                "required": ["actions"],
                "additionalProperties": False,
            },
        },
    }]


def max_items(tools: Sequence[dict[str, Any]]) -> int:
    """The most actions the ``act`` function of a request's ``tools`` (:func:`act_tool`'s) takes."""
    return tools[0]["function"]["parameters"]["properties"]["actions"]["maxItems"]


def read_tool_calls(tool_calls: Any, text: str, *, max_actions: int, max_chars: int) -> ParsedResponse:
    """What a tools-mode reply says: well formed with its actions, or malformed (never raises).

    ``normalized`` is the reply's text cut to ``max_chars``: the content of the assistant
    message the transcript keeps beside the canonical call (:func:`assistant_message`).
    """
    content = text[:max_chars]
    actions = call_actions(tool_calls, max_actions=max_actions, max_chars=max_chars)
    if actions is None:
        return ParsedResponse(False, "", "", (), content)
    return ParsedResponse(True, "", arguments_text(actions), actions, content)


def call_actions(tool_calls: Any, *, max_actions: int, max_chars: int) -> tuple[str, ...] | None:
    """The stripped action strings of a well-formed ``act`` call, or ``None`` for a malformed reply."""
    if type(tool_calls) is not list or len(tool_calls) != 1 or type(tool_calls[0]) is not dict:
        return None
    function = tool_calls[0].get("function")
    if type(function) is not dict or function.get("name") != TOOL_NAME:
        return None
    arguments = function.get("arguments")
    if type(arguments) is not str or len(arguments) > max_chars:
        return None
    try:
        decoded = json.loads(arguments)
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
        return None
    if type(decoded) is not dict or list(decoded) != ["actions"]:
        return None
    actions = decoded["actions"]
    if type(actions) is not list or len(actions) > max_actions or not all(type(a) is str for a in actions):
        return None
    return tuple(action.strip() for action in actions)


def arguments_text(actions: Sequence[str]) -> str:
    """The canonical ``arguments`` of a call naming ``actions`` (ASCII JSON: any text travels exactly)."""
    return json.dumps({"actions": list(actions)}, ensure_ascii=True)


def call_id(turn: int) -> str:
    """The id of turn ``turn``'s canonical call in the transcript."""
    return f"call_{turn}"


def assistant_message(parsed: ParsedResponse, turn: int) -> dict[str, Any]:
    """The transcript's assistant message of a tools-mode turn: the text, and the call read when well formed."""
    message: dict[str, Any] = {"role": "assistant", "content": parsed.normalized}
    if parsed.well_formed:
        message["tool_calls"] = [{
            "id": call_id(turn),
            "type": "function",
            "function": {"name": TOOL_NAME, "arguments": parsed.answer},
        }]
    return message


def answer_message(assistant: dict[str, Any], content: str) -> dict[str, Any]:
    """The message after ``assistant``: a ``tool`` message answering its call, else a ``user`` message."""
    calls = assistant.get("tool_calls")
    if not calls:
        return {"role": "user", "content": content}
    return {"role": "tool", "tool_call_id": calls[0]["id"], "content": content}
