"""2048's ``rgb_array`` picture: the grid of tiles, each coloured by its value and numbered."""

from __future__ import annotations

import numpy as np

from ragen_bench.envs import drawing

TILE, GAP = 58, 6
_BACKGROUND, _EMPTY = (120, 110, 100), (200, 192, 182)
_LIGHT, _HOT, _BEYOND = np.array([240, 230, 206]), np.array([210, 50, 40]), (60, 58, 70)
_DARK_INK, _LIGHT_INK = (70, 60, 50), (255, 255, 255)
# Digit height by number of digits, so 131072 still fits a tile.
_DIGIT_HEIGHT = {1: 28, 2: 28, 3: 24, 4: 20, 5: 16, 6: 13}
_TOP_EXPONENT = 11  # 2048: the hottest colour; larger tiles are dark


def tile_color(value: int) -> tuple[int, int, int]:
    """From pale (2) to red (2048) along the exponent; dark beyond."""
    exponent = value.bit_length() - 1
    if exponent > _TOP_EXPONENT:
        return _BEYOND
    share = (exponent - 1) / (_TOP_EXPONENT - 1)
    return tuple(int(round(c)) for c in _LIGHT + share * (_HOT - _LIGHT))


def draw(board: tuple[tuple[int, ...], ...]) -> np.ndarray:
    """The grid whose ``board[row][col]`` are tile values (0 = empty)."""
    size = len(board)
    side = size * (TILE + GAP) + GAP
    image = drawing.canvas(side, side, _BACKGROUND)
    for row, line in enumerate(board):
        for col, value in enumerate(line):
            top, left = GAP + row * (TILE + GAP), GAP + col * (TILE + GAP)
            color = tile_color(value) if value else _EMPTY
            drawing.fill_rect(image, top, left, TILE, TILE, color)
            if value:
                text = str(value)
                ink = _DARK_INK if sum(color) / 3 > 190 else _LIGHT_INK
                height = _DIGIT_HEIGHT.get(len(text), 11)
                drawing.draw_number(image, text, top + TILE / 2, left + TILE / 2, height, ink)
    return image
