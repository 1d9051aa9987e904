"""The moves TextArena's messages have shown a player: the ``valid`` list of its single- and multi-player ids.

TextArena states its moves in square brackets (``[up]``, ``[3 2]``, ``[col 4]``): in the rules at the
start, and in many games again each turn as the moves open now.  An :class:`Inbox` keeps what the game
sent one player, batch by batch, and reads those moves only when asked (a step reads nothing), so a
random player can draw legal-ish moves without the env paying for it at every step.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ragen_bench.envs.base import AnyText, text_charset
from ragen_bench.envs.textarena.library import message_text

# A move is any str up to this long (TextArena reads what it asks for); a sampled one draws these characters.
MAX_MOVE_CHARS = 2000
MOVE_CHARSET = text_charset("[]0123456789abcdefghijklmnopqrstuvwxyz ")
# A move the game's text shows: a short bracketed token ([3], [bet], [A1 B2]).
_BRACKETED = re.compile(r"\[[^\[\]\n]{1,24}\]")
_NOT_MOVES = re.compile(r"\[(Player \d+|GAME|Player|You)\]")


def bracketed_moves(text: str) -> list[str]:
    """The bracketed moves of a text (not the ``[Player 0]`` tags of who spoke)."""
    return [option for option in _BRACKETED.findall(text) if not _NOT_MOVES.fullmatch(option)]


class Received:
    """One batch of messages TextArena sent a player; its text and bracketed moves are read on first use."""

    __slots__ = ("messages", "_text", "_options")

    def __init__(self, messages: list[Any]) -> None:
        self.messages, self._text, self._options = messages, None, None

    @property
    def text(self) -> str:
        if self._text is None:
            self._text = message_text(self.messages)
        return self._text

    @property
    def options(self) -> list[str]:
        """The bracketed moves of the newest game message that shows any: many games restate the moves open
        now after each move, and the older lists (or a player's words, which may quote any move) are stale."""
        if self._options is None:
            self._options = []
            for message in reversed(self.messages):
                if message[0].__class__ is int and message[0] >= 0:
                    continue  # a player spoke
                options = bracketed_moves(message_text([message]))
                if options:
                    self._options = options
                    break
        return self._options


class Inbox:
    """What TextArena sent one player since the episode began, and the moves it has shown them.

    ``batches`` in order; those from ``since`` on arrived after the player's own last move.
    """

    __slots__ = ("batches", "since", "_seen", "_merged")

    def __init__(self) -> None:
        self.clear()

    def clear(self) -> None:
        """Empty, for a new episode."""
        self.batches: list[Received] = []
        self.since = 0
        # The moves of the first ``_merged`` batches, each once, the newest mention last.
        self._seen: dict[str, None] = {}
        self._merged = 0

    def add(self, messages: list[Any]) -> None:
        self.batches.append(Received(messages))

    def moved(self) -> None:
        """The player moved: what arrives next is news."""
        self.since = len(self.batches)

    def recent(self) -> list[Received]:
        """The batches since the player's own last move."""
        return self.batches[self.since:]

    def valid(self) -> tuple[str, ...]:
        """The moves of the newest batch since the player's last move that shows any (many games list the
        moves open now), else every move the episode's text has shown (the rules' examples), the most
        recently shown first."""
        for batch in reversed(self.recent()):
            if batch.options:
                return tuple(dict.fromkeys(batch.options))
        seen = self._seen
        for batch in self.batches[self._merged:]:
            for option in batch.options:
                seen.pop(option, None)  # the newest mention last
                seen[option] = None
        self._merged = len(self.batches)
        return tuple(reversed(seen))


class MoveText(AnyText):
    """A TextArena player's action space: any ``str`` (TextArena judges the move itself), and ``valid``.

    ``valid`` lists the moves the game's text has shown the player (:meth:`Inbox.valid`): legal-ish,
    not a promise; where the env sets ``legal`` (a game with a known move set), the moves it returns
    come first, and the shown ones only when it returns none.  The built-in ``random`` agent (and the
    games' ``random`` opponent) draw from it.
    """

    inbox: Inbox | None = None
    legal: Callable[[], tuple[str, ...]] | None = None

    @property
    def valid(self) -> tuple[str, ...]:
        if self.legal is not None:
            moves = self.legal()
            if moves:
                return moves
        return () if self.inbox is None else self.inbox.valid()
