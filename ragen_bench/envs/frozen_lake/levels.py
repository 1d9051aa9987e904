"""FrozenLake's lake model: cells, moves, reachability, and RAGEN's random lakes.

A lake is a tuple of equal-length strings over ``S F H G`` (start, frozen, hole, goal),
the letters Gymnasium uses.  States are ``row * ncol + col``; actions are
0 = Left, 1 = Down, 2 = Right, 3 = Up.
"""

from __future__ import annotations

from functools import lru_cache
from typing import NamedTuple

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


class Level(NamedTuple):
    """A generated lake with what generation already knows about it."""

    desc: tuple[str, ...]
    start: int  # the start state
    optimal_length: int  # fewest moves from the start to the goal avoiding holes


@lru_cache(maxsize=64)
def neighbours(nrow: int, ncol: int) -> tuple[tuple[int, int, int, int], ...]:
    """``neighbours(nrow, ncol)[state][action]``: where a move leads (the edge bumps back)."""
    table = []
    for state in range(nrow * ncol):
        row, col = divmod(state, ncol)
        moved = []
        for action in range(4):
            d_row, d_col = _MOVES[action]
            moved.append(min(max(row + d_row, 0), nrow - 1) * ncol + min(max(col + d_col, 0), ncol - 1))
        table.append(tuple(moved))
    return tuple(table)


def neighbour(desc: tuple[str, ...], state: int, action: int) -> int:
    return neighbours(len(desc), len(desc[0]))[state][action]


def cell(desc: tuple[str, ...], state: int) -> str:
    """The letter under ``state``."""
    row, col = divmod(state, len(desc[0]))
    return desc[row][col]


def shortest_path_length(desc: tuple[str, ...], start: int) -> int | None:
    """Fewest non-slippery moves from ``start`` to the goal avoiding holes (``None`` if cut off)."""
    flat = "".join(desc)
    if flat[start] == "G":
        return 0
    moves = neighbours(len(desc), len(desc[0]))
    seen = {start}
    frontier = [start]
    distance = 0
    while frontier:
        distance += 1
        following = []
        for state in frontier:
            for nxt in moves[state]:
                if nxt in seen:
                    continue
                letter = flat[nxt]
                if letter == "G":
                    return distance
                seen.add(nxt)
                if letter != "H":
                    following.append(nxt)
        frontier = following
    return None


# Board cells as numpy's ``choice(["F", "H"], p=...)`` picks them: 0 -> F, 1 -> H.
_BOARD_LETTERS = bytes.maketrans(b"\x00\x01", b"FH")


def hole_threshold(frozen_prob: float) -> float:
    """The uniform draw from which a cell is a hole, exactly as ``Generator.choice`` sees it.

    ``choice(["F", "H"], shape, p=[q, 1 - q])`` normalises ``cumsum(p)`` by its last entry
    and picks ``searchsorted(cdf, random(shape), side="right")``: index 1 (a hole)
    exactly when ``cdf[0] <= u``.  Same float operations, so the same boards.
    """
    return frozen_prob / (frozen_prob + (1 - frozen_prob))


def generate_level(size: int, frozen_prob: float, rng: np.random.Generator) -> Level:
    """A random ``size`` x ``size`` lake with a start and a goal joined by a hole-free path.

    Draw for draw as RAGEN's generator: each attempt samples the whole board
    (frozen with ``frozen_prob``, else hole), then the start cell, then the goal cell;
    an attempt is kept when start != goal and the goal is reachable.  Start and goal
    may overwrite holes.  Raises :class:`LakeGenerationError` after ``MAX_LAKE_DRAWS``
    failed attempts instead of looping on.

    RAGEN's ``rng.choice(["F", "H"], (size, size), p=...)`` is drawn as the
    ``rng.random((size, size))`` it makes internally (see :func:`hole_threshold`), and its
    two ``rng.integers(size, size=2)`` as one ``rng.integers(size, size=4)``: both consume
    32-bit draws one after another from the generator's own stream.
    """
    threshold = hole_threshold(frozen_prob)
    for _ in range(MAX_LAKE_DRAWS):
        board = bytearray((rng.random(size * size) >= threshold).tobytes().translate(_BOARD_LETTERS))
        start_row, start_col, goal_row, goal_col = rng.integers(size, size=4).tolist()
        start, goal = start_row * size + start_col, goal_row * size + goal_col
        if start == goal:
            continue
        board[start], board[goal] = 83, 71  # "S", "G"
        text = board.decode("ascii")
        desc = tuple(text[row : row + size] for row in range(0, size * size, size))
        length = shortest_path_length(desc, start)
        if length is not None:
            return Level(desc, start, length)
    raise LakeGenerationError(
        f"no {size}x{size} lake with a reachable goal in {MAX_LAKE_DRAWS} draws (frozen_prob={frozen_prob})"
    )


def generate_lake(size: int, frozen_prob: float, rng: np.random.Generator) -> tuple[str, ...]:
    """The lake of :func:`generate_level` (its rows)."""
    return generate_level(size, frozen_prob, rng).desc
