"""The 2x2 cube's ``rgb_array`` picture: its six faces unfolded as a cross (U above L F R B, D below)."""

from __future__ import annotations

import numpy as np

from ragen_bench.envs import drawing

STICKER, GAP, FACE_GAP = 24, 2, 6
_BACKGROUND, _EDGE = (44, 44, 50), (16, 16, 20)
# Colour indices 0..5: white, orange, green, red, blue, yellow.
_PALETTE = ((245, 245, 245), (255, 140, 20), (30, 170, 70), (210, 30, 40), (30, 80, 210), (250, 215, 30))
# Where each face (U L F R B D) sits in the unfolded net, as (row, column) in face units.
_NET = ((0, 1), (1, 0), (1, 1), (1, 2), (1, 3), (2, 1))
_FACE = 2 * STICKER + 3 * GAP  # one face: two stickers and the edges around them


def draw(colours: np.ndarray) -> np.ndarray:
    """The net of a cube whose ``colours[face, row, col]`` (faces U L F R B D) are colour indices."""
    image = drawing.canvas(3 * _FACE + 4 * FACE_GAP, 4 * _FACE + 5 * FACE_GAP, _BACKGROUND)
    for face, (net_row, net_col) in enumerate(_NET):
        top, left = FACE_GAP + net_row * (_FACE + FACE_GAP), FACE_GAP + net_col * (_FACE + FACE_GAP)
        drawing.fill_rect(image, top, left, _FACE, _FACE, _EDGE)
        for row in range(2):
            for col in range(2):
                y, x = top + GAP + row * (STICKER + GAP), left + GAP + col * (STICKER + GAP)
                drawing.fill_rect(image, y, x, STICKER, STICKER, _PALETTE[colours[face, row, col]])
    return image
