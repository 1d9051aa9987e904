"""Sudoku boards as bit masks, and RAGEN-2's puzzle generator reproduced draw for draw.

A board of side ``n`` (4 or 9, boxes of side ``sqrt(n)``) is a flat list of ``n * n``
ints in row-major order, 0 for an empty cell.  The digit ``d`` is the bit ``1 << d``
in a unit's mask, so "is ``d`` already in this row, column or box" is one ``&``.
"""

from __future__ import annotations

import array
import random
import sys
from functools import lru_cache
from typing import NamedTuple

SIZES = (4, 9)
# Words fetched at a time: a 4x4 puzzle takes about 90, a 9x9 one about 1,400 (up to 3x that).
_WORDS_PER_FETCH = {4: 128, 9: 1024}
# The share of cells RAGEN-2 empties for each difficulty (its ``cells_to_remove``).
BLANK_FRACTIONS = {"easy": 0.4, "medium": 0.5, "hard": 0.6}


class Layout(NamedTuple):
    """Where each cell of a board of side ``n`` sits: its row, column and box index."""

    n: int
    box: int  # the side of a box
    rows: tuple[int, ...]
    cols: tuple[int, ...]
    boxes: tuple[int, ...]
    digits: tuple[int, ...]  # 1..n
    full: int  # the mask of every digit


@lru_cache(maxsize=None)
def layout(n: int) -> Layout:
    box = round(n**0.5)
    cells = range(n * n)
    return Layout(
        n=n,
        box=box,
        rows=tuple(c // n for c in cells),
        cols=tuple(c % n for c in cells),
        boxes=tuple((c // n // box) * box + (c % n) // box for c in cells),
        digits=tuple(range(1, n + 1)),
        full=sum(1 << d for d in range(1, n + 1)),
    )


def blank_count(n: int, difficulty: str) -> int:
    """How many cells a puzzle leaves empty (RAGEN-2 truncates ``n * n * fraction``)."""
    return int(n * n * BLANK_FRACTIONS[difficulty])


class _Draws:
    """The permutations ``Random(seed).shuffle`` makes, computed from its raw 32-bit words.

    CPython's ``shuffle`` swaps ``x[i]`` with ``x[randbelow(i + 1)]`` for ``i`` from the
    end down to 1, and ``randbelow(m)`` takes the top ``m.bit_length()`` bits of one
    word, redrawing while the value is ``>= m``.  Only the Mersenne Twister words are
    CPython's stable primitive (``shuffle`` and ``randrange`` may change between
    releases), so the algorithm is pinned here.  The words are fetched in blocks (one
    ``getrandbits(32 * k)`` holds the next ``k`` words, the first in the lowest bits),
    which also makes a permutation several times cheaper than a ``shuffle`` call.
    """

    def __init__(self, seed: int, block: int = 256) -> None:
        self._random = random.Random(seed)
        self._block = block  # words per fetch
        self._words: list[int] = []
        self._next = 0

    def _fetch(self) -> None:
        size = self._block
        block = self._random.getrandbits(32 * size).to_bytes(4 * size, "little")
        words = array.array("I", block)  # "I" is 4 bytes on every platform CPython supports
        if sys.byteorder == "big":
            words.byteswap()
        self._words.extend(words.tolist())  # list items index faster than array items

    def permutation(self, values: tuple[int, ...]) -> list[int]:
        """``values`` in the order ``shuffle(list(values))`` leaves them."""
        plan = _swap_plan(len(values))
        while True:
            items = list(values)
            words, at = self._words, self._next
            try:
                for i, bound, shift in plan:
                    r = words[at] >> shift
                    at += 1
                    while r >= bound:
                        r = words[at] >> shift
                        at += 1
                    items[i], items[r] = items[r], items[i]
            except IndexError:  # ran out of fetched words: fetch more and start this one over
                self._fetch()
                continue
            self._next = at
            return items


@lru_cache(maxsize=None)
def _swap_plan(length: int) -> tuple[tuple[int, int, int], ...]:
    """``(i, bound, shift)`` of each swap of a shuffle: ``randbelow(bound)`` is a word's top bits."""
    return tuple((i, i + 1, 32 - (i + 1).bit_length()) for i in range(length - 1, 0, -1))


class Puzzle(NamedTuple):
    givens: tuple[int, ...]  # the puzzle: 0 = empty
    solution: tuple[int, ...]  # the filled board it was cut from


def generate(n: int, difficulty: str, seed: int) -> Puzzle:
    """RAGEN-2's puzzle for ``seed``: a random filled board, then random cells emptied.

    The filled board comes from a depth-first fill in row-major order that tries the
    digits of each cell in a freshly shuffled order; then every cell is listed in
    row-major order, the list is shuffled, and its first ``blank_count`` cells are
    emptied.  All draws come from ``random.Random(seed)`` in RAGEN-2's order (it seeds
    the global ``random`` with the same seed), so the puzzles are its puzzles.  The
    emptied puzzle may have several solutions (RAGEN-2 does not check).
    """
    geometry = layout(n)
    draws = _Draws(seed, _WORDS_PER_FETCH[n])
    board = [0] * (n * n)
    rows, cols, boxes = [0] * n, [0] * n, [0] * n
    cell_rows, cell_cols, cell_boxes = geometry.rows, geometry.cols, geometry.boxes
    permutation, digits = draws.permutation, geometry.digits

    def fill(cell: int) -> bool:
        if cell == n * n:
            return True
        order = permutation(digits)  # drawn on every visit, even when no digit fits
        r, c, b = cell_rows[cell], cell_cols[cell], cell_boxes[cell]
        taken = rows[r] | cols[c] | boxes[b]
        for digit in order:
            bit = 1 << digit
            if taken & bit:
                continue
            board[cell] = digit
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
            if fill(cell + 1):
                return True
            board[cell] = 0
            rows[r] ^= bit
            cols[c] ^= bit
            boxes[b] ^= bit
        return False

    fill(0)
    solution = tuple(board)
    cells = draws.permutation(tuple(range(n * n)))
    for cell in cells[: blank_count(n, difficulty)]:
        board[cell] = 0
    return Puzzle(givens=tuple(board), solution=solution)
