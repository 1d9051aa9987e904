"""FrozenLake's ``rgb_array`` picture: one 32x32 tile per cell, the player drawn on its cell's tile."""

from __future__ import annotations

import numpy as np

from ragen_bench.envs import drawing

CELL = 32
_ICE, _ICE_SHINE = (200, 230, 246), (236, 248, 255)
_WATER, _WATER_DEEP = (40, 90, 150), (20, 50, 100)
_GOAL, _FLAG, _POLE = (200, 230, 246), (238, 190, 40), (90, 70, 50)
_PLAYER, _PLAYER_HEAD = (214, 64, 52), (246, 214, 170)
_SUNK = (120, 40, 36)


def _ice() -> np.ndarray:
    tile = drawing.canvas(CELL, CELL, _ICE)
    drawing.fill_line(tile, (6, 20), (12, 26), 2, _ICE_SHINE)
    drawing.fill_rect(tile, 0, 0, 1, CELL, _ICE_SHINE)
    drawing.fill_rect(tile, 0, 0, CELL, 1, _ICE_SHINE)
    return tile


def _hole() -> np.ndarray:
    tile = _ice()
    drawing.fill_disk(tile, CELL / 2, CELL / 2, 13, _WATER)
    drawing.fill_disk(tile, CELL / 2 + 2, CELL / 2, 8, _WATER_DEEP)
    return tile


def _goal() -> np.ndarray:
    tile = _ice()
    drawing.fill_rect(tile, 5, 9, 22, 2, _POLE)
    drawing.fill_rect(tile, 5, 11, 9, 13, _FLAG)
    drawing.fill_rect(tile, 26, 6, 2, 12, _POLE)
    return tile


def _with_player(tile: np.ndarray, sunk: bool) -> np.ndarray:
    tile = tile.copy()
    body = _SUNK if sunk else _PLAYER
    drawing.fill_disk(tile, 21, CELL / 2, 7, body)
    drawing.fill_disk(tile, 10, CELL / 2, 5, _PLAYER_HEAD)
    return tile


_BACKGROUNDS = {"S": _ice(), "F": _ice(), "H": _hole(), "G": _goal()}
LETTERS = "SFHG"
# Codes 0..3: the lake's letters; 4..7: the same cells with the player on them.
TILES = drawing.stack_tiles(
    [_BACKGROUNDS[letter] for letter in LETTERS]
    + [_with_player(_BACKGROUNDS[letter], sunk=letter == "H") for letter in LETTERS]
)
_CODES = {letter: code for code, letter in enumerate(LETTERS)}


def draw(lake: tuple[str, ...], player: int) -> np.ndarray:
    """The lake (rows of ``S F H G`` letters) with the player on cell ``player`` (``row * size + col``)."""
    codes = np.array([[_CODES[letter] for letter in row] for row in lake], dtype=np.intp)
    codes.flat[player] += len(LETTERS)
    return drawing.tile_picture(codes, TILES)
