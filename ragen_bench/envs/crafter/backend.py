"""The one place that loads crafter (1.8.3) for ``RAGEN/Crafter-v0``, made the same in every process.

Nothing here imports crafter at import time: registering the id and importing ``ragen_bench``
never touch it.  crafter's ``Env`` keeps each chunk's creatures in a ``set``, whose order follows
memory addresses, and draws which creature to despawn by its index in that order (crafter#31, #36):
the same seed and actions then diverge across processes.  :func:`make_world` builds a subclass that
hands the balancing the creatures sorted by position (positions are unique: one object a cell),
which changes nothing else.  numba, in the same extra, only makes opensimplex's world generation
faster (1.1 s -> 0.06 s a reset); the worlds are the same with or without it (tests/test_crafter.py).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

import numpy as np

from ragen_bench.envs.base import MissingExtra

if TYPE_CHECKING:
    from crafter import Env

LIBRARY = "crafter"
EXTRA = "crafter"
INSTALL_HINT = (f"RAGEN/Crafter-v0 needs crafter 1.8.3 (and numba for fast resets), the '{EXTRA}' extra: "
                f"pip install 'ragen-bench[{EXTRA}]'")

_CLASS: type | None = None


def _import(module: str) -> ModuleType:
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as error:
        if (error.name or "").split(".")[0] in (LIBRARY, "opensimplex"):
            raise MissingExtra(INSTALL_HINT) from None
        raise


def _ordered_class() -> type:
    global _CLASS
    if _CLASS is None:
        base = _import("crafter").Env

        class OrderedEnv(base):  # type: ignore[misc, valid-type]
            """crafter's Env whose creature balancing sees each chunk's objects in position order."""

            def _balance_object(self, chunk: Any, objs: Any, *args: Any) -> None:
                super()._balance_object(chunk, sorted(objs, key=lambda obj: (int(obj.pos[0]), int(obj.pos[1]))), *args)

            def _obs(self) -> None:
                # crafter draws its picture as every step's observation, and at night (daylight < 0.5)
                # the picture's noise takes numbers from the world's random state, which creatures
                # draw from too.  The text env draws no picture here but takes the same numbers (one
                # uniform draw per pixel of the view), so its episodes stay crafter's own at this size.
                if self._world.daylight < 0.5:
                    self._world.random.uniform(32, 127, tuple(self._local_view._grid * (self._size // self._view)))

            def picture(self) -> np.ndarray:
                """crafter's picture of the current state, leaving the world's random state as it was."""
                state = self._world.random.get_state()
                try:
                    return self.render()
                finally:
                    self._world.random.set_state(state)

            def reset_to(self, seed: int) -> None:
                """The world ``crafter.Env(seed=seed).reset()`` builds: crafter seeds episode ``k`` of
                ``Env(seed=s)`` with ``hash((s, k))``, an integer hash, the same in every process."""
                self._seed, self._episode = seed, 0
                self.reset()

        _CLASS = OrderedEnv
    return _CLASS


def make_world(length: int, size: int) -> Env:
    """A crafter ``Env`` of BALROG's area and view, ``length`` steps an episode and ``size``-pixel
    pictures, with :meth:`reset_to` (one per env: crafter loads its textures once, 0.1 s)."""
    return _ordered_class()(area=(64, 64), view=(9, 9), size=(size, size), length=length, seed=0)
