"""The one error a leaderboard command reports: where a submission went wrong, precisely."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

_MISSING = object()


def needs_extra(module: str) -> ModuleType:
    """Import ``module``, one of the ``leaderboard`` extra's packages, or say how to install it."""
    try:
        return importlib.import_module(module)
    except ImportError:
        raise LeaderboardError(f"the leaderboard needs {module.split('.')[0]}, which is not installed: "
                               "pip install 'ragen-bench[leaderboard]'") from None


class LeaderboardError(RuntimeError):
    """A submission (or a leaderboard request) is refused.

    Carries where the first problem is -- ``file``, ``line``, ``episode`` key, ``seat`` (a
    game's player whose side differs), ``turn`` and ``field`` -- and, for a value that differs from what replay or recomputation
    gives, ``expected`` and ``found``.  ``str()`` is one line naming all of them.
    """

    def __init__(
        self,
        problem: str,
        *,
        file: str | None = None,
        line: int | None = None,
        episode: str | None = None,
        seat: str | None = None,
        turn: int | None = None,
        field: str | None = None,
        expected: Any = _MISSING,
        found: Any = _MISSING,
    ) -> None:
        self.problem = problem
        self.file = file
        self.line = line
        self.episode = episode
        self.seat = seat
        self.turn = turn
        self.field = field
        self.expected = None if expected is _MISSING else expected
        self.found = None if found is _MISSING else found
        # Which values were given: a problem with only a found value ("must be str") has no expected one to print.
        self._given = (expected is not _MISSING, found is not _MISSING)
        super().__init__(self._text())

    def keywords(self) -> dict[str, Any]:
        """The keyword arguments that make this error again: the place fields set and the values given
        (what a replay worker in another process sends back, :mod:`.own_venv`)."""
        made = {key: getattr(self, key) for key in ("file", "line", "episode", "seat", "turn", "field")
                if getattr(self, key) is not None}
        if self._given[0]:
            made["expected"] = self.expected
        if any(self._given):
            made["found"] = self.found
        return made

    def _text(self) -> str:
        where = self.file or ""
        if self.line is not None:
            where += f":{self.line}"
        parts = [where] if where else []
        if self.episode is not None:
            parts.append(f"episode {self.episode}")
        if self.seat is not None:
            parts.append(f"seat {self.seat}")
        if self.turn is not None:
            parts.append(f"turn {self.turn}")
        if self.field is not None:
            parts.append(f"field {self.field}")
        text = ", ".join(parts)
        text = f"{text}: {self.problem}" if text else self.problem
        if self._given[0]:
            text += f" (expected {_short(self.expected)}, found {_short(self.found)})"
        elif self._given[1]:
            text += f" (found {_short(self.found)})"
        # A submission names its own paths: one holding a line break ("\r\n| x |") must not
        # break the one line either.
        return "".join(char.encode("unicode_escape").decode() if char in _LINE_BREAKS else char for char in text)


# What str.splitlines breaks a line at.
_LINE_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


def _short(value: Any, limit: int = 120) -> str:
    """``repr`` cut to ``limit`` characters: an edited 4 KB reply must still give one readable line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


@contextmanager
def as_leaderboard_error() -> Iterator[None]:
    """The shared replay rule's mismatch (:mod:`ragen_bench.eval.replay`), reported as this command's error."""
    from ragen_bench.eval.replay import ReplayMismatch

    try:
        yield
    except ReplayMismatch as error:
        raise LeaderboardError(error.problem, **error.where) from None
