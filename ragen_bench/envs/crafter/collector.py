"""A hand-written Crafter baseline: keep drink, food and energy up, then work down a fixed list of goals.

It reads crafter's map (materials and creatures within ``SEARCH`` steps), not only the text view,
walks by breadth-first search over open ground, and wanders at random when nothing it wants is
near.  It is a floor to measure agents against, not an optimal agent (Crafter has none); its
score on the test panel is in the card (``scripts/crafter_baselines.py``).
"""

from __future__ import annotations

import random
from collections import deque
from typing import Any

import numpy as np

from ragen_bench.envs.crafter.describe import NAMES

SEARCH = 24  # steps of walking the search looks ahead
_OPEN = frozenset(NAMES.index(name) for name in ("grass", "sand", "path"))
_MOVES = {(-1, 0): 1, (1, 0): 2, (0, -1): 3, (0, 1): 4}  # (dx, dy) -> Move West/East/North/South
NOOP, DO, SLEEP, PLACE_STONE, PLACE_TABLE, PLACE_FURNACE, PLACE_PLANT = 0, 5, 6, 7, 8, 9, 10
MAKE = {"wood_pickaxe": 11, "stone_pickaxe": 12, "wood_sword": 14, "stone_sword": 15}


class Collector:
    """The baseline's policy; ``act(env)`` gives the next action of a live :class:`CrafterEnv`."""

    def __init__(self, seed: int = 0) -> None:
        self._rng = random.Random(seed)

    def act(self, env: Any) -> int:  # a live CrafterEnv, which builds a Collector at each reset: not imported here
        world = env.world
        player = world._player
        inventory, done = player.inventory, {name for name, count in player.achievements.items() if count}
        semantic = world._sem_view()
        near = {world._world[player.pos + offset][0] for offset in _AROUND}
        if player.sleeping:
            return NOOP
        for offset, action in _MOVES.items():  # a zombie next to the player: face it and hit it
            if type(world._world[player.pos + offset][1]).__name__ == "Zombie":
                return DO if tuple(player.facing) == offset else action
        for need, material in (("drink", "water"), ("food", "cow")):
            if inventory[need] < 4:
                return self._fetch(semantic, player, material)
        if inventory["energy"] < 3:
            return SLEEP
        for name in ("wood_pickaxe", "wood_sword", "stone_pickaxe", "stone_sword"):
            if f"make_{name}" not in done and "table" in near and _affords(inventory, name):
                return MAKE[name]
        tools_left = [name for name in MAKE if f"make_{name}" not in done]
        if "table" not in near and ("place_table" not in done and inventory["wood"] >= 5 or inventory["wood"] >= 3 and any(
                _affords({**inventory, "wood": inventory["wood"] - 2}, name) for name in tools_left)):
            return self._place(player, world, PLACE_TABLE)  # a table where tools are still to be made
        if inventory["sapling"] and "place_plant" not in done:
            return self._place(player, world, PLACE_PLANT, on=("grass",))
        if inventory["stone"] and "place_stone" not in done:
            return self._place(player, world, PLACE_STONE, on=("grass", "sand", "path", "water"))
        if inventory["stone"] >= 4 and "place_furnace" not in done and "table" in near:
            return self._place(player, world, PLACE_FURNACE)
        return self._fetch(semantic, player, self._want(inventory, done))

    def _want(self, inventory: dict[str, int], done: set[str]) -> str:
        if inventory["wood"] < 5:
            return "tree"
        if "collect_sapling" not in done:
            return "grass"
        if inventory["wood_pickaxe"] and (inventory["stone"] < 5 or "collect_coal" in done):
            return "stone"
        return "coal" if inventory["wood_pickaxe"] else "tree"

    def _place(self, player: Any, world: Any, action: int, on: tuple[str, ...] = ("grass", "sand", "path")) -> int:
        facing = tuple(player.facing)
        material, creature = world._world[player.pos + facing]
        if material in on and creature is None:
            return action
        return self._wander(world._sem_view(), player)

    def _fetch(self, semantic: np.ndarray, player: Any, target: str) -> int:
        """The first move toward the nearest ``target`` cell (facing it: ``Do``), else a random move."""
        goal = NAMES.index(target)
        start = (int(player.pos[0]), int(player.pos[1]))
        first: dict[tuple[int, int], tuple[int, int] | None] = {start: None}
        queue = deque([(start, 0)])
        while queue:
            (x, y), depth = queue.popleft()
            for dx, dy in _MOVES:
                cell = (x + dx, y + dy)
                if cell in first or not (0 <= cell[0] < 64 and 0 <= cell[1] < 64):
                    continue
                kind = int(semantic[cell])
                step = first[(x, y)] or (dx, dy)
                if kind == goal:
                    if (x, y) == start:
                        return DO if tuple(player.facing) == (dx, dy) else _MOVES[(dx, dy)]
                    return _MOVES[step]
                if kind in _OPEN and depth < SEARCH:
                    first[cell] = step
                    queue.append((cell, depth + 1))
        return self._wander(semantic, player)

    def _wander(self, semantic: np.ndarray, player: Any) -> int:
        """A random move onto open ground (never into lava or water)."""
        x, y = int(player.pos[0]), int(player.pos[1])
        moves = [action for (dx, dy), action in _MOVES.items()
                 if 0 <= x + dx < 64 and 0 <= y + dy < 64 and semantic[x + dx, y + dy] in _OPEN]
        return self._rng.choice(moves or [NOOP])


_AROUND = [(dx, dy) for dx in (-1, 0, 1) for dy in (-1, 0, 1)]


def _affords(inventory: dict[str, int], tool: str) -> bool:
    needs = {"wood_pickaxe": {"wood": 1}, "wood_sword": {"wood": 1}, "stone_pickaxe": {"wood": 1, "stone": 1},
             "stone_sword": {"wood": 1, "stone": 1}}[tool]
    return all(inventory[item] >= count for item, count in needs.items())
