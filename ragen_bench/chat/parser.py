"""Parse an assistant reply into actions, RAGEN-style, in bounded linear time.

Accepted shape (think variant)::

    <think> reasoning </think> <answer> Up || Left </answer>

matched like RAGEN's ``<think>(.*?)</think>\\s*<answer>(.*?)</answer>`` (first match,
tags case-sensitive, only whitespace between ``</think>`` and ``<answer>``); the
no-think variant needs only ``<answer>...</answer>``.  The text is cut to a fixed
number of characters first and then scanned with ``str.find``, so no input -- however
long, nested or unclosed -- can make parsing slow, and nothing here raises.

Inside the matched blocks, stray ``<think>``/``</think>``/``<answer>``/``</answer>``
tags are removed (as RAGEN does).  The answer is split on the separator into stripped,
non-empty action strings; only the first ``max_actions`` are kept (the rest are
dropped without penalty, as in RAGEN).  Free-text envs take the whole answer as one
action.  Checking the actions against the env's names is the episode's job.
"""

from __future__ import annotations

from dataclasses import dataclass

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
ANSWER_OPEN, ANSWER_CLOSE = "<answer>", "</answer>"
TAGS = (THINK_OPEN, THINK_CLOSE, ANSWER_OPEN, ANSWER_CLOSE)


@dataclass(frozen=True)
class ParsedResponse:
    """What a reply says.

    ``well_formed`` is whether the required tag structure was found.  ``normalized``
    is the canonical rewrite of a well-formed reply (``<think>..</think><answer>A ||
    B</answer>``) or else the bounded raw text; it is what later prompts show as the
    assistant's turn.
    """

    well_formed: bool
    think: str
    answer: str
    actions: tuple[str, ...]
    normalized: str


def parse_response(
    text: str,
    *,
    think: bool = True,
    separator: str = "||",
    max_actions: int = 5,
    max_chars: int = 4096,
    split_actions: bool = True,
) -> ParsedResponse:
    """Parse ``text`` (see module docstring); never raises, linear in ``max_chars``."""
    bounded = text[:max_chars]
    blocks = _find_think_answer(bounded) if think else _find_answer(bounded)
    if blocks is None:
        return ParsedResponse(False, "", "", (), bounded)
    thought, answer = (_strip_tags(block) for block in blocks)
    if split_actions:
        actions = tuple(part.strip() for part in answer.split(separator) if part.strip())[:max_actions]
        answer = f" {separator} ".join(actions)
    else:
        actions = (answer,) if answer else ()
    answer_block = f"{ANSWER_OPEN}{answer}{ANSWER_CLOSE}"
    normalized = f"{THINK_OPEN}{thought}{THINK_CLOSE}{answer_block}" if think else answer_block
    return ParsedResponse(True, thought, answer, actions, normalized)


def _find_answer(text: str, start: int = 0) -> tuple[str, str] | None:
    """``("", answer)`` for the first ``<answer>...</answer>`` at or after ``start``."""
    opening = text.find(ANSWER_OPEN, start)
    if opening < 0:
        return None
    content_start = opening + len(ANSWER_OPEN)
    closing = text.find(ANSWER_CLOSE, content_start)
    if closing < 0:
        return None
    return "", text[content_start:closing]


def _find_think_answer(text: str) -> tuple[str, str] | None:
    """``(think, answer)`` of the first ``<think>..</think>\\s*<answer>..</answer>``.

    Only the first ``<think>`` can start a match: a later one sees a subset of the
    same closing tags.  Each ``</think>`` is tried in order until one is followed
    (after whitespace) by ``<answer>``; the whitespace runs scanned never overlap, so
    the whole search is linear.
    """
    opening = text.find(THINK_OPEN)
    if opening < 0:
        return None
    think_start = opening + len(THINK_OPEN)
    closing = text.find(THINK_CLOSE, think_start)
    while closing >= 0:
        after = _skip_whitespace(text, closing + len(THINK_CLOSE))
        if text.startswith(ANSWER_OPEN, after):
            found = _find_answer(text, after)
            return None if found is None else (text[think_start:closing], found[1])
        closing = text.find(THINK_CLOSE, after)
    return None


def _skip_whitespace(text: str, index: int) -> int:
    end = len(text)
    while index < end and text[index].isspace():
        index += 1
    return index


def _strip_tags(block: str) -> str:
    for tag in TAGS:
        if tag in block:
            block = block.replace(tag, "")
    return block.strip()
