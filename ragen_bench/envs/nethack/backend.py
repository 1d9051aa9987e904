"""The one place that loads nle (1.3.0) and minihack (1.0.2) for the RAGEN/MiniHack-* and RAGEN/NetHack-v0 ids.

Nothing here imports them at import time: registering the ids and importing ``ragen_bench``
never touch them.  nle pins gymnasium 1.2.0, so the ``nethack`` extra lives in its own virtualenv
(``scripts/setup_nethack_venv.sh``) rather than beside the project's newer gymnasium.
"""

from __future__ import annotations

import importlib
import warnings
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


def make(task: str) -> gymnasium.Env:
    """The library's env of ``task`` (a key of ``table.MINIHACK`` or ``"NetHack"``), unwrapped, with
    BALROG's arguments and ``fix_moon_phase``: the moon, Friday the 13th and the night come from the
    seed, not from today's date."""
    import gymnasium

    _import("nle")
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
