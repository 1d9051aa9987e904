"""Tool calls in a local model's text, and back: what the ``hf`` and ``vllm`` agents need for tools mode.

A model run through its own chat template writes its function calls as text.  The form read
here is the Hermes one that Qwen2.5/Qwen3, Hermes and many other templates teach::

    some text <tool_call>
    {"name": "act", "arguments": {"actions": ["Up", "Left"]}}
    </tool_call>

:func:`split_tool_calls` turns a reply into its text outside the blocks and OpenAI-shaped
``tool_calls`` (``arguments`` as a JSON string, ``parameters`` read like ``arguments``).  A block
that holds no such object, or one left unclosed at the end of the reply, still becomes a call,
with an empty name and its raw text as arguments: the model did try to call, so the episode
judges the reply malformed rather than reading the other calls as if it were absent.  The
scan is ``str.find`` from left to right and each block is read once, so no text -- however
long, nested or unclosed -- makes it slow, and nothing here raises.

:func:`template_messages` is the inverse direction: a transcript's calls with their arguments
as objects, the form chat templates render (``tool_call.arguments | tojson``).  A template
that never reads ``tools`` would hide the function from the model: :func:`check_renders_tools`
refuses it.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from ragen_bench.chat.protocol import AgentError, AgentReply

CALL_OPEN, CALL_CLOSE = "<tool_call>", "</tool_call>"


def split_tool_calls(text: str) -> tuple[str, list[dict[str, Any]] | None]:
    """``(text outside the call blocks, the calls)``; ``None`` calls when the text makes none."""
    calls: list[dict[str, Any]] = []
    outside: list[str] = []
    position = 0
    while True:
        opening = text.find(CALL_OPEN, position)
        if opening < 0:
            outside.append(text[position:])
            break
        outside.append(text[position:opening])
        start = opening + len(CALL_OPEN)
        closing = text.find(CALL_CLOSE, start)
        if closing < 0:  # cut before its end (max_new_tokens): a call, but not a readable one
            calls.append(_call(text[start:], len(calls), closed=False))
            break
        calls.append(_call(text[start:closing], len(calls)))
        position = closing + len(CALL_CLOSE)
    return "".join(outside).strip(), calls or None


def _call(block: str, index: int, *, closed: bool = True) -> dict[str, Any]:
    """One OpenAI-shaped call from a block's text (an empty name when the block names no function)."""
    name, arguments = "", block.strip()
    try:
        decoded = json.loads(block) if closed else None
    except (ValueError, RecursionError):  # not JSON, or nested past the parser's stack
        decoded = None
    if type(decoded) is dict and type(decoded.get("name")) is str:
        name = decoded["name"]
        given = decoded.get("arguments", decoded.get("parameters", {}))
        # A model that wrote its arguments as a JSON string already gave the OpenAI form.
        arguments = given if type(given) is str else json.dumps(given, ensure_ascii=True)
    return {"id": f"call_{index}", "type": "function", "function": {"name": name, "arguments": arguments}}


def template_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``messages`` with each call's JSON-string ``arguments`` as the object it encodes (others left as text)."""
    rendered = []
    for message in messages:
        calls = message.get("tool_calls")
        if calls:
            message = {**message, "tool_calls": [_with_object_arguments(call) for call in calls]}
        rendered.append(message)
    return rendered


def _with_object_arguments(call: dict[str, Any]) -> dict[str, Any]:
    function = call.get("function")
    if type(function) is not dict or type(function.get("arguments")) is not str:
        return call
    try:
        arguments = json.loads(function["arguments"])
    except (ValueError, RecursionError):
        return call
    return {**call, "function": {**function, "arguments": arguments}}


def renders_tools(chat_template: Any) -> bool:
    """Whether a tokenizer's chat template (a text, or a mapping of named ones) reads ``tools`` at all."""
    templates = chat_template.values() if isinstance(chat_template, dict) else [chat_template]
    return any(isinstance(template, str) and "tools" in template for template in templates)


def with_tool_calls(reply: AgentReply) -> AgentReply:
    """A tools-mode reply: its text split into the text outside the call blocks and the calls."""
    text, calls = split_tool_calls(reply.text)
    return replace(reply, text=text, tool_calls=calls)


def check_renders_tools(chat_template: Any, agent: str) -> None:
    """Refuse a tools-mode request to a model whose chat template would not show it the tools."""
    if not renders_tools(chat_template):
        raise AgentError(f"agent {agent!r}: the model's chat template does not render tools, so it would never "
                         "see the act function; chat.action_format=tools needs a model whose template does "
                         "(Qwen2.5/Qwen3 instruct models, Hermes) or chat.action_format=text")
