"""The text view of a Crafter state: what the player sees around it, its vitals and its inventory, in words.

A pure function of crafter's semantic map (``Env._sem_view()``: one id a cell, materials then
creatures), so it needs no crafter at import and is tested on hand-made maps.  crafter 1.8.3 has
no language view of its own.  The window is the part of the map crafter's picture shows: 9 cells
wide and 7 high around the player (its 9x9 view less the two inventory rows), indexed
``[x, y]`` with x growing east and y growing south, the player at ``(4, 3)``; cells off the map
hold ``OFF_MAP``.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

import numpy as np

# crafter 1.8.3's semantic ids: 0 and its data.yaml materials, then the creatures SemanticView numbers.
NAMES = (
    "nothing", "water", "grass", "stone", "path", "sand", "tree", "lava", "coal", "iron", "diamond", "table",
    "furnace", "player", "cow", "zombie", "skeleton", "arrow", "plant",
)
OFF_MAP = -1
WIDTH, HEIGHT = 9, 7
CENTER = (WIDTH // 2, HEIGHT // 2)
VITALS = ("health", "food", "drink", "energy")
VITAL_MAX = 9
# crafter's facing vectors (dx, dy) by compass direction.
DIRECTIONS = {(0, -1): "north", (0, 1): "south", (-1, 0): "west", (1, 0): "east"}
_PLAYER = NAMES.index("player")


def _steps(count: int, word: str) -> str:
    return f"{count} step{'s' if count != 1 else ''} {word}"


def relative_position(dx: int, dy: int) -> str:
    """Where a cell ``dx`` east and ``dy`` south of the player lies: ``"2 steps north and 1 step east"``."""
    parts = []
    if dy:
        parts.append(_steps(abs(dy), "south" if dy > 0 else "north"))
    if dx:
        parts.append(_steps(abs(dx), "east" if dx > 0 else "west"))
    return " and ".join(parts) or "where you stand"


def _item_list(inventory: Mapping[str, int]) -> str:
    items = [f"{count} {name.replace('_', ' ')}" for name, count in inventory.items() if name not in VITALS and count > 0]
    return ", ".join(items) if items else "nothing"


# The window's cells nearest first: by distance from the player, then y, then x (the order that
# picks each kind's nearest cell).  Cell 0 is the player's own.  Reading the window in this order as
# bytes lets ``find`` and ``count`` pick each kind's nearest cell and its count in C, where a Python
# loop over the 63 cells cost more than a tenth of crafter's own step (issue 31's bar).
_ORDER = sorted(((x, y) for x in range(WIDTH) for y in range(HEIGHT)),
                key=lambda cell: (abs(cell[0] - CENTER[0]) + abs(cell[1] - CENTER[1]), cell[1], cell[0]))
_ORDER_X = np.array([x for x, _ in _ORDER], dtype=np.intp)
_ORDER_Y = np.array([y for _, y in _ORDER], dtype=np.intp)
_DISTANCE = tuple(abs(x - CENTER[0]) + abs(y - CENTER[1]) for x, y in _ORDER)
_WHERE = tuple(relative_position(x - CENTER[0], y - CENTER[1]) for x, y in _ORDER)
_AHEAD = {facing: _ORDER.index((CENTER[0] + facing[0], CENTER[1] + facing[1])) for facing in DIRECTIONS}
# OFF_MAP as a byte (what ``astype(np.uint8)`` makes of -1); the semantic ids all lie below it.
_OFF_MAP_BYTE = OFF_MAP % 256


def _nearest_first(window: np.ndarray) -> bytes:
    """The window's cells in ``_ORDER``, one byte each (``OFF_MAP`` as ``_OFF_MAP_BYTE``)."""
    return window[_ORDER_X, _ORDER_Y].astype(np.uint8).tobytes()


@functools.lru_cache(maxsize=16)
def _flat_order(height: int) -> np.ndarray:
    """``_ORDER``'s cells as offsets into a flattened ``[x, y]`` map ``height`` cells high, from the window's corner."""
    return _ORDER_X * height + _ORDER_Y


def cells_around(semantic: np.ndarray, position: tuple[int, int]) -> bytes:
    """The window around ``position`` as :func:`describe_cells` takes it: ``window_of`` read nearest
    first, taken straight from the map (no window built) where the window lies inside it."""
    x0, y0 = position[0] - CENTER[0], position[1] - CENTER[1]
    width, height = semantic.shape
    if 0 <= x0 <= width - WIDTH and 0 <= y0 <= height - HEIGHT and semantic.dtype == np.uint8:
        return semantic.take(_flat_order(height) + (x0 * height + y0)).tobytes()
    return _nearest_first(window_of(semantic, position))


def _nearby(cells: bytes) -> list[str]:
    """The nearest cell of each kind in view (then how many there are), nearest kinds first."""
    start = 1 if cells[0] == _PLAYER else 0  # the player's own cell is not listed
    found = []
    for kind in set(cells[start:]):
        if kind != _OFF_MAP_BYTE:
            first = cells.find(kind, start)
            found.append((_DISTANCE[first], NAMES[kind], first, cells.count(kind, start)))
    found.sort()
    return [f"- {name} {_WHERE[first]} ({count} in view)" if count > 1 else f"- {name} {_WHERE[first]}"
            for _, name, first, count in found]


def describe(window: np.ndarray, facing: tuple[int, int], inventory: Mapping[str, int], *,
             sleeping: bool, unlocked: Sequence[str]) -> str:
    """The observation text: what is in front, the vitals, the inventory, what is in view, the achievements.

    ``window`` is the 9x7 semantic window (see the module doc), ``facing`` crafter's ``(dx, dy)``,
    ``inventory`` crafter's inventory (vitals included), ``unlocked`` the achievements unlocked so far.
    """
    return describe_cells(_nearest_first(window), facing, inventory, sleeping=sleeping, unlocked=unlocked)


def describe_cells(cells: bytes, facing: tuple[int, int], inventory: Mapping[str, int], *,
                   sleeping: bool, unlocked: Sequence[str]) -> str:
    """:func:`describe` of the window read nearest first (:func:`cells_around`)."""
    facing = (int(facing[0]), int(facing[1]))
    ahead = cells[_AHEAD[facing]]
    front = "the edge of the world" if ahead == _OFF_MAP_BYTE else NAMES[ahead]
    seen = _nearby(cells)
    lines = [
        f"You face {DIRECTIONS[facing]}; in front of you: {front}.",
        _status(tuple(inventory.items()), sleeping),
        "You see (nearest of each kind):" if seen else "You see nothing around you.",
        *seen,
        _achievements(tuple(unlocked)),
    ]
    return "\n".join(lines)


# The vitals, inventory and achievement lines change a few times an episode, not each step: they
# are kept by their inputs (a few hundred distinct ones an episode at most).
@functools.lru_cache(maxsize=4096)
def _status(inventory: tuple[tuple[str, int], ...], sleeping: bool) -> str:
    """The vitals line and the inventory line."""
    counts = dict(inventory)
    vitals = ", ".join(f"{name} {counts[name]}/{VITAL_MAX}" for name in VITALS)
    return f"Vitals: {vitals}." + (" You are asleep." if sleeping else "") + f"\nInventory: {_item_list(counts)}."


@functools.lru_cache(maxsize=1024)
def _achievements(unlocked: tuple[str, ...]) -> str:
    return (f"Achievements unlocked ({len(unlocked)} of 22): "
            + (", ".join(name.replace("_", " ") for name in unlocked) or "none") + ".")


def window_of(semantic: np.ndarray, position: tuple[int, int]) -> np.ndarray:
    """The 9x7 window of ``semantic`` (the whole map, ``[x, y]``) around ``position``, ``OFF_MAP`` beyond its edge."""
    window = np.full((WIDTH, HEIGHT), OFF_MAP, dtype=np.int64)
    x0, y0 = position[0] - CENTER[0], position[1] - CENTER[1]
    xs = slice(max(x0, 0), min(x0 + WIDTH, semantic.shape[0]))
    ys = slice(max(y0, 0), min(y0 + HEIGHT, semantic.shape[1]))
    window[xs.start - x0:xs.stop - x0, ys.start - y0:ys.stop - y0] = semantic[xs, ys]
    return window
