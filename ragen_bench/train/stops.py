"""Where a sampled reply ends and how it is closed, for the local trainer and the veRL agent loop alike.

A reply ends at a stop token (the end-of-turn id, the tokenizer's ``eos_token_id``, and any
other end-of-sequence id the model names), right after the token that completes one of the
stop strings (the end-of-turn id is then appended, so the reply is closed the way the
template closes it, and is part of the reply), or at the token budget.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ragen_bench.agents.local_models import StopStrings


class ReplyStops:
    """The stop rules of one tokenizer: ``stop_ids``, ``end_id``, ``stop_strings``."""

    def __init__(
        self, tokenizer: Any, stop_strings: Sequence[str], *, stop_ids: Iterable[int] = (), context: str = ""
    ) -> None:
        self._stops = StopStrings(tokenizer, stop_strings, context=context)
        self.stop_strings = self._stops.strings
        self.end_id = tokenizer.eos_token_id
        self.stop_ids = frozenset(stop_ids) | {self.end_id}

    def hits_stop_string(self, response_ids: Sequence[int]) -> bool:
        """Whether the last id completes a stop string (earlier hits would have stopped the reply)."""
        return self._stops.completed_by_last(response_ids)

    def cut(self, ids: Sequence[int]) -> tuple[list[int], bool]:
        """``(ids up to the first stop token or completed stop string, whether one was found)``."""
        ids = list(ids)
        for end, token in enumerate(ids, start=1):
            if token in self.stop_ids or self.hits_stop_string(ids[:end]):
                return ids[:end], True
        return ids, False

    def closed(self, ids: Sequence[int]) -> tuple[list[int], bool, bool]:
        """:meth:`cut`, then the end-of-turn id appended where a stop string ended the reply.

        Returns ``(the reply's ids, whether it stopped, whether the end-of-turn id was appended)``.
        """
        ids, stopped = self.cut(ids)
        appended = stopped and ids[-1] not in self.stop_ids
        if appended:
            ids.append(self.end_id)
        return ids, stopped, appended
