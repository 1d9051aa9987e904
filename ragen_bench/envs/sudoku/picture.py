"""Sudoku's ``rgb_array`` picture: given digits dark, placed digits blue, thick lines between boxes."""

from __future__ import annotations

import math

import numpy as np

from ragen_bench.envs import drawing

CELL = 32
_PAPER, _GIVEN_CELL = (252, 252, 248), (226, 228, 232)
_THIN, _THICK = (170, 170, 180), (30, 30, 40)
_GIVEN, _PLACED = (20, 20, 30), (30, 90, 200)
_DIGIT_HEIGHT = 18


def draw(board: np.ndarray, givens: np.ndarray) -> np.ndarray:
    """The ``(n, n)`` ``board`` (0 = empty); cells nonzero in ``givens`` are the puzzle's own."""
    n = board.shape[0]
    box = math.isqrt(n)
    side = n * CELL + 1
    image = drawing.canvas(side, side, _PAPER)
    for row, col in zip(*np.nonzero(givens)):
        drawing.fill_rect(image, row * CELL, col * CELL, CELL, CELL, _GIVEN_CELL)
    for line in range(n + 1):
        color, width = (_THICK, 3) if line % box == 0 else (_THIN, 1)
        at = line * CELL - width // 2
        drawing.fill_rect(image, at, 0, width, side, color)
        drawing.fill_rect(image, 0, at, side, width, color)
    for row, col in zip(*np.nonzero(board)):
        color = _GIVEN if givens[row, col] else _PLACED
        drawing.draw_number(image, str(board[row, col]), (row + 0.5) * CELL, (col + 0.5) * CELL, _DIGIT_HEIGHT, color)
    return image
