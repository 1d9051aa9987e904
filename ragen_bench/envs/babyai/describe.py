"""The text view of a BabyAI state: what the agent sees in its 7x7 egocentric view, in words.

A pure function of minigrid's symbolic observation, so it needs no minigrid at import and is
tested on hand-made views.  minigrid 3.2.0's PyPI release has no language view of its own.

The view (``obs["image"]``, shape ``(7, 7, 3)``) is indexed ``[column, row]`` with the agent at
column 3 of the last row, facing row 0: a cell ``(x, y)`` lies ``6 - y`` steps forward and
``x - 3`` steps to the right (negative: to the left).  Each cell holds (object, colour, state).
"""

from __future__ import annotations

import functools

import numpy as np

# minigrid.core.constants (3.2.0): OBJECT_TO_IDX, COLOR_TO_IDX and the door states, by index.
OBJECTS = ("unseen", "empty", "wall", "floor", "door", "key", "ball", "box", "goal", "lava", "agent")
COLORS = ("red", "green", "blue", "purple", "yellow", "grey")
DOOR_STATES = ("open", "closed", "locked")
# minigrid's agent_dir: 0 east, 1 south, 2 west, 3 north.
DIRECTIONS = ("east", "south", "west", "north")

VIEW = 7
_AGENT_X, _AGENT_Y = VIEW // 2, VIEW - 1
# Cells the list never names: nothing there, or not seen (behind a wall or a closed door).
_NOT_LISTED = {"unseen", "empty", "floor", "agent"}
# The object indices the list names (walls have their own lines).
_LISTED = frozenset(index for index, kind in enumerate(OBJECTS) if kind not in _NOT_LISTED | {"wall"})
_OPEN_GROUND = frozenset(OBJECTS.index(kind) for kind in ("empty", "floor"))
_WALL = OBJECTS.index("wall")


def _steps(count: int, word: str) -> str:
    return f"{count} step{'s' if count != 1 else ''} {word}"


def relative_position(x: int, y: int) -> str:
    """Where view cell ``(x, y)`` lies from the agent: ``"2 steps forward and 1 step to the left"``."""
    forward, right = _AGENT_Y - y, x - _AGENT_X
    parts = []
    if forward:
        parts.append(_steps(forward, "forward"))
    if right:
        parts.append(_steps(abs(right), "to the right" if right > 0 else "to the left"))
    return " and ".join(parts) or "where you stand"


def object_name(object_index: int, color_index: int, state: int) -> str:
    """``"a red ball"``, ``"a locked blue door"``, ``"an open grey door"``, ``"a wall"``: one cell's content."""
    kind = OBJECTS[object_index]
    if kind in ("wall", "goal", "lava"):
        return f"a {kind}"
    color = COLORS[color_index]
    if kind == "door":
        article = "an" if DOOR_STATES[state] == "open" else "a"
        return f"{article} {DOOR_STATES[state]} {color} door"
    return f"a {color} {kind}"


# Cells are read from ``image.tobytes()`` (C order, ``[x, y, channel]``): cell ``(x, y)`` is cell
# number ``VIEW * x + y``, its object byte at three times that.  Scanning bytes with ``find`` visits
# only the cells that hold something to list, where a Python loop over the 49 cells cost more than
# minigrid's own step (issue 31's bar: our step within 10% of minigrid's).
_AGENT_CELL = VIEW * _AGENT_X + _AGENT_Y
# Objects are listed nearest first, then left to right: (distance, x) names one cell, so the order
# is a fixed rank per cell.
_RANK = tuple(sorted(range(VIEW * VIEW), key=lambda cell: ((_AGENT_Y - cell % VIEW) + abs(cell // VIEW - _AGENT_X),
                                                            cell // VIEW))).index
_CELL_RANK = tuple(_RANK(cell) for cell in range(VIEW * VIEW))
# Object byte -> 1 where the list names that kind, 0 elsewhere.
_LISTED_FLAGS = bytes(int(index in _LISTED) for index in range(256))


@functools.lru_cache(maxsize=8192)
def _object_line(cell: int, object_index: int, color_index: int, state: int) -> str:
    """One listed object's line; a view holds few distinct (cell, content) pairs, so they are kept."""
    x, y = divmod(cell, VIEW)
    return f"- {object_name(object_index, color_index, state)} {relative_position(x, y)}"


# The cells straight ahead, to the left and to the right of the agent, nearest first, each with the
# line naming a wall there.
def _wall_line(cell: int) -> str:
    return f"- a wall {relative_position(*divmod(cell, VIEW))}"


_AHEAD = tuple((VIEW * _AGENT_X + y, _wall_line(VIEW * _AGENT_X + y)) for y in range(_AGENT_Y - 1, -1, -1))
_LEFT = tuple((VIEW * x + _AGENT_Y, _wall_line(VIEW * x + _AGENT_Y)) for x in range(_AGENT_X - 1, -1, -1))
_RIGHT = tuple((VIEW * x + _AGENT_Y, _wall_line(VIEW * x + _AGENT_Y)) for x in range(_AGENT_X + 1, VIEW))


def describe_view(image: np.ndarray, direction: int, mission: str, carrying: str | None) -> str:
    """The observation text: the mission, the heading, what is carried, what the view holds.

    ``carrying`` is the carried object's name (``"a red key"``) or ``None``.  Objects are listed
    nearest first (then left to right); walls only straight ahead, left and right of the agent:
    the nearest one along each line, unless something other than open ground blocks it first.
    """
    if image.dtype != np.uint8:  # minigrid's views are uint8; hand-made ones may be any integer type
        image = image.astype(np.uint8)
    cells = image.tobytes()
    kinds = cells[::3]
    flags = kinds.translate(_LISTED_FLAGS)
    listed = []
    cell = flags.find(1)
    while cell >= 0:
        if cell != _AGENT_CELL:  # the agent's own cell shows what it carries
            listed.append(cell)
        cell = flags.find(1, cell + 1)
    listed.sort(key=_CELL_RANK.__getitem__)
    lines = [_object_line(cell, cells[3 * cell], cells[3 * cell + 1], cells[3 * cell + 2]) for cell in listed]
    for line_of_cells in (_AHEAD, _LEFT, _RIGHT):
        for cell, wall in line_of_cells:
            kind = kinds[cell]
            if kind == _WALL:
                lines.append(wall)
                break
            if kind not in _OPEN_GROUND:
                break
    head = f"Mission: {mission}\nYou face {DIRECTIONS[direction]} and carry {carrying or 'nothing'}.\n"
    if not lines:
        return head + "You see nothing but floor."
    return head + "You see:\n" + "\n".join(lines)
