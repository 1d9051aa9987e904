"""A small drawing kit for the envs' ``render_mode="rgb_array"`` pictures.

Everything is drawn with numpy into ``uint8`` arrays of shape ``(height, width, 3)``:
no image files, no fonts, no extra dependency, so ``import ragen_bench`` stays light
and a picture is the same bytes on every machine.  A family's ``picture.py`` builds
its pictures from these pieces:

* :func:`tile_picture` lays out a grid of cell codes from a stack of tiles, one tile
  per code (one numpy indexing, so a frame costs microseconds);
* :func:`canvas`, :func:`fill_rect`, :func:`fill_disk`, :func:`fill_ring` and
  :func:`fill_line` paint shapes in place;
* :func:`draw_number` writes digits as seven-segment glyphs (legible at 8 pixels high,
  and drawn from rectangles, so no font is needed).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache

import numpy as np

Color = tuple[int, int, int]


def canvas(height: int, width: int, color: Color) -> np.ndarray:
    """A ``height x width`` picture of one colour."""
    image = np.empty((height, width, 3), dtype=np.uint8)
    image[...] = color
    return image


def fill_rect(image: np.ndarray, top: int, left: int, height: int, width: int, color: Color) -> None:
    """Paint a rectangle (clipped to the picture)."""
    image[max(top, 0) : max(top + height, 0), max(left, 0) : max(left + width, 0)] = color


def _distances(image: np.ndarray, cy: float, cx: float) -> np.ndarray:
    """Distance of every pixel centre from ``(cy, cx)`` (pixel ``(r, c)`` spans ``r..r+1``)."""
    rows, cols = np.ogrid[: image.shape[0], : image.shape[1]]
    return np.hypot(rows + 0.5 - cy, cols + 0.5 - cx)


def fill_disk(image: np.ndarray, cy: float, cx: float, radius: float, color: Color) -> None:
    """Paint the pixels whose centre lies within ``radius`` of ``(cy, cx)``."""
    image[_distances(image, cy, cx) <= radius] = color


def fill_ring(image: np.ndarray, cy: float, cx: float, outer: float, inner: float, color: Color) -> None:
    """Paint the pixels between the circles of radius ``inner`` and ``outer``."""
    distance = _distances(image, cy, cx)
    image[(distance <= outer) & (distance > inner)] = color


def fill_line(image: np.ndarray, start: tuple[float, float], end: tuple[float, float], width: float,
              color: Color) -> None:
    """Paint a segment ``width`` pixels thick from ``start`` to ``end`` (``(y, x)`` points)."""
    (y0, x0), (y1, x1) = start, end
    rows, cols = np.ogrid[: image.shape[0], : image.shape[1]]
    py, px = rows + 0.5 - y0, cols + 0.5 - x0
    dy, dx = y1 - y0, x1 - x0
    # Position along the segment, clamped to its ends, then the distance to that point.
    along = np.clip((py * dy + px * dx) / max(dy * dy + dx * dx, 1e-9), 0.0, 1.0)
    image[np.hypot(py - along * dy, px - along * dx) <= width / 2] = color


def tile_picture(codes: np.ndarray, tiles: np.ndarray) -> np.ndarray:
    """The picture of a grid of cell ``codes``: cell ``(r, c)`` is ``tiles[codes[r, c]]``.

    ``tiles`` has shape ``(number of codes, cell height, cell width, 3)``.
    """
    rows, cols = codes.shape
    _, cell_h, cell_w, _ = tiles.shape
    return np.ascontiguousarray(tiles[codes].transpose(0, 2, 1, 3, 4).reshape(rows * cell_h, cols * cell_w, 3))


# Seven-segment glyphs: which of the segments a (top), b (top right), c (bottom right),
# d (bottom), e (bottom left), f (top left), g (middle) each digit lights.
_SEGMENTS = {
    "0": "abcdef", "1": "bc", "2": "abdeg", "3": "abcdg", "4": "bcfg",
    "5": "acdfg", "6": "acdefg", "7": "abc", "8": "abcdefg", "9": "abcdfg", "-": "g",
}


def _glyph(char: str, height: int) -> np.ndarray:
    """The boolean mask of one seven-segment character, ``height`` tall and about half as wide."""
    stroke = max(height // 8, 1)
    if char == "1":  # one stroke wide, so "11" and "512" do not gape
        return np.ones((height, stroke), dtype=bool)
    width = max(height // 2 + 1, 3)
    middle = (height - stroke) // 2
    mask = np.zeros((height, width), dtype=bool)
    spans = {  # segment -> (rows, cols) slices
        "a": (slice(0, stroke), slice(0, width)),
        "d": (slice(height - stroke, height), slice(0, width)),
        "g": (slice(middle, middle + stroke), slice(0, width)),
        "f": (slice(0, middle + stroke), slice(0, stroke)),
        "b": (slice(0, middle + stroke), slice(width - stroke, width)),
        "e": (slice(middle, height), slice(0, stroke)),
        "c": (slice(middle, height), slice(width - stroke, width)),
    }
    for segment in _SEGMENTS[char]:
        mask[spans[segment]] = True
    return mask


@lru_cache(maxsize=4096)
def number_mask(text: str, height: int) -> np.ndarray:
    """The mask of ``text`` (digits and ``-``) in seven-segment glyphs, one gap between them (cached, read-only)."""
    glyphs: list[np.ndarray] = []
    gap = np.zeros((height, max(height // 6, 1)), dtype=bool)
    for char in text:
        if char not in _SEGMENTS:
            raise ValueError(f"draw_number: only digits and '-' are drawn, got {char!r} in {text!r}")
        glyphs += [gap, _glyph(char, height)] if glyphs else [_glyph(char, height)]
    mask = np.hstack(glyphs) if glyphs else np.zeros((height, 0), dtype=bool)
    mask.flags.writeable = False
    return mask


def draw_number(image: np.ndarray, text: str, cy: float, cx: float, height: int, color: Color) -> None:
    """Write ``text`` centred on ``(cy, cx)``, ``height`` pixels tall, clipped to the picture."""
    mask = number_mask(text, height)
    top, left = int(round(cy - mask.shape[0] / 2)), int(round(cx - mask.shape[1] / 2))
    region = image[max(top, 0) : top + mask.shape[0], max(left, 0) : left + mask.shape[1]]
    clipped = mask[max(-top, 0) : max(-top, 0) + region.shape[0], max(-left, 0) : max(-left, 0) + region.shape[1]]
    region[clipped] = color


def stack_tiles(tiles: Sequence[np.ndarray]) -> np.ndarray:
    """Tiles of one size as the ``(codes, h, w, 3)`` array :func:`tile_picture` takes (read-only)."""
    stacked = np.stack(tiles)
    stacked.flags.writeable = False
    return stacked
