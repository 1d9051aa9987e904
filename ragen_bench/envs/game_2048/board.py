"""2048's rules on immutable boards: slides, merges, spawns, the end of the game.

A board is a tuple of rows, each a tuple of tile values (``0`` = empty cell), indexed
``board[row][col]`` with row 0 at the top.  Actions are RAGEN-2's:
0 = Up, 1 = Right, 2 = Down, 3 = Left.

A move slides every line toward the move's side; two equal tiles that meet merge into
one of twice the value, counted from that side, and a merged tile does not merge again
in the same move (``[2, 2, 2, 2]`` slid left is ``[4, 4, 0, 0]``, scoring 8).  Slides
of one line are cached (:func:`slide`), so a move costs a few dictionary look-ups.
"""

from __future__ import annotations

from functools import lru_cache

Line = tuple[int, ...]
Board = tuple[Line, ...]

UP, RIGHT, DOWN, LEFT = 0, 1, 2, 3
ACTIONS = (UP, RIGHT, DOWN, LEFT)


@lru_cache(maxsize=1 << 18)
def slide(line: Line) -> tuple[Line, int]:
    """``line`` slid toward its start: the new line and the sum of the tiles merged into."""
    tiles = [value for value in line if value]
    merged: list[int] = []
    gained = 0
    index = 0
    while index < len(tiles):
        if index + 1 < len(tiles) and tiles[index] == tiles[index + 1]:
            merged.append(2 * tiles[index])
            gained += 2 * tiles[index]
            index += 2
        else:
            merged.append(tiles[index])
            index += 1
    return tuple(merged) + (0,) * (len(line) - len(merged)), gained


@lru_cache(maxsize=1 << 18)
def slide_back(line: Line) -> tuple[Line, int]:
    """``line`` slid toward its end (a slide of the reversed line)."""
    moved, gained = slide(line[::-1])
    return moved[::-1], gained


# The action sets by bit mask (bit ``a`` set: action ``a`` is valid).
ACTION_SETS = tuple(tuple(action for action in ACTIONS if bits >> action & 1) for bits in range(16))


@lru_cache(maxsize=1 << 18)
def _row_actions(line: Line) -> int:
    """The bits of Left and Right if sliding the row that way changes it."""
    return (slide(line)[0] != line) << LEFT | (slide_back(line)[0] != line) << RIGHT


@lru_cache(maxsize=1 << 18)
def _column_actions(line: Line) -> int:
    """The bits of Up and Down if sliding the column that way changes it."""
    return (slide(line)[0] != line) << UP | (slide_back(line)[0] != line) << DOWN


def transpose(board: Board) -> Board:
    return tuple(zip(*board))


def valid_actions(board: Board) -> tuple[int, ...]:
    """The actions that change ``board``, in id order (none: the game is over)."""
    bits = 0
    for line in board:
        bits |= _row_actions(line)
    for line in zip(*board):
        bits |= _column_actions(line)
    return ACTION_SETS[bits]


def move(board: Board, action: int) -> tuple[Board, int]:
    """The board after ``action`` (before any spawn) and the score it gains."""
    lines = transpose(board) if action in (UP, DOWN) else board
    slider = slide if action in (UP, LEFT) else slide_back
    results = [slider(line) for line in lines]
    moved = tuple(line for line, _ in results)
    return (transpose(moved) if action in (UP, DOWN) else moved), sum(gained for _, gained in results)


@lru_cache(maxsize=1 << 18)
def _empty_columns(line: Line) -> tuple[int, ...]:
    return tuple(col for col, value in enumerate(line) if not value)


def empty_count(board: Board) -> int:
    return sum([len(_empty_columns(line)) for line in board])


def nth_empty(board: Board, index: int) -> tuple[int, int]:
    """The ``index``-th empty cell in row-major order (the order a spawn picks from)."""
    for row, line in enumerate(board):
        columns = _empty_columns(line)
        if index < len(columns):
            return row, columns[index]
        index -= len(columns)
    raise IndexError("fewer empty cells than the index")


def place(board: Board, row: int, col: int, value: int) -> Board:
    """``board`` with ``value`` written at ``(row, col)``."""
    line = board[row]
    return board[:row] + (line[:col] + (value,) + line[col + 1 :],) + board[row + 1 :]


def empty_board(size: int) -> Board:
    return ((0,) * size,) * size


def max_tile(board: Board) -> int:
    return max(map(max, board))
