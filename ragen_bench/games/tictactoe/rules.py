"""Tic-Tac-Toe's rules and its exact solver (plain Python, no PettingZoo)."""

from __future__ import annotations

from functools import lru_cache

from ragen_bench.games.board import BoardRules, player_mark

ROW_NAMES = "ABC"
# Move i is the cell in row i // 3, column i % 3, named like a spreadsheet cell: A1 .. C3.
ACTION_NAMES = tuple(f"{ROW_NAMES[i // 3]}{i % 3 + 1}" for i in range(9))
LINES = ((0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 3, 6), (1, 4, 7), (2, 5, 8), (0, 4, 8), (2, 4, 6))


def line_winner(cells: tuple[int, ...] | list[int]) -> int:
    """1 or 2 when that player holds a full line of the 9 flat ``cells``, else 0."""
    for a, b, c in LINES:
        if cells[a] and cells[a] == cells[b] == cells[c]:
            return cells[a]
    return 0


@lru_cache(maxsize=None)
def value(cells: tuple[int, ...], to_move: int) -> int:
    """Game value for ``to_move`` under perfect play: +1 win, 0 draw, -1 loss.

    Memoised over positions (5,478 reachable), so the whole tree is solved once per process.
    """
    won = line_winner(cells)
    if won:
        return 1 if won == to_move else -1
    empty = [i for i, cell in enumerate(cells) if cell == 0]
    if not empty:
        return 0
    return max(-value(_put(cells, i, to_move), 3 - to_move) for i in empty)


def optimal_moves(cells: tuple[int, ...], to_move: int) -> list[int]:
    """Every move that keeps the best value for ``to_move`` (ascending)."""
    empty = [i for i, cell in enumerate(cells) if cell == 0]
    scores = {i: -value(_put(cells, i, to_move), 3 - to_move) for i in empty}
    best = max(scores.values())
    return [i for i in empty if scores[i] == best]


def _put(cells: tuple[int, ...], index: int, player: int) -> tuple[int, ...]:
    return cells[:index] + (player,) + cells[index + 1 :]


class TicTacToeRules(BoardRules):
    rows = 3
    cols = 3
    action_names = ACTION_NAMES
    max_seat_moves = 5

    def __init__(self) -> None:
        super().__init__()
        # Plain-Python twins of ``cells`` (numpy element access is slow): the flat
        # board and its winner, both updated by ``play``.
        self.squares = [0] * 9
        self.won = 0

    def flat(self) -> tuple[int, ...]:
        return tuple(self.squares)

    def legal_moves(self) -> list[int]:
        if self.won:
            return []
        return [i for i, cell in enumerate(self.squares) if cell == 0]

    def play(self, move: int, player: int) -> None:
        self.cells[divmod(move, 3)] = player
        self.squares[move] = player
        self.won = line_winner(self.squares)
        self.moves.append(move)

    def winner(self) -> int:
        return self.won

    def board_text(self) -> str:
        rows = ["  1 2 3"]
        for r in range(3):
            marks = (player_mark(int(c)) if c else "." for c in self.cells[r])
            rows.append(f"{ROW_NAMES[r]} {' '.join(marks)}")
        return "\n".join(rows)
