"""FrozenLake's lake model: cells, moves, reachability, and RAGEN's random lakes.

A lake is a tuple of equal-length strings over ``S F H G`` (start, frozen, hole, goal),
the letters Gymnasium uses.  States are ``row * ncol + col``; actions are
0 = Left, 1 = Down, 2 = Right, 3 = Up.
"""

from __future__ import annotations

from collections import deque

import numpy as np

LEFT, DOWN, RIGHT, UP = 0, 1, 2, 3
_MOVES = {LEFT: (0, -1), DOWN: (1, 0), RIGHT: (0, 1), UP: (-1, 0)}
TERMINAL_LETTERS = "GH"
# Generation redraws whole boards until the goal is reachable; this bounds the redraws.
# Even with almost no ice, start and goal are adjacent with probability about 4 / size**2
# per draw, so a valid setting stays far below it (over the first 20,000 seeds, 4x4 and
# 8x8 lakes at 80% ice need at most 4 boards).
MAX_LAKE_DRAWS = 10_000


class LakeGenerationError(RuntimeError):
    """No lake with a reachable goal within ``MAX_LAKE_DRAWS`` draws."""


def neighbour(desc: tuple[str, ...], state: int, action: int) -> int:
    nrow, ncol = len(desc), len(desc[0])
    row, col = divmod(state, ncol)
    d_row, d_col = _MOVES[action]
    row = min(max(row + d_row, 0), nrow - 1)
    col = min(max(col + d_col, 0), ncol - 1)
    return row * ncol + col


def cell(desc: tuple[str, ...], state: int) -> str:
    """The letter under ``state``."""
    row, col = divmod(state, len(desc[0]))
    return desc[row][col]


def shortest_path_length(desc: tuple[str, ...], start: int) -> int | None:
    """Fewest non-slippery moves from ``start`` to the goal avoiding holes (``None`` if cut off)."""
    if cell(desc, start) == "G":
        return 0
    distance = {start: 0}
    frontier = deque([start])
    while frontier:
        state = frontier.popleft()
        for action in range(4):
            nxt = neighbour(desc, state, action)
            if nxt in distance or cell(desc, nxt) == "H":
                continue
            if cell(desc, nxt) == "G":
                return distance[state] + 1
            distance[nxt] = distance[state] + 1
            frontier.append(nxt)
    return None


def generate_lake(size: int, frozen_prob: float, rng: np.random.Generator) -> tuple[str, ...]:
    """A random ``size`` x ``size`` lake with a start and a goal joined by a hole-free path.

    Draw for draw as RAGEN's generator: each attempt samples the whole board
    (frozen with ``frozen_prob``, else hole), then the start cell, then the goal cell;
    an attempt is kept when start != goal and the goal is reachable.  Start and goal
    may overwrite holes.  Raises :class:`LakeGenerationError` after ``MAX_LAKE_DRAWS``
    failed attempts instead of looping on.
    """
    for _ in range(MAX_LAKE_DRAWS):
        board = rng.choice(["F", "H"], (size, size), p=[frozen_prob, 1 - frozen_prob])
        start = tuple(int(v) for v in rng.integers(size, size=2))
        goal = tuple(int(v) for v in rng.integers(size, size=2))
        if start == goal:
            continue
        board[start], board[goal] = "S", "G"
        lake = tuple("".join(row) for row in board)
        if shortest_path_length(lake, start[0] * size + start[1]) is not None:
            return lake
    raise LakeGenerationError(
        f"no {size}x{size} lake with a reachable goal in {MAX_LAKE_DRAWS} draws (frozen_prob={frozen_prob})"
    )
