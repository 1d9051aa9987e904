"""The two numpy draws a 2048 spawn makes, taken straight from a PCG64 stream.

RAGEN-2 spawns with ``Generator.integers(0, n)`` (which empty cell) and
``Generator.random()`` (a 2 or a 4).  Through the ``Generator`` each costs a few
microseconds of call overhead, as much as the rest of a step; :class:`PCG64Draws` makes the
same two draws from the bit generator's raw 64-bit outputs, value for value as numpy 2.x:

* ``integers(0, n)`` with ``n`` below 2**32 is Lemire's bounded method on 32-bit draws,
  and a PCG64 32-bit draw is the low half of a 64-bit output whose high half is kept for
  the next 32-bit draw; ``n == 1`` draws nothing.
* ``random()`` is the top 53 bits of one 64-bit output, scaled to [0, 1).

``tests/test_game_2048.py`` checks both against numpy's ``Generator`` on many seeds.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_LOW_32 = 0xFFFFFFFF
_DOUBLE_UNIT = 1.0 / 9007199254740992.0  # 2**-53


class PCG64Draws:
    """``integers(0, n)`` and ``random()`` of a ``numpy.random.Generator(PCG64)``, drawn faster."""

    def __init__(self) -> None:
        self.bit_generator = np.random.PCG64(0)
        self._raw = self.bit_generator.random_raw
        self._half: int | None = None  # the high half of the last 64-bit output, not yet used

    def restart(self, state: dict[str, Any]) -> None:
        """Continue from a PCG64 ``bit_generator.state`` (a Generator's, to draw what it would)."""
        self.bit_generator.state = state
        self._half = state["uinteger"] if state["has_uint32"] else None

    def _next_uint32(self) -> int:
        half = self._half
        if half is not None:
            self._half = None
            return half
        raw = self._raw()
        self._half = raw >> 32
        return raw & _LOW_32

    def integers(self, n: int) -> int:
        """``Generator.integers(0, n)`` for ``1 <= n < 2**32``."""
        if n == 1:
            return 0
        product = self._next_uint32() * n
        leftover = product & _LOW_32
        if leftover < n:
            threshold = (_LOW_32 - (n - 1)) % n
            while leftover < threshold:
                product = self._next_uint32() * n
                leftover = product & _LOW_32
        return product >> 32

    def random(self) -> float:
        """``Generator.random()``."""
        return (self._raw() >> 11) * _DOUBLE_UNIT
