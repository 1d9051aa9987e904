"""Connect Four's ``rgb_array`` picture: the upright blue grid, X's stones red, O's yellow."""

from __future__ import annotations

import numpy as np

from ragen_bench.envs import drawing

CELL = 32
_BOARD, _HOLE = (30, 80, 180), (236, 240, 246)
_STONES = {1: (214, 48, 48), 2: (242, 200, 40)}


def _slot(player: int) -> np.ndarray:
    tile = drawing.canvas(CELL, CELL, _BOARD)
    drawing.fill_disk(tile, CELL / 2, CELL / 2, 12.5, _STONES.get(player, _HOLE))
    return tile


TILES = drawing.stack_tiles([_slot(player) for player in (0, 1, 2)])  # empty, X, O


def draw(cells: np.ndarray) -> np.ndarray:
    """The grid whose ``cells`` (row 0 on top) are 0 (empty), 1 (X) or 2 (O)."""
    return drawing.tile_picture(cells, TILES)
