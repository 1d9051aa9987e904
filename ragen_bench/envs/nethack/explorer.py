"""The MiniHack/NetHack scripted baseline: an explorer that reads only the observation text.

It walks (breadth-first over the drawn map) to a staircase down once one is drawn and takes it,
else to a drawn cell next to the unseen (keeping its goal until reached); a random action when
neither exists or the last move did not change the view.  It is the env's ``baseline_action()``
(built at reset from the level seed, :mod:`ragen_bench.envs.baseline`), and
``scripts/nethack_baselines.py`` measures it against the random floor.
"""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

# Compass names by (dx, dy); the map's row index grows southward.
STEPS = {(0, -1): "north", (1, 0): "east", (0, 1): "south", (-1, 0): "west",
         (1, -1): "northeast", (1, 1): "southeast", (-1, 1): "southwest", (-1, -1): "northwest"}
# What a walk may cross: floor, corridors, doors, stairs, items, monsters (a step into one attacks it);
# not lava or water (}) nor walls.
WALKABLE = set(".#<>+{_`%$)[(!?/=\"*") | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


class Explorer:
    """The explorer's policy for one episode; ``act(env)`` gives the next action of a live NetHack env.

    Its memory (the visited cells, the stairs seen, the walk's goal, the last view) grows with each
    call, one call per state; its random choices come from a generator seeded by ``seed``.
    """

    def __init__(self, seed: int = 0) -> None:
        self._rng = np.random.default_rng(seed)
        self._previous: str | None = None
        self._stairs: tuple[int, int] | None = None
        self._target: tuple[int, int] | None = None
        self._visited: set[tuple[int, int] | None] = set()

    def act(self, env: Any) -> int:
        text, names = env.render_text(), env.action_names
        grid = _map(text)
        name = None
        if self._stairs is not None and _at(grid, "@") == self._stairs:
            name = "down"
        elif text != self._previous:
            name, self._target = _plan(grid, self._target, self._visited)
        self._visited.add(_at(grid, "@"))
        self._stairs = _at(grid, ">") or self._stairs
        self._previous = text
        if name is None or name not in names:  # a random action: also where "down" is not an action of the task
            return int(self._rng.integers(len(names)))
        return names.index(name)


def _map(text: str) -> list[str]:
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(("You see", "Status:")))
    return lines[2:end]


def _plan(grid: list[str], target: tuple[int, int] | None,
          visited: set[tuple[int, int] | None]) -> tuple[str | None, tuple[int, int] | None]:
    """The first step of a shortest walk to '>' or, with none reachable, to an unvisited cell beside
    the unseen: the last walk's goal while it is still one (no dithering between two), else the
    nearest.  Returns the step and the goal.  (Cells are the trimmed map's: a map growing west or
    north shifts them, which only makes the walk less tidy.)"""
    cell = {(x, y): ch for y, row in enumerate(grid) for x, ch in enumerate(row)}
    start = next((pos for pos, ch in cell.items() if ch == "@"), None)
    if start is None:
        return None, None
    first: dict[tuple[int, int], str | None] = {start: None}
    queue, frontier = deque([start]), []
    while queue:
        x, y = queue.popleft()
        if (x, y) != start and cell[(x, y)] == ">":
            return first[(x, y)], (x, y)
        if (x, y) not in visited and any(cell.get((x + dx, y + dy), " ") == " " for dx, dy in STEPS):
            frontier.append((x, y))
        for (dx, dy), name in STEPS.items():
            nxt = (x + dx, y + dy)
            if nxt not in first and cell.get(nxt, " ") in WALKABLE:
                first[nxt] = first[(x, y)] or name
                queue.append(nxt)
    if not frontier:
        return None, None
    goal = target if target in frontier else frontier[0]
    return first[goal], goal


def _at(grid: list[str], symbol: str) -> tuple[int, int] | None:
    return next(((x, y) for y, row in enumerate(grid) for x, ch in enumerate(row) if ch == symbol), None)
