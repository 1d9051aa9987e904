"""Optimal Sokoban solver: breadth-first search over player moves.

Every step (walk or push) costs one action, as in the env, so BFS over
``(player cell, box cells)`` states gives a shortest action sequence.  Two cheap,
optimality-preserving prunings keep it small:

* **dead cells** -- a box pushed onto a non-target cell from which no sequence of
  pushes can bring it to any target (corners, wall edges without targets) can never
  be solved, so such pushes are skipped;
* **visited states** -- each ``(player, boxes)`` state is expanded once.

Limits: memory and time grow with the number of reachable states.  On 6x6 with one
box that is a few hundred states (well under a millisecond); 8x8 with two boxes a
few thousand.  On 10x10 with three boxes it can reach hundreds of thousands of
states (seconds, ~100 MB); past ``max_states`` the search gives up and returns
``None`` instead of exhausting memory.
"""

from __future__ import annotations

from ragen_bench.envs.sokoban.levels import BOX, BOX_ON_TARGET, PLAYER, PLAYER_ON_TARGET, TARGET, WALL

Layers = tuple[int, int, bytes, bytes]  # (height, width, fixed, state) as in levels.py


def live_cells(fixed: bytes, width: int) -> frozenset[int]:
    """Cells from which a lone box can still be pushed onto some target.

    Found backwards from the targets: a box can reach ``y`` from ``x = y - d`` when
    ``x`` and the player's cell ``x - d`` are not walls.
    """
    targets = [i for i, cell in enumerate(fixed) if cell == TARGET]
    live = set(targets)
    frontier = list(targets)
    while frontier:
        cell = frontier.pop()
        for delta in (-width, width, -1, 1):
            origin = cell - delta
            pusher = origin - delta
            if origin in live or not 0 <= pusher < len(fixed):
                continue
            if fixed[origin] != WALL and fixed[pusher] != WALL:
                live.add(origin)
                frontier.append(origin)
    return frozenset(live)


def solve(layers: Layers, max_states: int = 2_000_000) -> list[int] | None:
    """Shortest action sequence (0=Up, 1=Down, 2=Left, 3=Right) that solves the level.

    Returns ``[]`` for a solved level and ``None`` when the level is unsolvable or
    more than ``max_states`` states would be needed.
    """
    _, width, fixed, state = layers
    targets = frozenset(i for i, cell in enumerate(fixed) if cell == TARGET)
    walls = bytes(1 if cell == WALL else 0 for cell in fixed)
    live = live_cells(fixed, width)
    player = next(i for i, cell in enumerate(state) if cell in (PLAYER, PLAYER_ON_TARGET))
    boxes = tuple(sorted(i for i, cell in enumerate(state) if cell in (BOX, BOX_ON_TARGET)))
    if targets.issuperset(boxes):
        return []

    start = (player, boxes)
    parents: dict[tuple[int, tuple[int, ...]], tuple[tuple[int, tuple[int, ...]], int] | None] = {start: None}
    frontier = [start]
    deltas = (-width, width, -1, 1)
    while frontier:
        next_frontier = []
        for node in frontier:
            here, node_boxes = node
            for action, delta in enumerate(deltas):
                there = here + delta
                if walls[there]:
                    continue
                if there in node_boxes:
                    beyond = there + delta
                    if walls[beyond] or beyond in node_boxes or beyond not in live:
                        continue
                    child = (there, tuple(sorted(beyond if b == there else b for b in node_boxes)))
                else:
                    child = (there, node_boxes)
                if child in parents:
                    continue
                parents[child] = (node, action)
                if child[1] is not node_boxes and targets.issuperset(child[1]):
                    return _backtrack(parents, child)
                next_frontier.append(child)
            if len(parents) > max_states:
                return None
        frontier = next_frontier
    return None


def _backtrack(parents, node) -> list[int]:
    actions = []
    while parents[node] is not None:
        node, action = parents[node]
        actions.append(action)
    actions.reverse()
    return actions
