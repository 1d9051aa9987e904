"""Optimal solutions of RAGEN-2's 2x2 cube: fewest turns to a state with every face in one colour.

RAGEN-2's turns reach about 3.2e15 colourings (``cube.py``), too many for a full
distance table, but every scramble of ``d`` turns is at most ``d`` turns from solved.
So the solver keeps a table of every state within :data:`TABLE_DEPTH` turns of solved,
built on first use (breadth-first from the solved cube; states up to renaming colours,
see ``cube.canonical``: about 16,000 of them, a fraction of a second), and meets it in the
middle: a breadth-first search from the state itself, level by level, stops at the first
level that touches the table.  At that level ``f`` the distance is ``f`` plus the least
table distance among the states touching it (a shorter solution would pass through a
table state at an earlier level), so the answer is exact up to ``TABLE_DEPTH +
MAX_FORWARD_DEPTH`` turns; :data:`MAX_DISTANCE` bounds the scramble depths the env offers.

Plans are deterministic: among optimal first turns the lowest action id wins, at every step.
"""

from __future__ import annotations

import functools

from ragen_bench.envs.rubikscube import cube

TABLE_DEPTH = 5
MAX_FORWARD_DEPTH = 5
MAX_DISTANCE = TABLE_DEPTH + MAX_FORWARD_DEPTH
_ACTIONS = range(len(cube.ACTION_NAMES))
# The shortest turn sequence out of a solved cube and back into a solved one.
SOLVED_START_PLAN = (0, 1)


class DistanceTooLarge(ValueError):
    """The state is further than :data:`MAX_DISTANCE` turns from solved."""


def _neighbours(key: bytes) -> list[bytes]:
    """The canonical states one turn from ``key``, in action order."""
    state = cube.table(key)
    return [cube.canonical(turn.translate(state)) for turn in cube.TURNS]


@functools.cache
def distance_table() -> dict[bytes, int]:
    """Distance to solved of every canonical state within ``TABLE_DEPTH`` turns (built once)."""
    solved = cube.canonical(cube.SOLVED)
    distances = {solved: 0}
    frontier = [solved]
    for depth in range(1, TABLE_DEPTH + 1):
        following = []
        for key in frontier:
            for near in _neighbours(key):
                if near not in distances:
                    distances[near] = depth
                    following.append(near)
        frontier = following
    return distances


def _descend(key: bytes, table: dict[bytes, int]) -> list[int]:
    """An optimal plan from a table state: each turn the lowest action one turn closer."""
    plan = []
    distance = table[key]
    while distance:
        for action, near in zip(_ACTIONS, _neighbours(key)):
            if table.get(near) == distance - 1:
                plan.append(action)
                key, distance = near, distance - 1
                break
    return plan


def plan(colours: bytes) -> tuple[int, ...]:
    """An optimal turn sequence that solves ``colours`` (24 sticker colours).

    From a solved state (only an even-depth scramble starts there) the episode needs a
    turn before it can end solved: the plan is :data:`SOLVED_START_PLAN`.  Raises
    :class:`DistanceTooLarge` beyond :data:`MAX_DISTANCE` turns.
    """
    if colours in cube.SOLVED_SET:
        return SOLVED_START_PLAN
    return _plan(cube.canonical(colours))


@functools.lru_cache(maxsize=4096)
def _plan(start: bytes) -> tuple[int, ...]:
    table = distance_table()
    if start in table:
        return tuple(_descend(start, table))
    # Breadth-first from the state; `came_from` leads each reached state back to the start.
    came_from: dict[bytes, tuple[bytes, int] | None] = {start: None}
    frontier = [start]
    for _ in range(MAX_FORWARD_DEPTH):
        following = []
        for key in frontier:
            for action, near in zip(_ACTIONS, _neighbours(key)):
                if near not in came_from:
                    came_from[near] = (key, action)
                    following.append(near)
        frontier = following
        touching = [key for key in frontier if key in table]
        if touching:
            meeting = min(touching, key=lambda key: (table[key], _path(came_from, key)))
            return tuple(_path(came_from, meeting) + _descend(meeting, table))
    raise DistanceTooLarge(f"the state is more than {MAX_DISTANCE} turns from solved")


def _path(came_from: dict[bytes, tuple[bytes, int] | None], key: bytes) -> list[int]:
    """The turns from the search's start to ``key``."""
    turns = []
    while (step := came_from[key]) is not None:
        key, action = step
        turns.append(action)
    return turns[::-1]


def optimal_length(colours: bytes) -> int:
    """The fewest turns that end an episode from ``colours`` solved (``len(plan(colours))``).

    A table lookup within ``TABLE_DEPTH`` turns of solved (no plan is built), the search beyond.
    """
    if colours in cube.SOLVED_SET:
        return len(SOLVED_START_PLAN)
    key = cube.canonical(colours)
    distance = distance_table().get(key)
    return len(_plan(key)) if distance is None else distance
