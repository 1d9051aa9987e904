"""Sudoku's ``rgb_array`` picture: given digits dark, placed digits blue, thick lines between boxes."""

from __future__ import annotations

import math
from functools import lru_cache

import numpy as np

from ragen_bench.envs import drawing

CELL = 32
_PAPER, _GIVEN_CELL = (252, 252, 248), (226, 228, 232)
_THIN, _THICK = (170, 170, 180), (30, 30, 40)
_GIVEN, _PLACED = (20, 20, 30), (30, 90, 200)
_DIGIT_HEIGHT = 18
_DIGITS = 10  # 0 (empty) .. 9


def _cell(digit: int, given: bool) -> np.ndarray:
    tile = drawing.canvas(CELL, CELL, _GIVEN_CELL if given else _PAPER)
    if digit:
        drawing.draw_number(tile, str(digit), CELL / 2, CELL / 2, _DIGIT_HEIGHT, _GIVEN if given else _PLACED)
    return tile


# Code ``digit + 10 * given``: placed (or empty) cells first, then the given ones.
TILES = drawing.stack_tiles([_cell(digit, given) for given in (False, True) for digit in range(_DIGITS)])


@lru_cache(maxsize=None)
def _grid_lines(n: int) -> tuple[np.ndarray, np.ndarray]:
    """The masks of the thin and the thick lines over an ``n x n`` board's picture."""
    box, side = math.isqrt(n), n * CELL + 1
    thin, thick = np.zeros((side, side), dtype=bool), np.zeros((side, side), dtype=bool)
    for line in range(n + 1):
        mask, width = (thick, 3) if line % box == 0 else (thin, 1)
        at = max(line * CELL - width // 2, 0)
        mask[at : at + width, :] = True
        mask[:, at : at + width] = True
    thin &= ~thick
    for mask in (thin, thick):
        mask.flags.writeable = False
    return thin, thick


def draw(board: np.ndarray, givens: np.ndarray) -> np.ndarray:
    """The ``(n, n)`` ``board`` (0 = empty); cells nonzero in ``givens`` are the puzzle's own."""
    n = board.shape[0]
    cells = drawing.tile_picture(board.astype(np.intp) + _DIGITS * (givens != 0), TILES)
    image = drawing.canvas(n * CELL + 1, n * CELL + 1, _PAPER)
    image[: n * CELL, : n * CELL] = cells
    thin, thick = _grid_lines(n)
    image[thin] = _THIN
    image[thick] = _THICK
    return image
