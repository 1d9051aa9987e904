"""Connect Four's rules on bitboards, and the depth-limited alpha-beta search (no PettingZoo).

Bitboard layout: column ``c`` owns bits ``7c .. 7c+5`` (bottom to top); bit ``7c+6``
stays empty so that shifted lines never wrap from one column into the next.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ragen_bench.games.board import BoardRules, player_mark

ROWS, COLS = 6, 7
ACTION_NAMES = tuple(str(c + 1) for c in range(COLS))
_STRIDE = ROWS + 1
_TOP = [1 << (c * _STRIDE + ROWS - 1) for c in range(COLS)]
_BOTTOM = [1 << (c * _STRIDE) for c in range(COLS)]
# Centre-out order: good moves first make alpha-beta cut more.
_ORDER = (3, 2, 4, 1, 5, 0, 6)
WIN_SCORE = 100_000


def _windows() -> tuple[int, ...]:
    """The 69 four-cell lines of the board, as bitmasks."""
    found = []
    for c in range(COLS):
        for r in range(ROWS):
            for dc, dr in ((1, 0), (0, 1), (1, 1), (1, -1)):
                cells = [(c + k * dc, r + k * dr) for k in range(4)]
                if all(0 <= x < COLS and 0 <= y < ROWS for x, y in cells):
                    found.append(sum(1 << (x * _STRIDE + y) for x, y in cells))
    return tuple(found)


WINDOWS = _windows()
_CENTRE = sum(1 << (3 * _STRIDE + r) for r in range(ROWS))


def has_four(stones: int) -> bool:
    for shift in (1, _STRIDE, _STRIDE - 1, _STRIDE + 1):
        pairs = stones & (stones >> shift)
        if pairs & (pairs >> 2 * shift):
            return True
    return False


def heuristic(mine: int, theirs: int) -> int:
    """Open lines weighted by how full they are (3 of 4: 50, 2 of 4: 5), plus centre stones."""
    score = 3 * ((mine & _CENTRE).bit_count() - (theirs & _CENTRE).bit_count())
    for window in WINDOWS:
        if not window & theirs:
            score += _LINE_WEIGHT[(window & mine).bit_count()]
        elif not window & mine:
            score -= _LINE_WEIGHT[(window & theirs).bit_count()]
    return score


_LINE_WEIGHT = (0, 0, 5, 50, 0)


class Position:
    """A search position: the stones of the side to move and of the other side."""

    __slots__ = ("mine", "theirs")

    def __init__(self, mine: int, theirs: int) -> None:
        self.mine, self.theirs = mine, theirs

    def moves(self) -> list[int]:
        both = self.mine | self.theirs
        return [c for c in _ORDER if not both & _TOP[c]]

    def after(self, column: int) -> Position:
        """The position after the side to move drops a stone in ``column`` (sides swap)."""
        both = self.mine | self.theirs
        stone = (both + _BOTTOM[column]) & ~both & (_TOP[column] * 2 - _BOTTOM[column])
        return Position(self.theirs, self.mine | stone)


def negamax(position: Position, depth: int, alpha: int, beta: int, use_heuristic: bool) -> int:
    """Score for the side to move, searching ``depth`` plies (wins sooner score higher)."""
    if has_four(position.theirs):
        return -WIN_SCORE - depth
    moves = position.moves()
    if not moves:
        return 0
    if depth == 0:
        return heuristic(position.mine, position.theirs) if use_heuristic else 0
    best = -WIN_SCORE * 2
    for column in moves:
        score = -negamax(position.after(column), depth - 1, -beta, -alpha, use_heuristic)
        if score > best:
            best = score
            if score > alpha:
                alpha = score
                if alpha >= beta:
                    break
    return best


def best_moves(position: Position, depth: int, use_heuristic: bool) -> list[int]:
    """Every root move whose ``depth``-ply value equals the best (ascending columns).

    Each child is searched with a window just below the best so far, so moves tied
    with the best get exact values while worse ones are cut early.
    """
    scores: dict[int, int] = {}
    best = -WIN_SCORE * 2
    for column in position.moves():
        score = -negamax(position.after(column), depth - 1, -WIN_SCORE * 2, -(best - 1), use_heuristic)
        scores[column] = score
        best = max(best, score)
    return sorted(c for c, s in scores.items() if s == best)


class ConnectFourRules(BoardRules):
    rows = ROWS
    cols = COLS
    action_names = ACTION_NAMES
    max_seat_moves = ROWS * COLS // 2

    def __init__(self) -> None:
        super().__init__()
        self.stones = {1: 0, 2: 0}
        self.won = 0  # updated by ``play``: the winner is asked for after every move

    def position(self, player: int) -> Position:
        """The search position with ``player`` (1 or 2) to move."""
        return Position(self.stones[player], self.stones[3 - player])

    def legal_moves(self) -> list[int]:
        if self.won:
            return []
        both = self.stones[1] | self.stones[2]
        return [c for c in range(COLS) if not both & _TOP[c]]

    def play(self, move: int, player: int) -> None:
        row = int(np.flatnonzero(self.cells[:, move] == 0)[-1])  # row 0 is the top
        self.cells[row, move] = player
        self.stones[player] |= 1 << (move * _STRIDE + (ROWS - 1 - row))
        if has_four(self.stones[player]):
            self.won = player
        self.moves.append(move)

    def winner(self) -> int:
        return self.won

    def board_text(self) -> str:
        rows = [" ".join(player_mark(int(c)) if c else "." for c in row) for row in self.cells]
        return "\n".join([" ".join(ACTION_NAMES), *rows])


def replay(moves: Sequence[int]) -> ConnectFourRules:
    """The position after ``moves`` (columns 0-6, first player first)."""
    board = ConnectFourRules()
    for index, move in enumerate(moves):
        board.play(move, 1 + index % 2)
    return board
