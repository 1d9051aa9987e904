"""The 2048 reference policy: depth-limited expectimax over whole layers of boards at once.

Boards are packed as ``uint64``: 16 cells of 4 bits, each the exponent of its tile
(0 = empty, 1 = 2, ... 15 = 32768), row ``r`` in bits ``16r..16r+15`` and column ``c`` in
the row's bits ``4c..4c+3``.  A move is four look-ups in a 65,536-entry table of row
slides (built once from :func:`board.slide`, so the search plays the env's own rules),
columns being rows of the transposed board.  Every layer of the search tree is one numpy
array, so a whole ply costs a handful of vector operations instead of a Python loop per
node.

The tree alternates the player's move (max) and the spawn (expectation over every empty
cell, 2 with probability 0.9 and 4 with 0.1, as the env spawns).  Leaves, the boards
after a move and before its spawn, are scored with the heuristic of nneonneo/2048-ai
(MIT): per row and per column, a bonus for empty cells and for equal neighbours, a
penalty for non-monotone lines and for the tile mass.  A board with no move scores 0,
far below any live board.  The depth grows as the grid fills (:func:`search_depth`).
"""

from __future__ import annotations

import functools

import numpy as np

from ragen_bench.envs.game_2048 import board as rules

SIZE = 4
TWO_PROB = 0.9
_ROW_MASK = np.uint64(0xFFFF)
_NIBBLE = np.uint64(0xF)
_ROW_SHIFTS = tuple(np.uint64(16 * row) for row in range(SIZE))
_CELL_SHIFTS = np.arange(0, 64, 4, dtype=np.uint64)

# nneonneo/2048-ai's heuristic weights.
_LOST_PENALTY = 200_000.0
_MONOTONICITY_POWER = 4.0
_MONOTONICITY_WEIGHT = 47.0
_SUM_POWER = 3.5
_SUM_WEIGHT = 11.0
_MERGES_WEIGHT = 700.0
_EMPTY_WEIGHT = 270.0


def _line_exponents(row: int) -> tuple[int, ...]:
    return tuple((row >> (4 * col)) & 0xF for col in range(SIZE))


def _row_heuristic(exponents: tuple[int, ...]) -> float:
    empty = exponents.count(0)
    merges = 0.0
    previous, run = 0, 0
    for exponent in exponents:
        if exponent == 0:
            continue
        if exponent == previous:
            run += 1
        elif run:
            merges += 1 + run
            run = 0
        previous = exponent
    if run:
        merges += 1 + run
    falling = rising = 0.0
    for left, right in zip(exponents, exponents[1:]):
        if left > right:
            falling += left**_MONOTONICITY_POWER - right**_MONOTONICITY_POWER
        else:
            rising += right**_MONOTONICITY_POWER - left**_MONOTONICITY_POWER
    mass = sum(exponent**_SUM_POWER for exponent in exponents)
    return (
        _LOST_PENALTY + _EMPTY_WEIGHT * empty + _MERGES_WEIGHT * merges
        - _MONOTONICITY_WEIGHT * min(falling, rising) - _SUM_WEIGHT * mass
    )


def _slid_row(row: int) -> int:
    """``row`` slid toward column 0 under the env's rules (a 65,536 tile is clamped to 32,768)."""
    values = tuple(1 << exponent if exponent else 0 for exponent in _line_exponents(row))
    slid, _ = rules.slide(values)
    return sum(min(value.bit_length() - 1, 15) << (4 * col) for col, value in enumerate(slid) if value)


def _reversed_rows(rows: np.ndarray) -> np.ndarray:
    """Each 16-bit row with its four cells in reverse order."""
    return ((rows & 0xF) << 12) | ((rows & 0xF0) << 4) | ((rows >> 4) & 0xF0) | (rows >> 12)


@functools.cache
def _tables() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Slide-left and slide-right results and the heuristic of every row (built on first use)."""
    rows = np.arange(1 << 16, dtype=np.uint64)
    left = np.array([_slid_row(row) for row in range(1 << 16)], dtype=np.uint64)
    right = _reversed_rows(left[_reversed_rows(rows)])
    heuristic = np.array([_row_heuristic(_line_exponents(row)) for row in range(1 << 16)])
    return left, right, heuristic


def encode(board: rules.Board) -> np.uint64:
    """A 4x4 board as its packed exponents."""
    packed = 0
    for index, value in enumerate(value for line in board for value in line):
        if value:
            packed |= (value.bit_length() - 1) << (4 * index)
    return np.uint64(packed)


def transpose(boards: np.ndarray) -> np.ndarray:
    """Rows become columns (the 4x4 nibble-matrix transpose by masked shifts)."""
    a = (
        (boards & np.uint64(0xF0F00F0FF0F00F0F))
        | ((boards & np.uint64(0x0000F0F00000F0F0)) << np.uint64(12))
        | ((boards & np.uint64(0x0F0F00000F0F0000)) >> np.uint64(12))
    )
    return (
        (a & np.uint64(0xFF00FF0000FF00FF))
        | ((a & np.uint64(0x00FF00FF00000000)) >> np.uint64(24))
        | ((a & np.uint64(0x00000000FF00FF00)) << np.uint64(24))
    )


def _slide_rows(boards: np.ndarray, table: np.ndarray) -> np.ndarray:
    out = np.zeros_like(boards)
    for shift in _ROW_SHIFTS:
        out |= table[(boards >> shift) & _ROW_MASK] << shift
    return out


def moves(boards: np.ndarray) -> np.ndarray:
    """``(4, n)``: every board after Up, Right, Down and Left (the env's action order)."""
    left, right, _ = _tables()
    columns = transpose(boards)
    return np.stack(
        [
            transpose(_slide_rows(columns, left)),
            _slide_rows(boards, right),
            transpose(_slide_rows(columns, right)),
            _slide_rows(boards, left),
        ]
    )


def heuristic(boards: np.ndarray) -> np.ndarray:
    """The leaf score of each board: its rows' and its columns' heuristics."""
    _, _, table = _tables()
    columns = transpose(boards)
    total = np.zeros(boards.shape)
    for shift in _ROW_SHIFTS:
        total += table[(boards >> shift) & _ROW_MASK] + table[(columns >> shift) & _ROW_MASK]
    return total


def empty_count(boards: np.ndarray) -> np.ndarray:
    return ((boards[:, None] >> _CELL_SHIFTS) & _NIBBLE == 0).sum(axis=1)


def spawn_value(after: np.ndarray, depth: int) -> np.ndarray:
    """Expected value of each board after a move, over its spawn, searching ``depth`` more moves."""
    if depth == 0:
        return heuristic(after)
    parent, cell = np.nonzero((after[:, None] >> _CELL_SHIFTS) & _NIBBLE == 0)
    empties = np.bincount(parent, minlength=len(after))
    shifts = _CELL_SHIFTS[cell]
    children = np.concatenate([after[parent] | (np.uint64(1) << shifts), after[parent] | (np.uint64(2) << shifts)])
    share = 1.0 / empties[parent]
    weights = np.concatenate([TWO_PROB * share, (1.0 - TWO_PROB) * share])
    values = move_value(children, depth)
    return np.bincount(np.concatenate([parent, parent]), weights=weights * values, minlength=len(after))


def move_value(boards: np.ndarray, depth: int) -> np.ndarray:
    """Value of each board with the player to move: its best move's, 0 with no move left."""
    after = moves(boards)
    live = after != boards
    values = np.zeros(after.shape)
    values[live] = spawn_value(after[live], depth - 1)
    return values.max(axis=0)


def search_depth(empty_cells: int) -> int:
    """Moves searched ahead: deeper as the grid fills (fewer spawns to branch over)."""
    return 3 if empty_cells <= 3 else 2


def action_values(board: rules.Board, valid: tuple[int, ...]) -> dict[int, float]:
    """Each valid action's expectimax value from ``board`` (4x4)."""
    packed = np.array([encode(board)], dtype=np.uint64)
    after = moves(packed)[list(valid), 0]
    depth = search_depth(int(empty_count(packed)[0]))
    return dict(zip(valid, spawn_value(after, depth - 1).tolist()))


def best_action(board: rules.Board, valid: tuple[int, ...]) -> int:
    """The valid action of highest expectimax value (the lowest id among ties)."""
    values = action_values(board, valid)
    best = max(values.values())
    return next(action for action in valid if values[action] == best)
