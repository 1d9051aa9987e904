"""Measure two scripted baselines on the MiniHack and NetHack ids, scored as BALROG scores them.

    .venv-nethack/bin/python scripts/nethack_baselines.py [EPISODES]   # first EPISODES test seeds (default 32)

* ``random``: a uniform action each step (its generator seeded by the episode's seed).
* ``explore``: reads only the observation text: walks (breadth-first over the drawn map) to a
  staircase down once one is drawn and takes it, else to a drawn cell next to the unseen (keeping
  its goal until reached); a random action when neither exists or a move did not change the view.

Each plays up to its id's chat budget of actions (100 in MiniHack, 1000 in NetHack).  Prints one
row per id and agent: mean BALROG score (success; NetHack's progression) and mean actions.
"""

from __future__ import annotations

import sys
from collections import deque

import gymnasium
import numpy as np

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import panels
from ragen_bench.data.nethack import rows
from ragen_bench.registry import chat_budget

# Compass names by (dx, dy); the map's row index grows southward.
STEPS = {(0, -1): "north", (1, 0): "east", (0, 1): "south", (-1, 0): "west",
         (1, -1): "northeast", (1, 1): "southeast", (-1, 1): "southwest", (-1, -1): "northwest"}
# What a walk may cross: floor, corridors, doors, stairs, items, monsters (a step into one attacks it);
# not lava or water (}) nor walls.
WALKABLE = set(".#<>+{_`%$)[(!?/=\"*") | set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def _map(text: str) -> list[str]:
    lines = text.splitlines()
    end = next(i for i, line in enumerate(lines) if line.startswith(("You see", "Status:")))
    return lines[2:end]


def _plan(grid: list[str], target: tuple[int, int] | None,
          visited: set[tuple[int, int]]) -> tuple[str | None, tuple[int, int] | None]:
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


def play(env_id: str, seed: int, agent: str) -> tuple[float, int]:
    env = gymnasium.make(env_id).unwrapped
    rng = np.random.default_rng(seed)
    text, info = env.reset(seed=seed)
    names = env.action_names
    limit = chat_budget(env_id).max_actions_per_episode
    previous, actions, stairs, target, visited = None, 0, None, None, set()
    while actions < limit:
        name = None
        if agent == "explore":
            grid = _map(text)
            if stairs is not None and _at(grid, "@") == stairs:
                name = "down"
            elif text != previous:
                name, target = _plan(grid, target, visited)
            visited.add(_at(grid, "@"))
            stairs = _at(grid, ">") or stairs
        if name is None or name not in names:
            name = names[int(rng.integers(len(names)))]
        if name == "down" and "down" not in names:
            name = names[int(rng.integers(len(names)))]
        previous = text
        text, _, terminated, truncated, info = env.step(names.index(name))
        actions += 1
        if terminated or truncated:
            break
    return float(info["progress"]), actions


def main(argv: list[str]) -> int:
    episodes = int(argv[0]) if argv else 32
    print(f"{'id':40} {'agent':8} {'episodes':>8} {'score':>7} {'actions':>8}")
    for row, _ in rows():
        seeds = panels.load(row["id"], "test").seeds[:episodes]
        for agent in ("random", "explore"):
            results = [play(row["id"], seed, agent) for seed in seeds]
            score = sum(r[0] for r in results) / len(results)
            mean_actions = sum(r[1] for r in results) / len(results)
            print(f"{row['id']:40} {agent:8} {len(results):8d} {score:7.3f} {mean_actions:8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
