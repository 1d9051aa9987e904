"""TextArena 0.7.4 as this project uses it: the import, the isolated random state, the observation text.

TextArena seeds Python's *global* ``random`` (``random.seed(seed)`` when a game builds its
state) and its games draw from it -- and a few from numpy's global generator -- on every
later call.  Anything else in the process that draws from those generators between two
calls (an agent sampling, a library shuffling) changes the game.  :class:`IsolatedRandom`
keeps a game's own copies of both states and swaps them in around each call, so a game's
episode depends on its seed and its actions alone.
"""

from __future__ import annotations

import importlib
import random
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np

from ragen_bench.envs.base import MissingExtra

if TYPE_CHECKING:
    from types import ModuleType

    from textarena.core import Env

LIBRARY = "textarena"
LIBRARY_VERSION = "0.7.4"
EXTRA = "textarena"
INSTALL_HINT = f"TextArena ids need the '{EXTRA}' extra: pip install 'ragen-bench[{EXTRA}]'"

T = TypeVar("T")


class TextArenaError(RuntimeError):
    """TextArena failed to import, or a game raised (the message names the game, the seed and the call)."""


def load_library() -> ModuleType:
    """``textarena`` at the pinned version, or the one-line error naming the extra."""
    try:
        library = importlib.import_module(LIBRARY)
    except ModuleNotFoundError as error:
        # textarena imports numpy without declaring it: either missing is the extra missing.
        if (error.name or "").split(".")[0] in (LIBRARY, "numpy"):
            raise MissingExtra(INSTALL_HINT) from None
        raise TextArenaError(f"{LIBRARY} failed to import: {type(error).__name__}: {error}") from error
    version = _installed_version()
    if version != LIBRARY_VERSION:
        # The panels freeze what 0.7.4 deals; another version may deal other games under the same ids.
        raise MissingExtra(f"TextArena ids are frozen on textarena=={LIBRARY_VERSION}, found {version}. {INSTALL_HINT}")
    return library


def _installed_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(LIBRARY)
    except PackageNotFoundError:
        return "unknown"


class IsolatedRandom:
    """One game's own Python ``random`` and numpy global states, swapped in around every call to it.

    ``call(fn, ...)`` saves the process's two global states, installs the game's, runs ``fn``,
    keeps the game's new states and puts the process's back -- also when ``fn`` raises.  The
    game's states start from the seed (:meth:`restart`), before TextArena seeds ``random``
    itself, so draws a game makes before that are pinned too.
    """

    __slots__ = ("_python", "_numpy")

    def __init__(self, seed: int = 0) -> None:
        self.restart(seed)

    def restart(self, seed: int) -> None:
        """Start both of the game's states from ``seed``."""
        self._python = random.Random(seed).getstate()
        self._numpy = np.random.RandomState(seed).get_state()

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        outer_python, outer_numpy = random.getstate(), np.random.get_state()
        random.setstate(self._python)
        np.random.set_state(self._numpy)
        try:
            return fn(*args, **kwargs)
        finally:
            self._python, self._numpy = random.getstate(), np.random.get_state()
            random.setstate(outer_python)
            np.random.set_state(outer_numpy)

    def __getstate__(self) -> tuple[Any, Any]:
        return self._python, self._numpy

    def __setstate__(self, state: tuple[Any, Any]) -> None:
        self._python, self._numpy = state


def make_game(ta_id: str) -> Env:
    """TextArena's game ``ta_id`` without its wrappers (``-raw``): the text is ours to lay out."""
    library = load_library()
    return library.make(f"{ta_id}-raw")


def message_text(messages: list[Any]) -> str:
    """TextArena's messages to one player, as one text: each message's own words, one after another.

    A message is ``(from_id, text, kind)``; what a player said is shown after its name, the
    game's own messages as they are.  A game that passes the three in another order
    (Countdown echoes a move as ``(kind, player, text)``) still shows its text.
    """
    parts = []
    for message in messages:
        sender, text = message[0], next((part for part in message if isinstance(part, str)), "")
        text = text.strip()
        if text:
            parts.append(f"[Player {sender}] {text}" if type(sender) is int and sender >= 0 else text)
    return "\n\n".join(parts)
