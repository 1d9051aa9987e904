"""Token counts, the one part of a turn replay cannot reproduce: ``leaderboard verify`` bounds them.

A reply's ``response_chars`` must fit its recorded text, and its completion and prompt token
counts must be ones the texts could have had (:func:`token_problem`); a game's seats are
checked turn by turn as a single-agent episode's turns are.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ragen_bench.leaderboard.errors import LeaderboardError

# Token-count plausibility.  A token never stands for more than this many characters
# of text (real tokenizers average about 4) ...
MAX_CHARS_PER_TOKEN = 20
# ... and, byte-level BPE being the worst case, never less than one UTF-8 byte; the
# slack covers special tokens (end of turn) and a chat template's own text.
COMPLETION_SLACK = 16
PROMPT_SLACK_PER_MESSAGE = 64
PROMPT_SLACK = 2048
# A picture (chat.images) is counted by the server's vision encoder, not by its text: allow the most
# tokens one picture takes in the encoders in use (Qwen2-VL's default cap is 16,384).
PROMPT_TOKENS_PER_PICTURE = 16384


def check_tokens(turn: Mapping[str, Any], prompt: tuple[int, int] | None, chat_config: Any,
                 where: Mapping[str, Any]) -> None:
    """Refuse a response length or token count the turn's texts cannot have had."""
    from ragen_bench.chat.trajectory import unpack_text

    chars = turn["response_chars"]
    kept = len(unpack_text(turn["raw_response"]))
    # A reply longer than max_response_chars is stored cut; any other must be whole.
    if type(chars) is not int or not (chars == kept or (kept == chat_config.max_response_chars and chars > kept)):
        raise LeaderboardError("does not fit the recorded reply", field="response_chars", expected=kept,
                               found=chars, **where)
    completion = turn["completion_tokens"]
    if completion is not None:
        # A tools-mode reply's tokens also wrote its calls (replay took them as JSON data): they raise the
        # most it may count; the fewest stays the text's, as a call's JSON here may be longer than its tokens' text.
        calls = turn.get("tool_calls")
        call_chars = 0 if calls is None else len(json.dumps(calls, ensure_ascii=False))
        problem = token_problem(completion, chars, 4 * (chars + call_chars) + COMPLETION_SLACK)
        if problem:
            raise LeaderboardError(f"implausible: {problem}", field="completion_tokens", **where)
    if prompt is not None:
        text, messages = prompt
        most = 4 * text + PROMPT_SLACK_PER_MESSAGE * messages + PROMPT_SLACK
        if turn.get("image_sha256") is not None:
            most += PROMPT_TOKENS_PER_PICTURE
        problem = token_problem(turn["prompt_tokens"], text, most)
        if problem:
            raise LeaderboardError(f"implausible: {problem}", field="prompt_tokens", **where)


def token_problem(tokens: int, chars: int, most: int) -> str | None:
    """Why ``tokens`` cannot encode ``chars`` characters (at most ``most`` tokens), or ``None``."""
    if tokens * MAX_CHARS_PER_TOKEN < chars:
        return f"{tokens} tokens for {chars} characters (fewer than characters / {MAX_CHARS_PER_TOKEN})"
    if tokens > most:
        return f"{tokens} tokens for {chars} characters (more than the text can hold, {most})"
    return None
