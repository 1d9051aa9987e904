"""Sudoku as a text environment, reproducing RAGEN-2's puzzles, feedback and rewards exactly."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from ragen_bench.envs.base import PICTURE_METADATA, AnyText, TextEnv, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, OneOf, setting
from ragen_bench.envs.sudoku import actions, picture, solver
from ragen_bench.envs.sudoku.actions import Placement
from ragen_bench.envs.sudoku.puzzles import BLANK_FRACTIONS, SIZES, blank_count, generate, layout

CORRECT_REWARD = 1.0  # the digit of the generator's solution
VALID_REWARD = 0.5  # breaks no rule but differs from that solution
INVALID_REWARD = -0.1  # unparseable, out of range, a given cell, or a repeated digit
SOLVED_BONUS = 10.0  # added to the placement that fills the board

MAX_ACTION_CHARS = 256
# The longest observation is a board echoing a 256-character unparseable action (lower-casing
# may double a character); it stays under 1,700 characters on a 9x9 board.
MAX_OBSERVATION_CHARS = 4096

_RULE = "=" * 50
_HEADER = f"{_RULE}\nSUDOKU PUZZLE\n{_RULE}\n"
_LEGEND = "Legend: [N]=initial cell, N=user-placed, *N*=conflict, .=empty"
_HINTS_HEADER = "💡 VALID NUMBERS FOR EMPTY CELLS:"
_HINTS_UP_TO = 10  # the hints list every empty cell once at most this many are left
_SAMPLE_CHARSET = text_charset("0123456789,")
# A cell's mark by its digit: given, or placed (" . " for an empty cell); a row's last mark
# loses its trailing space (RAGEN-2 strips each row).
_GIVEN_MARKS = tuple(f"[{digit}]" for digit in range(10))
_PLACED_MARKS = (" . ", *(f" {digit} " for digit in range(1, 10)))
_PLACED_LAST_MARKS = tuple(mark.rstrip() for mark in _PLACED_MARKS)


@lru_cache(maxsize=None)
def _fits_texts(n: int) -> tuple[str, ...]:
    """``[taken >> 1]``: the digits 1..n missing from the mask ``taken``, as the hints print them ("" if none)."""
    texts = []
    for taken in range(0, 1 << (n + 1), 2):
        fits = [digit for digit in range(1, n + 1) if not taken >> digit & 1]
        texts.append(str(fits) if fits else "")
    return tuple(texts)


@lru_cache(maxsize=None)
def _board_template(n: int) -> str:
    """The header, the board with a ``{}`` per cell (boxes split by ``|`` and dashes) and the legend."""
    box = layout(n).box
    lines = [_HEADER]
    for row in range(n):
        if row and row % box == 0:
            lines.append("-" * (3 * n + box - 1) + "\n")
        lines.append("| ".join(["{}" * box] * (n // box)) + "\n")
    lines.append("\n" + _LEGEND)
    return "".join(lines)


@lru_cache(maxsize=None)
def _placed_marks(n: int) -> tuple[tuple[str, ...], ...]:
    """Per cell, the marks of a placed digit (the last column's without the trailing space)."""
    return tuple(_PLACED_LAST_MARKS if cell % n == n - 1 else _PLACED_MARKS for cell in range(n * n))


@lru_cache(maxsize=None)
def _hint_prefixes(n: int) -> tuple[str, ...]:
    return tuple(f"\n  - ({cell // n + 1},{cell % n + 1}): " for cell in range(n * n))


@dataclass(frozen=True)
class SudokuConfig(EnvConfig):
    """SudokuEnv's arguments (besides ``render_mode``)."""

    grid_size: int = setting(9, rule=OneOf(SIZES), help="The board's side: 4 (2x2 boxes) or 9 (3x3 boxes).")
    difficulty: str = setting(
        "easy", rule=OneOf(tuple(BLANK_FRACTIONS)), help="How many cells are empty: 'easy', 'medium' or 'hard'."
    )
    max_steps: int = setting(81, rule=IntIn(1, 10_000), help="Placements before the episode is truncated.")


class SudokuEnv(TextEnv):
    """Fill a Sudoku grid, one number per action, with RAGEN-2's feedback after every move.

    ## Description
    RAGEN-2's ``sudoku`` env (mll-lab-nu/RAGEN commit 20daedc, ``render_format=
    "with_feedback"``): each seed gives a random filled board with a share of its cells
    emptied (40% easy, 50% medium, 60% hard).  The agent places digits until every cell
    is filled.  ``reset(seed=s)`` gives RAGEN-2's puzzle for seed ``s``, and every step
    its observation, reward and info (see ``actions`` for the action text, ``puzzles``
    for the generator).  Emptied puzzles may have several solutions; any filled board
    that breaks no rule solves the episode.

    ## Action Space
    ``AnyText(0, 256)``: any ``str`` of at most 256 characters, e.g. ``"place 5 at row 2
    col 3"`` or ``"2,3,5"`` (row, column, number; both count from 1).  Text that names no
    placement is a legal action with a penalty, as in RAGEN-2; a non-``str`` or longer
    text raises ``InvalidActionError``.  A placement is refused (penalty, board
    unchanged) when its numbers are out of range, the cell was given, or the digit is
    already in the cell's row, column or box.  A placed digit may be replaced.

    ## Observation Space
    ``AnyText(1, 4096)``: the board (``[N]`` given, ``N`` placed, `` . `` empty, boxes
    split by ``|`` and dashes), a legend, the last move's feedback, the candidates of
    every empty cell once at most 10 are left, progress and the step count.  Refused
    placements never enter the board, so it never shows a conflict.

    ## Rewards
    1.0 for a placement of the generator's solution digit, 0.5 for another digit that
    breaks no rule, -0.1 for any refused or unparseable action; +10.0 more for the
    placement that fills the board.

    ## Episode End
    Terminated when the board is filled.  Truncated after ``max_steps`` actions (81,
    RAGEN-2's), refused ones included.  RAGEN-2 ends its episode at that count only on
    an accepted placement (a refused action never ends it); its rollouts stop at 20 or
    30 actions, so no episode it plays reaches the difference.  Stepping a finished
    episode raises ``EpisodeFinishedError``.

    ## Arguments
    The fields of :class:`SudokuConfig` (``grid_size``, ``difficulty``, ``max_steps``),
    ``render_mode="ansi"``, ``"rgb_array"`` (a
    picture of the board, ``picture.draw``) or ``None``.

    ## Info
    Every call: ``success`` (the board is filled), ``level_seed``.  Reset adds
    ``optimal_length`` (the number of empty cells: each needs one placement, and the
    solution fills each with one).  Steps add RAGEN-2's keys: ``action_is_effective`` and
    ``action_is_valid`` (the placement was accepted); a refused action adds ``error``,
    and a repeated digit also ``valid_numbers`` (the cell's candidates, sorted); an
    accepted one adds ``correct_placement``, ``steps_remaining``, ``cells_filled`` and
    ``cells_remaining``.

    ## Solver
    ``optimal_action()`` places the first empty cell's digit of a completion of the
    current board: the generator's solution while every placed digit agrees with it,
    else one found by exact search (``solver.completions``).  Either way the board fills
    in as many moves as it has empty cells, the fewest possible.  When a placed digit
    leaves no completion, it names the first cell (row-major) whose solution digit can
    be placed now, replacing a wrong digit or filling a cell, and ``None`` if none can.

    ## Board state
    ``board``, ``givens`` and ``solution`` are ``(n, n)`` ``int8`` arrays (0 = empty);
    ``last_feedback`` is the feedback line of the last step.

    ## Version History
    * v0: RAGEN-2-exact puzzles, observations, rewards and info (RAGEN-2 commit
      20daedc); a step cap on every action.
    """

    action_names = None
    # The board's marks are several characters wide ("[5]", " . "); its legend is in every observation.
    symbol_meanings: dict[str, str] = {}
    seed_limit = 2**32  # RAGEN-2 also seeds numpy's global generator, which refuses larger seeds
    metadata = PICTURE_METADATA

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`SudokuConfig`."""
        super().__init__(render_mode)
        self._configure(SudokuConfig, kwargs)
        n = self.grid_size
        box = layout(n).box
        example = n // 2 + 1  # 5 on 9x9, as RAGEN-2's prompt; 3 on 4x4
        self.instruction = (
            f"Solve the Sudoku: fill every empty cell so that each row, each column and each "
            f"{box}x{box} box holds every number from 1 to {n} exactly once. Numbers in "
            f"[brackets] were given and cannot be changed; dots are empty cells. Place one "
            f"number per action, written as 'place {example} at row 2 col 3' or as "
            f"row,column,number ('2,3,{example}'); rows and columns count from 1. After each move "
            f"the board says whether it was accepted, and once at most {_HINTS_UP_TO} cells are "
            f"empty it lists the numbers that still fit each of them."
        )
        self.observation_space = AnyText(
            max_length=MAX_OBSERVATION_CHARS, charset=text_charset(_HEADER, _LEGEND, _HINTS_HEADER, "0123456789|-. ")
        )
        self._set_action_space(AnyText(min_length=0, max_length=MAX_ACTION_CHARS, charset=_SAMPLE_CHARSET))

        self._layout = layout(n)
        self._givens: tuple[int, ...] = ()
        self._solution: tuple[int, ...] = ()
        self._cells: list[int] = []
        self._rows = [0] * n  # the digits of each row, column and box as bit masks
        self._cols = [0] * n
        self._boxes = [0] * n
        self._board_text = ""
        self._blanks = 0
        self._given_count = 0
        self._steps = 0
        self.last_feedback = ""

    # -- Gymnasium API -------------------------------------------------------------

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        puzzle = generate(self.grid_size, self.difficulty, seed)
        self._givens, self._solution = puzzle.givens, puzzle.solution
        self._cells = list(puzzle.givens)
        n = self.grid_size
        self._rows, self._cols, self._boxes = rows, cols, boxes = [0] * n, [0] * n, [0] * n
        geometry = self._layout
        for cell, digit in enumerate(self._cells):
            if digit:
                rows[geometry.rows[cell]] |= 1 << digit
                cols[geometry.cols[cell]] |= 1 << digit
                boxes[geometry.boxes[cell]] |= 1 << digit
        self._board_text = self._render_board()
        self._blanks = blank_count(n, self.difficulty)
        self._given_count = n * n - self._blanks
        self._steps = 0
        self.last_feedback = ""
        return self.render_text(), {"success": False, "level_seed": self.level_seed, "optimal_length": self._blanks}

    def _step_action(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._steps += 1
        parsed = actions.parse(action, self.grid_size)
        if isinstance(parsed, Placement):
            info = self._place(parsed)
        else:
            self.last_feedback = f"❌ Invalid action format: {parsed}"
            info = self._refused(parsed)
        solved = self._blanks == 0
        info["success"] = solved
        info["level_seed"] = self.level_seed
        reward = INVALID_REWARD
        if info["action_is_valid"]:
            reward = CORRECT_REWARD if info["correct_placement"] else VALID_REWARD
            reward += SOLVED_BONUS if solved else 0.0
        return self.render_text(), reward, solved, not solved and self._steps >= self.max_steps, info

    def render_text(self) -> str:
        """The observation text: board, legend, feedback, hints, progress."""
        n = self.grid_size
        lines = [self._board_text]
        if self.last_feedback:
            lines.append("\n\n" + self.last_feedback)
        if 0 < self._blanks <= _HINTS_UP_TO:
            lines.append("\n\n" + _HINTS_HEADER)
            geometry, cells, rows, cols, boxes = self._layout, self._cells, self._rows, self._cols, self._boxes
            fits_text, prefixes = _fits_texts(n), _hint_prefixes(n)
            for cell in range(n * n):
                if not cells[cell]:
                    taken = rows[geometry.rows[cell]] | cols[geometry.cols[cell]] | boxes[geometry.boxes[cell]]
                    if fits := fits_text[taken >> 1]:
                        lines.append(prefixes[cell] + fits)
        filled = n * n - self._blanks
        lines.append(
            f"\n\nProgress: {filled}/{n * n} cells filled ({self._given_count} initial, "
            f"{filled - self._given_count} placed)\nSteps: {self._steps}/{self.max_steps}"
        )
        return "".join(lines)

    def render_rgb(self) -> np.ndarray:
        """The board as a picture (``render_mode="rgb_array"``): givens dark on grey, placed digits blue."""
        return picture.draw(self.board, self.givens)

    # -- solver hooks ---------------------------------------------------------------

    def optimal_action(self, steps_left: int | None = None) -> str | None:
        """The next placement of a fewest-moves fill (see the class docstring); ``None`` when done.

        Every empty cell needs a move whatever the budget, so ``steps_left`` changes nothing.
        """
        if not self._cells or self._blanks == 0 or self.episode_finished:
            return None
        cells, n = self._cells, self.grid_size
        target = self._solution
        if any(digit and digit != target[cell] for cell, digit in enumerate(cells)):
            found = solver.completions(cells, n)
            if not found:
                return self._repair()
            target = found[0]
        cell = cells.index(0)
        return actions.placement_text(Placement(cell // n, cell % n, target[cell]))

    # -- board state (for drawing) --------------------------------------------------

    @property
    def board(self) -> np.ndarray:
        """The current digits, ``(n, n)`` ``int8`` (0 = empty)."""
        return self._grid(self._cells)

    @property
    def givens(self) -> np.ndarray:
        """The puzzle's given digits, ``(n, n)`` ``int8`` (0 = empty)."""
        return self._grid(self._givens)

    @property
    def solution(self) -> np.ndarray:
        """The filled board the puzzle was cut from, ``(n, n)`` ``int8``."""
        return self._grid(self._solution)

    # -- internals ------------------------------------------------------------------

    def _grid(self, cells: Any) -> np.ndarray:
        return np.array(cells, dtype=np.int8).reshape(self.grid_size, self.grid_size)

    def _units(self, cell: int) -> tuple[int, int, int]:
        geometry = self._layout
        return geometry.rows[cell], geometry.cols[cell], geometry.boxes[cell]

    def _candidates(self, cell: int) -> list[int]:
        """The digits an empty ``cell`` can take (none for a filled one), ascending."""
        if self._cells[cell]:
            return []
        r, c, b = self._units(cell)
        taken = self._rows[r] | self._cols[c] | self._boxes[b]
        return [digit for digit in self._layout.digits if not taken >> digit & 1]

    def _render_board(self) -> str:
        """Header, board, legend: the part of the text only placements change."""
        cells, givens = self._cells, self._givens
        placed = _placed_marks(self.grid_size)
        return _board_template(self.grid_size).format(
            *[(_GIVEN_MARKS if givens[cell] else placed[cell])[digit] for cell, digit in enumerate(cells)]
        )

    def _refused(self, error: str) -> dict[str, Any]:
        return {"action_is_effective": False, "action_is_valid": False, "error": error}

    def _place(self, placement: Placement) -> dict[str, Any]:
        """Apply an in-range placement, or refuse it; the info of the step."""
        row, col, digit = placement
        cell = row * self.grid_size + col
        at = f"({row + 1},{col + 1})"
        if self._givens[cell]:
            self.last_feedback = f"❌ Cannot modify initial cell at {at}"
            return self._refused("Cannot modify initial cells")
        bit = 1 << digit
        r, c, b = self._units(cell)
        rows, cols, boxes = self._rows, self._cols, self._boxes
        if (rows[r] | cols[c] | boxes[b]) & bit:
            box = self._layout.box
            clash = ", ".join(
                name
                for name, mask in (
                    (f"row {row + 1}", rows[r]),
                    (f"column {col + 1}", cols[c]),
                    (f"box ({r // box + 1},{c // box + 1})", boxes[b]),
                )
                if mask & bit
            )
            fits = self._candidates(cell)
            self.last_feedback = f"❌ Invalid placement: {digit} conflicts with {clash}"
            if fits:
                self.last_feedback += f"\n   Valid numbers for {at}: {fits}"
            info = self._refused(f"Number {digit} conflicts with {clash}")
            info["valid_numbers"] = fits
            return info
        previous = self._cells[cell]
        if previous:
            bit ^= 1 << previous  # the previous digit leaves the masks as the new one enters
        else:
            self._blanks -= 1
        self._cells[cell] = digit
        rows[r] ^= bit
        cols[c] ^= bit
        boxes[b] ^= bit
        self._board_text = self._render_board()
        correct = digit == self._solution[cell]
        self.last_feedback = (
            f"✓ Correct! Placed {digit} at {at}" if correct else f"⚠ Placed {digit} at {at} - Valid but not optimal"
        )
        if self._blanks == 0:
            self.last_feedback += "\n🎉 Congratulations! Puzzle solved!"
        filled = self.grid_size**2 - self._blanks
        return {
            "action_is_effective": True,
            "action_is_valid": True,
            "correct_placement": correct,
            "steps_remaining": self.max_steps - self._steps,
            "cells_filled": filled,
            "cells_remaining": self._blanks,
        }

    def _repair(self) -> str | None:
        """A move back towards the generator's solution when the board has no completion."""
        n = self.grid_size
        for cell, digit in enumerate(self._cells):
            wanted = self._solution[cell]
            if digit == wanted:
                continue
            r, c, b = self._units(cell)
            if not (self._rows[r] | self._cols[c] | self._boxes[b]) >> wanted & 1:
                return actions.placement_text(Placement(cell // n, cell % n, wanted))
        return None
