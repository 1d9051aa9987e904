"""The text view of a NetHack state (MiniHack's tasks and the full game): the message, the map as
NetHack draws it, the things near the agent by name and where they lie, and the status line.

Pure functions of plain values (map rows, NetHack's own description of each cell, the bottom-line
numbers), so they need no nle at import and are tested on hand-made states.  Nearby things are named
as BALROG's observations name them (NetHack's words for a cell, then its distance and compass
direction); the map keeps NetHack's own symbols, trimmed to the part of the screen drawn so far.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence

# Cells the list never names: the agent, open ground, the level's walls, rock, and what is unexplored.
_PLAIN = frozenset({"", "floor of a room", "dark part of a room", "wall", "stone", "unexplored", "corridor",
                    "lit corridor", "doorless doorway", "dark room"})
# NetHack's hunger states (u.uhs), by value.
HUNGER = ("Satiated", "Not hungry", "Hungry", "Weak", "Fainting", "Fainted", "Starved")
MAX_LISTED = 24


def _steps(count: int, word: str) -> str:
    return f"{count} step{'s' if count != 1 else ''} {word}"


@functools.lru_cache(maxsize=4096)  # a pure function of two small ints, asked for every named thing of every step
def relative_position(dx: int, dy: int) -> str:
    """Where a cell ``dx`` columns east and ``dy`` rows south of the agent lies: ``"3 steps east and 1 step north"``."""
    parts = []
    if dx:
        parts.append(_steps(abs(dx), "east" if dx > 0 else "west"))
    if dy:
        parts.append(_steps(abs(dy), "south" if dy > 0 else "north"))
    return " and ".join(parts) or "where you stand"


def trimmed_map(rows: Sequence[str]) -> list[str]:
    """The map's rows cut to the box around everything drawn (a blank map gives no rows)."""
    # A row is drawn when it holds more than whitespace: ``isspace`` answers that without the copy ``strip`` makes.
    drawn = [index for index, row in enumerate(rows) if row and not row.isspace()]
    if not drawn:
        return []
    body = rows[drawn[0]:drawn[-1] + 1]
    left = min(len(row) - len(row.lstrip()) for row in body if row and not row.isspace())
    return [row[left:].rstrip() for row in body]


def nearby(descriptions: Mapping[tuple[int, int], str], x: int, y: int) -> list[str]:
    """The named things of ``descriptions`` (cell -> NetHack's words), nearest first, without the agent's cell.

    A name on several cells (a lava river, a row of boulders) is listed once, at its nearest cell,
    with how many more cells show it.
    """
    # Each name's nearest cell and how many cells show it, in one pass (a list per name cost more).
    found: dict[str, list] = {}
    for (cx, cy), name in descriptions.items():
        if name in _PLAIN or (cx == x and cy == y):
            continue
        dx, dy = cx - x, cy - y
        across, down = abs(dx), abs(dy)
        key = (across if across > down else down, across + down, dy, dx)
        entry = found.get(name)
        if entry is None:
            found[name] = [key, 1]
        else:
            entry[1] += 1
            if key < entry[0]:
                entry[0] = key
    listed = []
    for name, (key, count) in found.items():
        more = f" (and {count - 1} more)" if count > 1 else ""
        listed.append((key, f"{name} {relative_position(key[3], key[2])}{more}"))
    return [text for _, text in sorted(listed)[:MAX_LISTED]]


_STATUS = ("Dungeon level {depth}, HP {hp}/{max_hp}, Pw {energy}/{max_energy}, AC {armor_class}, experience level "
           "{experience_level}, turn {time}, Str {strength} Dex {dexterity} Con {constitution} Int {intelligence} "
           "Wis {wisdom} Cha {charisma}, gold {gold}, ")


def status_line(stats: Mapping[str, int]) -> str:
    """NetHack's bottom lines in words, from the ``blstats`` numbers named as :data:`STATUS_FIELDS`."""
    hunger = HUNGER[stats["hunger"]] if 0 <= stats["hunger"] < len(HUNGER) else "?"
    return f"{_STATUS.format_map(stats)}{hunger}."


# blstats' index of each number the status line reads (nle.nethack's NLE_BL_* constants).
STATUS_FIELDS = {"x": 0, "y": 1, "strength": 3, "dexterity": 4, "constitution": 5, "intelligence": 6, "wisdom": 7,
                 "charisma": 8, "score": 9, "hp": 10, "max_hp": 11, "depth": 12, "gold": 13, "energy": 14,
                 "max_energy": 15, "armor_class": 16, "experience_level": 18, "time": 20, "hunger": 21}


def describe(rows: Sequence[str], descriptions: Mapping[tuple[int, int], str], message: str,
             stats: Mapping[str, int]) -> str:
    """The observation text: message, map (``@`` is the agent), the named things nearby, the status."""
    things = nearby(descriptions, stats["x"], stats["y"])
    return "\n".join([
        f"Message: {message.strip() or '(none)'}",
        "Map (you are @):",
        *trimmed_map(rows),
        "You see:" if things else "You see nothing of note nearby.",
        *(f"- {thing}" for thing in things),
        f"Status: {status_line(stats)}",
    ])
