"""TextArena 0.7.4 as this project uses it: the import, the isolated random state, the observation text.

TextArena seeds Python's *global* ``random`` (``random.seed(seed)`` when a game builds its
state) and its games draw from it on every later call.  Anything else in the process that
draws from it between two calls (an agent sampling, a library shuffling) changes the game.
:class:`IsolatedRandom` gives each game a generator of its own, which TextArena's modules
see as their ``random`` during the game's calls only, so a game's episode depends on its
seed and its actions alone.
"""

from __future__ import annotations

import copy
import importlib
import random
import sys
from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, TypeVar


from ragen_bench.envs.base import MissingExtra

if TYPE_CHECKING:
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
    outer = random.getstate()
    try:
        library = importlib.import_module(LIBRARY)
    except ModuleNotFoundError as error:
        # textarena imports numpy without declaring it: either missing is the extra missing.
        if (error.name or "").split(".")[0] in (LIBRARY, "numpy"):
            raise MissingExtra(INSTALL_HINT) from None
        raise TextArenaError(f"{LIBRARY} failed to import: {type(error).__name__}: {error}") from error
    finally:
        random.setstate(outer)  # importing textarena draws from the process's generator: undone
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


class _Dropped:
    """A stdout that keeps nothing (cheaper per call than ``contextlib.redirect_stdout``)."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


_DROPPED = _Dropped()


class GameRandom(random.Random):
    """A game's own generator, standing in for the ``random`` module inside TextArena's modules.

    TextArena calls only module functions (``random.choice``, ``random.seed`` ...), which a
    ``random.Random`` has as methods, and ``random.Random(seed)`` to build a generator of its own.
    """

    Random = random.Random


class IsolatedRandom:
    """One game's own ``random``, put in place of the module inside TextArena's modules around every call.

    ``call(fn, ...)`` binds the name ``random`` in every TextArena module that imported the
    module to this game's :class:`GameRandom`, runs ``fn``, and binds the module back -- also
    when ``fn`` raises.  So the game never reads or moves the process's generator, and nothing
    the process draws moves the game's.  The generator starts from the seed (:meth:`restart`),
    before TextArena seeds it itself, so draws a game makes before that are pinned too.  No
    game that is an id here draws from numpy's global generator (Sokoban builds its own from
    the seed), so numpy's is left alone.
    """

    __slots__ = ("random", "_modules")

    def __init__(self, seed: int = 0) -> None:
        self.random = GameRandom(seed)
        self._modules = _modules_using_random()

    def adopt(self, game: object) -> None:
        """Point the game's attributes that hold a method of the process's generator at the game's own.

        Secretary keeps ``random.random`` itself (bound when the game is built) as its sampler,
        which no module binding reaches.
        """
        for name, value in list(vars(game).items()):
            if getattr(value, "__self__", None) is _PROCESS_GENERATOR:
                setattr(game, name, getattr(self.random, value.__name__))

    def restart(self, seed: int) -> None:
        """Start the game's generator from ``seed`` (and find the TextArena modules loaded since the last reset)."""
        self.random.seed(seed)
        self.refresh()

    def refresh(self) -> None:
        """Find the TextArena modules that imported ``random`` (again: a game may have loaded more)."""
        self._modules = _modules_using_random()

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(...)`` with the game's generator in place, and what the game prints dropped: some games
        print (RushHour's generator), and the user's stdout may be a table, a JSON stream or a protocol."""
        own, stdout = self.random, sys.stdout
        for module in self._modules:
            module.random = own  # type: ignore[attr-defined]
        sys.stdout = _DROPPED
        try:
            return fn(*args, **kwargs)
        finally:
            sys.stdout = stdout
            for module in self._modules:
                module.random = random  # type: ignore[attr-defined]

    def __getstate__(self) -> GameRandom:
        return self.random

    def __setstate__(self, state: GameRandom) -> None:
        self.random = state
        self._modules = _modules_using_random()


def _modules_using_random() -> tuple[ModuleType, ...]:
    """TextArena's loaded modules that imported ``random`` (between calls every one holds the module itself).

    Scanning ``sys.modules`` costs more than a game's reset, so the answer is kept until the
    process loads another module.
    """
    global _SCANNED
    if _SCANNED[0] != len(sys.modules):
        found = tuple(
            module for name, module in list(sys.modules.items())
            if name.partition(".")[0] == LIBRARY and getattr(module, "random", None) is random
        )
        _SCANNED = (len(sys.modules), found)
    return _SCANNED[1]


_SCANNED: tuple[int, tuple[ModuleType, ...]] = (-1, ())
_PROCESS_GENERATOR = random.random.__self__  # the hidden random.Random behind the module's functions


def copy_game(rng: IsolatedRandom, game: Env) -> Env:
    """A deep copy of ``game`` that shares the game's generator (which a game's bound sampler may hold)."""
    return rng.call(copy.deepcopy, game, {id(rng.random): rng.random})


def takes(rng: IsolatedRandom, game: Env, move: str, player: int) -> bool:
    """Whether TextArena would take ``move`` from ``player`` now: tried on a copy of ``game``.

    The game and its generator are left exactly as they were (the generator's state is put back).
    Taken means the turn moved on and no invalid move was recorded (a second invalid move in a
    row ends the game, and TextArena counts that turn too).
    """
    saved = rng.random.getstate()
    try:
        trial = copy_game(rng, game)
        turn = trial.state.turn
        rng.call(trial.step, move)
        return trial.state.turn > turn and not trial.state.game_info[player].get("invalid_move")
    except Exception:  # a move that crashes the game is no move to play
        return False
    finally:
        rng.random.setstate(saved)


def make_game(ta_id: str, rng: IsolatedRandom | None = None) -> Env:
    """TextArena's game ``ta_id`` without its wrappers (``-raw``): the text is ours to lay out.

    With ``rng`` the game is built inside its isolation (RushHour deals a puzzle in its
    constructor): the game's module is imported first, so that its ``random`` is bound too,
    and any bound sampler of the process's generator is then pointed at the game's.
    """
    library = load_library()
    raw = f"{ta_id}-raw"
    if rng is None:
        return library.make(raw)
    entry_point = library.envs.registration.ENV_REGISTRY[raw].entry_point
    if isinstance(entry_point, str):
        importlib.import_module(entry_point.partition(":")[0])
    rng.refresh()
    game = rng.call(library.make, raw)
    rng.adopt(game)
    return game


def message_text(messages: list[Any]) -> str:
    """TextArena's messages to one player, as one text: each message's own words, one after another.

    A message is ``(from_id, text, kind)``; what a player said is shown after its name, the
    game's own messages as they are.  A game that passes the three in another order
    (Countdown echoes a move as ``(kind, player, text)``) still shows its text.
    """
    parts = []
    for message in messages:
        sender, text = message[0], message[1]
        if text.__class__ is not str:
            text = next((part for part in message if isinstance(part, str)), "")
        text = text.strip()
        if text:
            parts.append(text if sender.__class__ is not int or sender < 0 else f"[Player {sender}] {text}")
    return "\n\n".join(parts)
