"""The one place that loads minigrid (3.2.0) for the BabyAI ids.

Nothing here imports minigrid at import time: registering the ``RAGEN/BabyAI-*`` ids and
importing ``ragen_bench`` never touch it, so they cost nothing without the ``babyai`` extra.
"""

from __future__ import annotations

import contextlib
import importlib
import io
from types import ModuleType
from typing import TYPE_CHECKING, Any

from ragen_bench.data.babyai import LEVELS  # the levels: a table the registry reads too
from ragen_bench.envs.base import MissingExtra

if TYPE_CHECKING:
    from minigrid.envs.babyai.core.roomgrid_level import RoomGridLevel
    from minigrid.utils.baby_ai_bot import BabyAIBot

LIBRARY = "minigrid"
EXTRA = "babyai"
INSTALL_HINT = f"the RAGEN/BabyAI-* ids need minigrid 3.2.0, the '{EXTRA}' extra: pip install 'ragen-bench[{EXTRA}]'"



def _import(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] == LIBRARY:
            raise MissingExtra(INSTALL_HINT) from None
        raise


def make_level(level: str, render_mode: str | None) -> RoomGridLevel:
    """A fresh minigrid env of ``level`` (its own defaults: room size, distractors, max_steps)."""
    return getattr(_import("minigrid.envs.babyai"), LEVELS[level][0])(render_mode=render_mode)


def make_bot(env: RoomGridLevel) -> BabyAIBot:
    """minigrid's BabyAIBot for the episode ``env`` has just reset to."""
    return _import("minigrid.utils.baby_ai_bot").BabyAIBot(env)


def quiet_reset(env: RoomGridLevel, seed: int) -> dict[str, Any]:
    """``env.reset(seed=seed)``'s observation; minigrid's level generator prints each layout it
    rejects ("Sampling rejected: ...") to stdout, which is the CLI's and a JSON consumer's."""
    with contextlib.redirect_stdout(io.StringIO()):
        observation, _ = env.reset(seed=seed)
    return observation
