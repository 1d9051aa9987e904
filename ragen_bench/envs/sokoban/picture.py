"""Sokoban's ``rgb_array`` picture: one 16x16 tile per cell (a 6x6 room is 96x96, as RAGEN-2's)."""

from __future__ import annotations

import numpy as np

from ragen_bench.envs import drawing

CELL = 16
_WALL, _MORTAR = (128, 52, 36), (88, 36, 26)
_FLOOR = (46, 46, 52)
_TARGET = (220, 60, 60)
_BOX, _BOX_EDGE = (196, 146, 66), (122, 84, 30)
_BOX_DONE, _BOX_DONE_EDGE = (84, 176, 84), (38, 104, 38)
_PLAYER, _PLAYER_HEAD = (70, 130, 230), (246, 214, 170)


def _floor(target: bool) -> np.ndarray:
    tile = drawing.canvas(CELL, CELL, _FLOOR)
    if target:
        drawing.fill_ring(tile, CELL / 2, CELL / 2, 5.5, 3.5, _TARGET)
    return tile


def _wall() -> np.ndarray:
    tile = drawing.canvas(CELL, CELL, _WALL)
    # Two courses of bricks, the upper one offset by half a brick.
    for row in (0, CELL // 2):
        drawing.fill_rect(tile, row, 0, 1, CELL, _MORTAR)
    drawing.fill_rect(tile, 0, CELL // 2, CELL // 2, 1, _MORTAR)
    drawing.fill_rect(tile, CELL // 2, 0, CELL // 2, 1, _MORTAR)
    return tile


def _box(fill: tuple[int, int, int], edge: tuple[int, int, int]) -> np.ndarray:
    tile = _floor(False)
    drawing.fill_rect(tile, 2, 2, CELL - 4, CELL - 4, edge)
    drawing.fill_rect(tile, 4, 4, CELL - 8, CELL - 8, fill)
    drawing.fill_line(tile, (4, 4), (CELL - 4, CELL - 4), 1.5, edge)
    drawing.fill_line(tile, (4, CELL - 4), (CELL - 4, 4), 1.5, edge)
    return tile


def _player(target: bool) -> np.ndarray:
    tile = _floor(target)
    drawing.fill_disk(tile, 10.5, CELL / 2, 4.5, _PLAYER)
    drawing.fill_disk(tile, 4.5, CELL / 2, 3, _PLAYER_HEAD)
    return tile


# In the order of the cell codes: wall, floor, target, box on target, box, player, player on target.
TILES = drawing.stack_tiles(
    [_wall(), _floor(False), _floor(True), _box(_BOX_DONE, _BOX_DONE_EDGE), _box(_BOX, _BOX_EDGE),
     _player(False), _player(True)]
)


def draw(cells: np.ndarray) -> np.ndarray:
    """The room whose cells hold the generator's codes (``levels.WALL`` 0 .. ``levels.PLAYER_ON_TARGET`` 6)."""
    return drawing.tile_picture(cells, TILES)
