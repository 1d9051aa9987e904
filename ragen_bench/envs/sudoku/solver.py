"""An exact Sudoku solver: every completion of a board, by depth-first search over bit masks.

Boards are the flat row-major lists of :mod:`ragen_bench.envs.sudoku.puzzles` (0 = empty).
The search always branches on the empty cell with the fewest candidates, which solves
any RAGEN-2 puzzle in well under a millisecond's worth of nodes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ragen_bench.envs.sudoku.puzzles import layout


def completions(board: Sequence[int], n: int, limit: int = 1) -> list[tuple[int, ...]]:
    """Up to ``limit`` filled boards that keep every digit of ``board`` (none if it breaks a rule).

    Exhaustive: fewer than ``limit`` results means there are no others.
    """
    geometry = layout(n)
    cells = list(board)
    rows, cols, boxes = [0] * n, [0] * n, [0] * n
    for cell, digit in enumerate(cells):
        if digit:
            bit = 1 << digit
            r, c, b = geometry.rows[cell], geometry.cols[cell], geometry.boxes[cell]
            if (rows[r] | cols[c] | boxes[b]) & bit:
                return []  # the board already repeats a digit in a unit
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
    blanks = [cell for cell, digit in enumerate(cells) if not digit]
    found: list[tuple[int, ...]] = []

    def candidates(cell: int) -> int:
        taken = rows[geometry.rows[cell]] | cols[geometry.cols[cell]] | boxes[geometry.boxes[cell]]
        return geometry.full & ~taken

    def search(left: list[int]) -> bool:
        """Fill the cells in ``left``; True once ``limit`` completions are found."""
        if not left:
            found.append(tuple(cells))
            return len(found) >= limit
        best = min(left, key=lambda cell: candidates(cell).bit_count())
        rest = [cell for cell in left if cell != best]
        r, c, b = geometry.rows[best], geometry.cols[best], geometry.boxes[best]
        options = candidates(best)
        while options:
            bit = options & -options
            options ^= bit
            cells[best] = bit.bit_length() - 1
            rows[r] |= bit
            cols[c] |= bit
            boxes[b] |= bit
            done = search(rest)
            rows[r] ^= bit
            cols[c] ^= bit
            boxes[b] ^= bit
            if done:
                return True
        cells[best] = 0
        return False

    search(blanks)
    return found
