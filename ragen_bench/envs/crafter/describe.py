"""The text view of a Crafter state: what the player sees around it, its vitals and its inventory, in words.

A pure function of crafter's semantic map (``Env._sem_view()``: one id a cell, materials then
creatures), so it needs no crafter at import and is tested on hand-made maps.  crafter 1.8.3 has
no language view of its own.  The window is the part of the map crafter's picture shows: 9 cells
wide and 7 high around the player (its 9x9 view less the two inventory rows), indexed
``[x, y]`` with x growing east and y growing south, the player at ``(4, 3)``; cells off the map
hold ``OFF_MAP``.
"""

from __future__ import annotations

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


def _nearby(window: np.ndarray) -> list[str]:
    """The nearest cell of each kind in view (then how many there are), nearest kinds first."""
    cx, cy = CENTER
    nearest: dict[int, tuple[int, int, int]] = {}
    counts: dict[int, int] = {}
    for x, column in enumerate(window.tolist()):  # plain ints: numpy cell by cell costs more than the text
        for y, kind in enumerate(column):
            if kind == OFF_MAP or kind == _PLAYER and (x, y) == CENTER:
                continue
            counts[kind] = counts.get(kind, 0) + 1
            key = (abs(x - cx) + abs(y - cy), y, x)
            if kind not in nearest or key < nearest[kind]:
                nearest[kind] = key
    lines = []
    for kind, (_, y, x) in sorted(nearest.items(), key=lambda item: (item[1][0], NAMES[item[0]])):
        more = f" ({counts[kind]} in view)" if counts[kind] > 1 else ""
        lines.append(f"- {NAMES[kind]} {relative_position(x - cx, y - cy)}{more}")
    return lines


def describe(window: np.ndarray, facing: tuple[int, int], inventory: Mapping[str, int], *,
             sleeping: bool, unlocked: Sequence[str]) -> str:
    """The observation text: what is in front, the vitals, the inventory, what is in view, the achievements.

    ``window`` is the 9x7 semantic window (see the module doc), ``facing`` crafter's ``(dx, dy)``,
    ``inventory`` crafter's inventory (vitals included), ``unlocked`` the achievements unlocked so far.
    """
    cx, cy = CENTER
    ahead = int(window[cx + facing[0], cy + facing[1]])
    front = "the edge of the world" if ahead == OFF_MAP else NAMES[ahead]
    vitals = ", ".join(f"{name} {inventory[name]}/{VITAL_MAX}" for name in VITALS)
    seen = _nearby(window)
    lines = [
        f"You face {DIRECTIONS[tuple(facing)]}; in front of you: {front}.",  # type: ignore[index]
        f"Vitals: {vitals}." + (" You are asleep." if sleeping else ""),
        f"Inventory: {_item_list(inventory)}.",
        "You see (nearest of each kind):" if seen else "You see nothing around you.",
        *seen,
        f"Achievements unlocked ({len(unlocked)} of 22): "
        + (", ".join(name.replace("_", " ") for name in unlocked) or "none") + ".",
    ]
    return "\n".join(lines)


def window_of(semantic: np.ndarray, position: tuple[int, int]) -> np.ndarray:
    """The 9x7 window of ``semantic`` (the whole map, ``[x, y]``) around ``position``, ``OFF_MAP`` beyond its edge."""
    window = np.full((WIDTH, HEIGHT), OFF_MAP, dtype=np.int64)
    x0, y0 = position[0] - CENTER[0], position[1] - CENTER[1]
    xs = slice(max(x0, 0), min(x0 + WIDTH, semantic.shape[0]))
    ys = slice(max(y0, 0), min(y0 + HEIGHT, semantic.shape[1]))
    window[xs.start - x0:xs.stop - x0, ys.start - y0:ys.stop - y0] = semantic[xs, ys]
    return window
