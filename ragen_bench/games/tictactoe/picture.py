"""Tic-Tac-Toe's ``rgb_array`` picture: the 3x3 grid with X (first player) and O marks."""

from __future__ import annotations

import numpy as np

from ragen_bench.envs import drawing

CELL = 48
_PAPER, _LINE = (248, 246, 238), (60, 60, 70)
_X, _O = (206, 60, 50), (40, 100, 200)


def _mark(player: int) -> np.ndarray:
    tile = drawing.canvas(CELL, CELL, _PAPER)
    if player == 1:
        drawing.fill_line(tile, (10, 10), (CELL - 10, CELL - 10), 6, _X)
        drawing.fill_line(tile, (10, CELL - 10), (CELL - 10, 10), 6, _X)
    elif player == 2:
        drawing.fill_ring(tile, CELL / 2, CELL / 2, 15, 9, _O)
    # The grid: each tile carries a line along its right and bottom edges.
    drawing.fill_rect(tile, 0, CELL - 2, CELL, 2, _LINE)
    drawing.fill_rect(tile, CELL - 2, 0, 2, CELL, _LINE)
    return tile


TILES = drawing.stack_tiles([_mark(player) for player in (0, 1, 2)])  # empty, X, O


def draw(cells: np.ndarray) -> np.ndarray:
    """The board whose ``cells`` are 0 (empty), 1 (X) or 2 (O)."""
    image = drawing.tile_picture(cells, TILES)
    # The outer edges are the board's frame, not grid lines: keep only the inner ones.
    image[-2:, :] = _PAPER
    image[:, -2:] = _PAPER
    return image
