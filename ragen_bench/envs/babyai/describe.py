"""The text view of a BabyAI state: what the agent sees in its 7x7 egocentric view, in words.

A pure function of minigrid's symbolic observation, so it needs no minigrid at import and is
tested on hand-made views.  minigrid 3.2.0's PyPI release has no language view of its own.

The view (``obs["image"]``, shape ``(7, 7, 3)``) is indexed ``[column, row]`` with the agent at
column 3 of the last row, facing row 0: a cell ``(x, y)`` lies ``6 - y`` steps forward and
``x - 3`` steps to the right (negative: to the left).  Each cell holds (object, colour, state).
"""

from __future__ import annotations

from collections.abc import Sequence

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


def _nearest_wall(view: list[list[list[int]]], cells: Sequence[tuple[int, int]]) -> str | None:
    """The first wall along ``cells`` (nearest first), unless something else blocks the line first."""
    for x, y in cells:
        kind = view[x][y][0]
        if kind == _WALL:
            return f"a wall {relative_position(x, y)}"
        if kind not in _OPEN_GROUND:
            return None
    return None


# The cells straight ahead, to the left and to the right of the agent, nearest first.
_AHEAD = tuple((_AGENT_X, y) for y in range(_AGENT_Y - 1, -1, -1))
_LEFT = tuple((x, _AGENT_Y) for x in range(_AGENT_X - 1, -1, -1))
_RIGHT = tuple((x, _AGENT_Y) for x in range(_AGENT_X + 1, VIEW))


def describe_view(image: np.ndarray, direction: int, mission: str, carrying: str | None) -> str:
    """The observation text: the mission, the heading, what is carried, what the view holds.

    ``carrying`` is the carried object's name (``"a red key"``) or ``None``.  Objects are listed
    nearest first (then left to right); walls only straight ahead, left and right of the agent.
    """
    view = image.tolist()  # plain ints: indexing a numpy array cell by cell costs more than the view's text
    seen = []
    for x, column in enumerate(view):
        for y, (object_index, color_index, state) in enumerate(column):
            if object_index not in _LISTED or (x, y) == (_AGENT_X, _AGENT_Y):
                continue
            distance = (_AGENT_Y - y) + abs(x - _AGENT_X)
            seen.append((distance, x, f"{object_name(object_index, color_index, state)} {relative_position(x, y)}"))
    lines = [f"- {text}" for _, _, text in sorted(seen)]
    lines += [
        f"- {wall}"
        for wall in (
            _nearest_wall(view, _AHEAD),
            _nearest_wall(view, _LEFT),
            _nearest_wall(view, _RIGHT),
        )
        if wall is not None
    ]
    return "\n".join(
        [
            f"Mission: {mission}",
            f"You face {DIRECTIONS[direction]} and carry {carrying or 'nothing'}.",
            "You see:" if lines else "You see nothing but floor.",
            *lines,
        ]
    )
