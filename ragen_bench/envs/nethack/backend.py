"""The one place that loads nle (1.3.0) and minihack (1.0.2) for the RAGEN/MiniHack-* and RAGEN/NetHack-v0 ids.

Nothing here imports them at import time: registering the ids and importing ``ragen_bench``
never touch them.  nle pins gymnasium 1.2.0, so the ``nethack`` extra lives in its own virtualenv
(``scripts/setup_nethack_venv.sh``) rather than beside the project's newer gymnasium.
"""

from __future__ import annotations

import importlib
import warnings
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

import numpy as np

from ragen_bench.data import nethack as table
from ragen_bench.envs.base import MissingExtra

if TYPE_CHECKING:
    import gymnasium

LIBRARY = "nle"
EXTRA = "nethack"
INSTALL_HINT = (f"the RAGEN/MiniHack-* and RAGEN/NetHack-v0 ids need nle 1.3.0 and minihack 1.0.2, the '{EXTRA}' "
                f"extra: pip install 'ragen-bench[{EXTRA}]' in a virtualenv of its own, as "
                f"scripts/setup_nethack_venv.sh makes (nle pins gymnasium 1.2.0)")
# What the text view and the picture read; NetHack's own screen descriptions name each map cell.
OBSERVATION_KEYS = ("glyphs", "chars", "blstats", "message", "screen_descriptions", "tty_chars")


def _import(module: str) -> ModuleType:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # minihack 1.0.2 imports the deprecated pkg_resources
            return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] in (LIBRARY, "minihack", "pkg_resources"):
            raise MissingExtra(INSTALL_HINT) from None
        raise


# NetHack reads the wall clock for the game's start (u_init: ``time(&ubirthday)``), from which shknam.c names
# each shopkeeper (``ubirthday / 257``) and takes random draws for some names, and through ``getnow()``
# wherever else it asks the time: even with ``fix_moon_phase`` a level with a shop played otherwise minutes
# later.  nle loads a fresh copy of its library for every game from ``nle.nethack.nethack.DLPATH``; ours is a
# copy in which both readings give FIXED_NOW, made once in the user cache (x86-64 code of nle 1.3.0's
# manylinux library, checked byte for byte before it is changed):
#   getnow      -> mov rax, FIXED_NOW; ret
#   getnow + 8  -> a stand-in for time(t): mov qword [rdi], FIXED_NOW; mov rax, FIXED_NOW; ret
#   u_init's call of time@plt -> a call of that stand-in (its t is &ubirthday)
FIXED_NOW = 1_700_000_000
LIBRARY_SHA256 = "becf6478c75e40cf9488d6127892951f28ef8736b7b71ce22c37af006b280027"
GETNOW = 0x1038E0  # nm -D libnethack.so; its 48 bytes end at getyear (0x103910)
U_INIT_TIME_CALL = 0x21C656


def _patches() -> dict[int, tuple[bytes, bytes]]:
    """``{offset: (the library's bytes there, ours)}``."""
    import struct

    now = struct.pack("<i", FIXED_NOW)
    stand_in = GETNOW + 8
    call = b"\xe8" + struct.pack("<i", stand_in - (U_INIT_TIME_CALL + 5))
    return {
        GETNOW: (bytes.fromhex("4883ec1848c74424"), b"\x48\xc7\xc0" + now + b"\xc3"),
        stand_in: (bytes.fromhex("0800000000488d7c2408e8d950f5"), b"\x48\xc7\x07" + now + b"\x48\xc7\xc0" + now + b"\xc3"),
        U_INIT_TIME_CALL: (bytes.fromhex("e875c3e3ff"), call),
    }


def fixed_clock_library(original: Path) -> Path:
    """The path of a copy of ``original`` (nle's libnethack.so) whose clock reads :data:`FIXED_NOW`, built once."""
    import hashlib
    import os

    from ragen_bench.cache import cache_root

    data = original.read_bytes()
    patches = _patches()
    if hashlib.sha256(data).hexdigest() != LIBRARY_SHA256 or any(
            data[offset:offset + len(theirs)] != theirs for offset, (theirs, _) in patches.items()):
        raise RuntimeError(f"{original} is not nle 1.3.0's x86-64 library: NetHack's clock (which names its "
                           "shopkeepers) cannot be fixed, so its episodes would depend on the time of day")
    patched = cache_root() / "nle" / f"libnethack-{LIBRARY_SHA256[:16]}-now{FIXED_NOW}.so"
    if not patched.exists():
        body = bytearray(data)
        for offset, (_, ours) in patches.items():
            body[offset:offset + len(ours)] = ours
        patched.parent.mkdir(parents=True, exist_ok=True)
        temporary = patched.with_name(f"{patched.name}.{os.getpid()}.tmp")
        temporary.write_bytes(bytes(body))
        os.replace(temporary, patched)  # atomic: a concurrent maker writes the same bytes
    return patched


def make(task: str) -> gymnasium.Env:
    """The library's env of ``task`` (a key of ``table.MINIHACK`` or ``"NetHack"``), unwrapped, with
    BALROG's arguments and ``fix_moon_phase``: the moon, Friday the 13th and the night come from the
    seed, not from today's date; the start time is :data:`FIXED_NOW` (:func:`fixed_clock_library`)."""
    import gymnasium

    library = _import("nle.nethack.nethack")
    if not getattr(library, "RAGEN_FIXED_CLOCK", False):
        library.DLPATH = str(fixed_clock_library(Path(library.DLPATH)))
        library.RAGEN_FIXED_CLOCK = True
    if task == "NetHack":
        nethack = _import("nle.nethack")
        # NetHackChallenge-v0's settings (its own class refuses seeds), BALROG's step limit.
        env = gymnasium.make("NetHackScore-v0", actions=nethack.ACTIONS, character="@", allow_all_yn_questions=True,
                             allow_all_modes=True, penalty_step=0.0, max_episode_steps=table.NETHACK_STEPS,
                             observation_keys=OBSERVATION_KEYS, fix_moon_phase=True)
    else:
        _import("minihack")
        env = gymnasium.make(table.MINIHACK[task][0], character="@", max_episode_steps=table.MINIHACK_STEPS,
                             penalty_step=-0.01, penalty_time=0.0, penalty_mode="constant", autopickup=False,
                             observation_keys=OBSERVATION_KEYS, fix_moon_phase=True)
    return env.unwrapped


def seed(env: gymnasium.Env, seed: int) -> None:
    """Seed NetHack's core, display and level RNGs for the next reset, never reseeded from the clock
    (``reset(seed=...)`` alone leaves NetHack's own RNGs unseeded)."""
    env.seed(core=seed, disp=seed, reseed=False, lgen=seed)


def plain_glyphs() -> np.ndarray:
    """``mask[glyph]``: True for the map features the text view never names (solid rock, walls, room
    floor lit and dark, corridors lit and dark: NetHack's defsyms 0-11 and 19-22), so only the other
    cells' descriptions are read."""
    nethack = _import("nle.nethack")
    mask = np.zeros(nethack.MAX_GLYPH, dtype=bool)
    for symbol in (*range(12), 19, 20, 21, 22):
        mask[nethack.GLYPH_CMAP_OFF + symbol] = True
    return mask


def action_indices(env: gymnasium.Env, names: tuple[str, ...]) -> tuple[int, ...]:
    """Each named action's index in the library env's action list."""
    keys = [int(action) for action in env.actions]
    return tuple(keys.index(table.ACTION_KEYS[name]) for name in names)


def tile_picture(glyphs: np.ndarray) -> np.ndarray:
    """NetHack's 16x16 tiles for the map's glyphs (MiniHack's glyph mapper), ``uint8 (16 * rows, 16 * columns, 3)``."""
    global _MAPPER
    if _MAPPER is None:
        module = _import("minihack.tiles.glyph_mapper")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)  # minihack 1.0.2 leaves its tile file open
            _MAPPER = module.GlyphMapper()
    return np.ascontiguousarray(_MAPPER.to_rgb(glyphs), dtype=np.uint8)


_MAPPER = None  # MiniHack's GlyphMapper, loaded once a process (its tiles are a 2 MB pickle)
