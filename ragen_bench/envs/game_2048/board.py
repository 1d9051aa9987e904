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


def transpose(board: Board) -> Board:
    return tuple(zip(*board))


def _slide_lines(lines: Board, slider) -> tuple[Board, int]:
    results = [slider(line) for line in lines]
    return tuple(moved for moved, _ in results), sum(gained for _, gained in results)


def move(board: Board, action: int) -> tuple[Board, int]:
    """The board after ``action`` (before any spawn) and the score it gains."""
    return all_moves(board)[action]


def all_moves(board: Board) -> tuple[tuple[Board, int], ...]:
    """``(board after action, score gained)`` for the four actions, in action order."""
    columns = transpose(board)
    up, up_gain = _slide_lines(columns, slide)
    down, down_gain = _slide_lines(columns, slide_back)
    right = _slide_lines(board, slide_back)
    left = _slide_lines(board, slide)
    return (transpose(up), up_gain), right, (transpose(down), down_gain), left


def empty_cells(board: Board) -> list[tuple[int, int]]:
    """The empty cells in row-major order (the order a spawn picks from)."""
    return [(row, col) for row, line in enumerate(board) for col, value in enumerate(line) if not value]


def place(board: Board, row: int, col: int, value: int) -> Board:
    """``board`` with ``value`` written at ``(row, col)``."""
    line = board[row]
    return board[:row] + (line[:col] + (value,) + line[col + 1 :],) + board[row + 1 :]


def empty_board(size: int) -> Board:
    return ((0,) * size,) * size


def max_tile(board: Board) -> int:
    return max(max(line) for line in board)
