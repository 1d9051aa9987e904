"""The multi-agent id table (``RAGEN/TicTacToe-v0`` ...), :func:`make_multiagent` and :func:`make_match_env`.

Kept free of PettingZoo so that ``import ragen_bench`` stays light: a game's module
(which subclasses PettingZoo's ``AECEnv``/``ParallelEnv``) is imported only when
:func:`make_multiagent` builds it.  As for the single-agent ids, an id is a promise:
a change to what any seed produces needs a new version suffix.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ragen_bench import values
from ragen_bench.data import textarena
from ragen_bench.envs.base import MissingExtra

if TYPE_CHECKING:
    from types import ModuleType

    # Types only: PettingZoo is imported with the game's module, when an id is made.
    from pettingzoo import AECEnv, ParallelEnv

INSTALL_HINT = "the multi-agent games need PettingZoo: pip install 'ragen-bench[games]'"
# The top-level modules each extra brings; a game whose extra is missing says which extra to install.
EXTRA_MODULES = {
    "games": ("pettingzoo",), "openspiel": ("pettingzoo", "pyspiel", "shimmy"),
    "textarena": ("pettingzoo", "textarena", "numpy"),
}


@dataclass(frozen=True)
class GameEntry:
    """One multi-agent id.

    ``family`` is the game's folder under ``data/`` (card, panels) and its package
    under ``ragen_bench/games/``.  ``parallel``: the game is simultaneous-move and has
    a ``parallel_env()``.  ``default_opponent`` is the scripted player an eval uses
    when none is named.  ``extra`` is the install extra the game needs (:data:`EXTRA_MODULES`).
    ``seats``: how many players (``player_0`` ... ``player_<seats-1>``); the agent takes one, opponents the rest.
    """

    id: str
    family: str
    parallel: bool
    default_opponent: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    extra: str = "games"
    # The seeds of each split's panel, where the game's differ from the defaults (panels.DEFAULT_SPLIT_SEEDS).
    split_seeds: dict[str, range] | None = None
    seats: int = 2

    @property
    def module(self) -> str:
        return f"ragen_bench.games.{self.family}"

    @property
    def install_hint(self) -> str:
        if self.extra == "games":
            return INSTALL_HINT
        return f"needs the {self.extra!r} extra: pip install 'ragen-bench[{self.extra}]'"

    def missing_extra(self) -> str | None:
        """The install hint when a module of the game's extra is not installed (nothing is imported), else ``None``."""
        missing = any(importlib.util.find_spec(name) is None for name in EXTRA_MODULES[self.extra])
        return self.install_hint if missing else None


def _openspiel(name: str, game: str, description: str) -> GameEntry:
    """An OpenSpiel game through shimmy (:mod:`ragen_bench.games.openspiel`); MCTS opponent by default."""
    return GameEntry(
        f"RAGEN/OS-{name}-v0", "openspiel", parallel=False, default_opponent="mcts", kwargs=dict(game=game),
        description=f"OpenSpiel {game}: {description}", extra="openspiel",
    )


# TextArena's panels are as small as its single-player ids' (32 train, 32 validation, 64 test seeds).
_TEXTARENA_SEEDS = {"train": range(10_000, 10_032), "val": range(1000, 1032), "test": range(123, 187)}


def _textarena(game: str, seats: int) -> GameEntry:
    """A TextArena game of ``seats`` players (:mod:`ragen_bench.games.textarena`); random legal-ish opponents by default."""
    name = game.removesuffix("-v0")
    players = "" if seats == 2 else f"{seats} seats, "
    return GameEntry(
        f"RAGEN/TA-{name}-v0", "textarena", parallel=False, default_opponent="random", kwargs=dict(game=game),
        description=f"TextArena's {name} at its own settings, {players}moves as free text, its random state isolated.",
        extra="textarena", split_seeds=_TEXTARENA_SEEDS, seats=seats,
    )


GAME_ENTRIES: tuple[GameEntry, ...] = (
    GameEntry(
        "RAGEN/TicTacToe-v0", "tictactoe", parallel=False, default_opponent="minimax",
        description="Two seats, turn-based, 3x3; the minimax opponent never loses.",
    ),
    GameEntry(
        "RAGEN/ConnectFour-v0", "connect_four", parallel=False, default_opponent="strong",
        description="Two seats, turn-based, 6x7; depth-6 alpha-beta opponent (strength in the card).",
    ),
    GameEntry(
        "RAGEN/PrisonersDilemma-v0", "prisoners_dilemma", parallel=True, default_opponent="tit_for_tat",
        kwargs=dict(min_rounds=5, max_rounds=10, message_chars=200),
        description="Two seats, simultaneous; 5-10 rounds (seed decides), one message per round each.",
    ),
    _openspiel("KuhnPoker", "kuhn_poker", "three-card poker, one bet; the seed deals."),
    _openspiel("LeducPoker", "leduc_poker", "six-card poker, two betting rounds; the seed deals."),
    _openspiel("Pig", "pig", "dice, first to bank 20; the seed rolls."),
    _openspiel("Nim", "nim", "misere Nim on piles 1 3 5 7."),
    _openspiel("DotsAndBoxes", "dots_and_boxes", "2x2 boxes."),
    _openspiel("Hex", "hex", "5x5 board."),
    _openspiel("Othello", "othello", "8x8 board."),
    _openspiel("Clobber", "clobber", "4x4 board."),
    *(_textarena(game, 2) for game in textarena.TWO_PLAYER),
    *(_textarena(game, seats) for game, seats in textarena.MANY_PLAYERS.items()),
)

GAME_IDS: tuple[str, ...] = tuple(row.id for row in GAME_ENTRIES)
_BY_ID = {row.id: row for row in GAME_ENTRIES}


def game_entry(env_id: str) -> GameEntry:
    """The table row of ``env_id``; a clear error suggests the closest game ids otherwise."""
    try:
        return _BY_ID[env_id]
    except KeyError:
        raise KeyError(values.unknown_name("multi-agent id", env_id, GAME_IDS, "`ragen-bench envs list`")) from None


def game_module(env_id: str) -> ModuleType:
    """The game's package (``env``, ``raw_env``, ``parallel_env``), or ImportError with the install hint."""
    row = game_entry(env_id)
    try:
        return importlib.import_module(row.module)
    except ModuleNotFoundError as error:
        if error.name is not None and error.name.split(".")[0] in EXTRA_MODULES[row.extra]:
            raise MissingExtra(f"{env_id}: {row.install_hint}") from None
        raise


def make_multiagent(env_id: str, *, parallel: bool = False, **kwargs: Any) -> AECEnv | ParallelEnv:
    """A PettingZoo env for ``env_id``: the wrapped AEC ``env()``, or ``parallel_env()`` with ``parallel=True``.

    ``kwargs`` override the id's own arguments (as ``gymnasium.make`` does).
    """
    row = game_entry(env_id)
    if parallel and not row.parallel:
        raise ValueError(f"{env_id} is turn-based: it has no parallel_env(); call make_multiagent({env_id!r})")
    module = game_module(env_id)
    settings = {**row.kwargs, **kwargs}
    return module.parallel_env(**settings) if parallel else module.env(**settings)


def make_match_env(env_id: str, *, seed: int, **kwargs: Any) -> AECEnv | ParallelEnv:
    """The env a match of ``env_id`` steps, reset with ``seed``: the one PettingZoo users get.

    A turn-based game's wrapped AEC ``env()``; a simultaneous game's ``parallel_env()`` (the
    Parallel API's env is the game itself).  The seats read the game under it (``.unwrapped``).
    ``kwargs`` override the id's own arguments, as for :func:`make_multiagent`.
    """
    env = make_multiagent(env_id, parallel=game_entry(env_id).parallel, **kwargs)
    env.reset(seed=seed)
    return env
