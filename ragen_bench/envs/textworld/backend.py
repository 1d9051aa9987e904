"""The one place that loads textworld (1.7.0) and the frozen game files for the TextWorld ids.

Nothing here imports textworld at import time: registering the ``RAGEN/TextWorld-*`` ids and
importing ``ragen_bench`` never touch it.  The games ship gzipped in data/textworld/games/ (as
``scripts/textworld_games.py`` wrote them once); the player needs plain files, so each game is
unpacked once into the user cache, its bytes checked against data/textworld/games/manifest.json.
"""

from __future__ import annotations

import gzip
import hashlib
import importlib
import json
import warnings
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from ragen_bench import data
from ragen_bench.cache import build_once, cache_root
from ragen_bench.data.textworld import GAME_TYPES, SPLITS  # the games: a table the registry reads too
from ragen_bench.envs.base import MissingExtra

if TYPE_CHECKING:
    from textworld.envs.wrappers.tw_inform7 import TWInform7

LIBRARY = "textworld"
EXTRA = "textworld"
INSTALL_HINT = f"the RAGEN/TextWorld-* ids need textworld 1.7.0, the '{EXTRA}' extra: pip install 'ragen-bench[{EXTRA}]'"
SUFFIXES = ("z8", "json")  # the story file jericho runs, and TextWorld's description of the game


class GameFileError(RuntimeError):
    """A frozen game file is missing or its bytes differ from the manifest's checksum."""


def _import(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] in (LIBRARY, "jericho"):
            raise MissingExtra(INSTALL_HINT) from None
        raise


def frozen_seeds(kind: str) -> tuple[int, ...]:
    """Every seed of ``kind`` that has a frozen game, in split order (test, val, train)."""
    return tuple(seed for seeds in SPLITS[kind].values() for seed in seeds)


@cache
def manifest() -> dict[str, dict[str, dict[str, str]]]:
    """data/textworld/games/manifest.json: type -> seed -> file suffix -> sha256 of the unpacked bytes."""
    return json.loads((data.data_root() / "textworld" / "games" / "manifest.json").read_text(encoding="utf-8"))


def game_file(kind: str, seed: int) -> Path:
    """The unpacked story file of game ``seed`` of ``kind`` (its .json beside it), unpacking it once."""
    expected = manifest().get(kind, {}).get(str(seed))
    if expected is None or kind not in GAME_TYPES:
        raise GameFileError(f"no frozen TextWorld game {kind}/{seed} in data/textworld/games/manifest.json")
    stamp = {"kind": kind, "seed": seed, **expected}
    target = cache_root() / "textworld" / kind / f"{seed}-{expected['z8'][:16]}"
    return build_once(target, lambda staging: _unpack(kind, seed, expected, staging), stamp) / "game.z8"


def _unpack(kind: str, seed: int, expected: dict[str, str], staging: Path) -> None:
    games = data.data_root() / "textworld" / "games" / kind
    for suffix in SUFFIXES:
        packed = games / f"{seed}.{suffix}.gz"
        if not packed.is_file():
            raise GameFileError(f"frozen TextWorld game file {kind}/{seed}.{suffix}.gz is missing")
        unpacked = gzip.decompress(packed.read_bytes())
        if hashlib.sha256(unpacked).hexdigest() != expected[suffix]:
            raise GameFileError(f"{kind}/{seed}.{suffix}.gz does not match its checksum in manifest.json")
        (staging / f"game.{suffix}").write_bytes(unpacked)


def start(path: Path) -> TWInform7:
    """TextWorld's own env for the story file ``path``, asked for what the env reports each step."""
    textworld = _import("textworld")
    _import("jericho")
    infos = textworld.EnvInfos(objective=True, score=True, max_score=True, won=True, lost=True, extras=["walkthrough"])
    with warnings.catch_warnings():
        # jericho warns that it cannot read a TextWorld game's score itself: TextWorld tracks it.
        warnings.filterwarnings("ignore", message=".*is not fully supported")
        return textworld.start(str(path), request_infos=infos)
