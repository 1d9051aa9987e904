"""Sokoban as a text environment, reproducing RAGEN's levels and step semantics exactly."""

from __future__ import annotations

import functools
import random
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from ragen_bench.envs import coords
from ragen_bench.envs.base import PICTURE_METADATA, TextEnv, TextObservation, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, IsBool, OneOf, Rule, arg_error, setting
from ragen_bench.envs.sokoban import levels, picture
from ragen_bench.envs.sokoban.solver import solve

# Internal cell codes: the generator's, plus a row separator so that the whole
# board renders with one ``str.translate`` (the separator column is never reachable:
# it only borders the outer wall).
_NEWLINE = 7
_MOVABLE_ONTO = (levels.FLOOR, levels.TARGET)
_BOXES = (levels.BOX, levels.BOX_ON_TARGET)
_ON_TARGET = (levels.TARGET, levels.BOX_ON_TARGET, levels.PLAYER_ON_TARGET)
# RAGEN-2's coordinate labels, in the order it lists them.
COORD_LABELS = ("Targets", "Boxes", "Boxes on target", "Player", "Player on target")

VOCABULARIES: dict[str, dict[str, str]] = {
    # symbol -> meaning, in cell-code order: wall, floor, target, box on target, box,
    # player, player on target.
    "default": {
        "#": "wall",
        "_": "empty floor",
        "O": "target",
        "√": "box on target",
        "X": "box",
        "P": "player",
        "S": "player on target",
    },
    "alt": {
        "W": "wall",
        ".": "empty floor",
        "G": "target",
        "C": "box on target",
        "B": "box",
        "A": "player",
        "@": "player on target",
    },
}

# RAGEN's per-step reward table (gym-sokoban's constants).
STEP_PENALTY = -0.1
BOX_ON_TARGET_REWARD = 1
BOX_OFF_TARGET_PENALTY = -1
SOLVED_REWARD = 10


_thread_local = threading.local()


def _thread_generators() -> tuple[random.Random, np.random.RandomState]:
    """Generator objects reused across resets (re-seeded per level), one pair per thread."""
    pair = getattr(_thread_local, "generators", None)
    if pair is None:
        pair = _thread_local.generators = (random.Random(), np.random.RandomState())
    return pair


@functools.lru_cache(maxsize=4096)
def _level_and_plan(
    seed: int, height: int, width: int, num_boxes: int, search_depth: int, solver_max_states: int
) -> tuple[levels.Level, int, int, tuple[int, ...] | None]:
    """``(level, level_seed, fallbacks, shortest plan or None)`` for a seed.

    A pure function of its arguments, so it is cached per process: repeated seeds
    (pass@k samples, GRPO groups, panel re-runs) skip generation and search.
    ``solver_max_states=0`` skips the solver.
    """
    rng, np_rng = _thread_generators()
    level, level_seed, fallbacks = levels.generate_level_with_fallback(
        seed, height=height, width=width, num_boxes=num_boxes, search_depth=search_depth, rng=rng, np_rng=np_rng
    )
    plan = None
    if solver_max_states:
        found = solve((level.height, level.width, level.fixed, level.state), solver_max_states)
        plan = None if found is None else tuple(found)
    return level, level_seed, fallbacks, plan


class RoomSize(Rule):
    """A ``(height, width)`` pair (tuple or list) of ints in 5..32: 4x4 rooms never yield a level."""

    def check(self, owner: str, name: str, value: Any, checked: Mapping[str, Any]) -> tuple[int, int]:
        expected = "a (height, width) pair of ints in 5..32"
        is_pair = isinstance(value, (tuple, list)) and len(value) == 2
        if not is_pair or not all(isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in value):
            raise arg_error(owner, name, expected, value, TypeError)
        if not all(5 <= d <= 32 for d in value):
            raise arg_error(owner, name, expected, value)
        return int(value[0]), int(value[1])


@dataclass(frozen=True)
class SokobanConfig(EnvConfig):
    """SokobanEnv's arguments (besides ``render_mode``)."""

    dim_room: tuple[int, int] = setting((6, 6), rule=RoomSize(), help="The room's (height, width), walls included.")
    num_boxes: int = setting(1, rule=IntIn(1, 10), help="Boxes (and targets) in the room.")
    # The reverse play recurses once per step, hence the cap.
    search_depth: int = setting(300, rule=IntIn(1, 500), help="Depth of the generator's reverse play (RAGEN's).")
    max_steps: int = setting(100, rule=IntIn(1), help="Steps before the episode is truncated.")
    vocabulary: str = setting("default", rule=OneOf(VOCABULARIES), help="The grid's symbols: 'default' or 'alt'.")
    observation_format: str = setting(
        "grid", rule=OneOf(coords.OBSERVATION_FORMATS), help="'grid', or 'grid_coord' (the grid plus coordinates)."
    )
    solve_on_reset: bool = setting(
        True,
        rule=IsBool(),
        help="Put the optimal solution length in the reset info (turn off for raw generation speed).",
    )
    solver_max_states: int = setting(2_000_000, rule=IntIn(0), help="The solver's state budget; 0 skips the solver.")


class SokobanEnv(TextEnv):
    """Push every box onto a target in a procedurally generated room.

    ## Description
    The classic warehouse puzzle as RAGEN plays it: the player walks on floor cells and
    pushes (never pulls) boxes; a box moves only if the cell behind it is free.  Levels
    come from gym-sokoban's generator as modified by RAGEN (random-walk room, reverse
    play from the solved state, a few extra random player steps), reproduced draw for
    draw, so ``reset(seed=s)`` gives RAGEN's level for seed ``s``.

    ## Action Space
    ``Discrete(4)``: 0 = Up, 1 = Down, 2 = Left, 3 = Right (names in ``action_names``).
    A move into a wall, or a push against a wall or another box, leaves the board
    unchanged (``info["action_is_effective"] = False``) but still costs a step.
    Anything but an int (or numpy integer) in 0..3 raises ``InvalidActionError``.

    ## Observation Space
    ``Text``: the board, one line per row joined by ``"\\n"``.  Default symbols:
    ``#`` wall, ``_`` floor, ``O`` target, ``√`` box on target, ``X`` box, ``P`` player,
    ``S`` player on target (``vocabulary="alt"``: ``W . G C B A @``).
    With ``observation_format="grid_coord"`` (RAGEN-2's ``CoordSokoban``) the board is
    preceded by the zero-indexed ``(row, col)`` of every target, box, box on target and
    the player, in RAGEN-2's layout (see :mod:`ragen_bench.envs.coords`).

    ## Rewards
    -0.1 per step; +1 when a push puts a box on a target; -1 when it takes one off;
    +10 more when the last box reaches a target.  Summed in that order, so floats
    equal RAGEN's (e.g. 10.9 for a solving push).

    ## Episode End
    Terminated when every box is on a target.  Truncated after ``max_steps`` steps
    (100, RAGEN's limit).  Stepping a finished episode raises
    ``EpisodeFinishedError`` (``reset()`` starts the next one).

    ## Arguments
    The fields of :class:`SokobanConfig` (each documented there with its default and
    range) and ``render_mode="ansi"``, ``"rgb_array"`` (a picture of the room, 16 pixels
    a cell, ``picture.draw``) or ``None``.  Wrong types or ranges raise at construction.  Seeds are 32-bit (0..2**32-1).

    ## Info
    Every call: ``success``, ``boxes_on_target``, ``level_seed``.  Step adds
    ``action_is_effective`` and ``action_is_valid``.  Reset adds ``optimal_length``
    (``None`` if the solver's budget ran out or ``solve_on_reset=False``) and
    ``fallbacks`` (re-seeds needed; see the env card).

    ## Version History
    * v0: RAGEN-exact levels and dynamics (RAGEN commit 5eb79b8 / gym-sokoban rules);
      deterministic fallback seeds where RAGEN's are salted.  Later hardening (stepping
      a finished episode raises instead of paying +9.9 per step; out-of-range actions
      such as -1 raise instead of wrapping) changed no seed's episode, so the id stays v0.
      ``observation_format`` (default ``"grid"``, the only format before) left every
      existing id's episodes as they were.
    """

    action_names = ("Up", "Down", "Left", "Right")
    instruction = (
        "You are the player in a Sokoban warehouse. Push every box onto a target. "
        "Moving into a box pushes it one cell in the same direction, but only if the "
        "cell beyond it is empty; boxes cannot be pulled and cannot be pushed through "
        "walls or other boxes."
    )
    seed_limit = 2**32  # the generator seeds numpy's legacy RandomState
    metadata = PICTURE_METADATA

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`SokobanConfig`."""
        super().__init__(render_mode)
        config = self._configure(SokobanConfig, kwargs)
        self.height, self.width = config.dim_room
        vocabulary, observation_format = config.vocabulary, config.observation_format

        self.symbol_meanings = dict(VOCABULARIES[vocabulary])
        symbols = "".join(self.symbol_meanings)
        self._translation = {code: symbol for code, symbol in enumerate(symbols)}
        self._translation[_NEWLINE] = "\n"
        board_chars = self.height * (self.width + 1) - 1
        if observation_format == "grid":
            self.observation_space = TextObservation(
                max_length=board_chars, min_length=board_chars, charset=text_charset(symbols, "\n")
            )
        else:
            size = (self.height, self.width)
            # At most one cell per box and target, plus the player.
            longest = coords.max_text_length(*size, COORD_LABELS, 2 * self.num_boxes + 1, board_chars)
            charset = text_charset(symbols, "\n", *coords.charset_texts(*size, COORD_LABELS))
            self.observation_space = TextObservation(max_length=longest, min_length=board_chars, charset=charset)
            self._size_line = coords.board_size_line(*size)
            self.instruction = type(self).instruction + " " + coords.INSTRUCTION
        self._set_action_space(spaces.Discrete(4))

        self._stride = self.width + 1
        self._deltas = (-self._stride, self._stride, -1, 1)
        self._board = bytearray()
        self._player = 0
        self._boxes_on_target = 0
        self._steps = 0
        self._level_seed: int | None = None  # after fallbacks (level_seed is the seed asked for)
        self._plan: list[int] | None = None

    # -- Gymnasium API (through TextEnv's template methods) ---------------------------

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        """Generate RAGEN's level for ``seed``."""
        level, self._level_seed, fallbacks, plan = _level_and_plan(
            seed,
            self.height,
            self.width,
            self.num_boxes,
            self.search_depth,
            self.solver_max_states if self.solve_on_reset else 0,
        )
        self._load(level)
        info = self._info()
        info["fallbacks"] = fallbacks
        info["optimal_length"] = None if plan is None else len(plan)
        self._plan = None if plan is None else list(plan)  # followed by optimal_action()/optimal_plan()
        return self.render_text(), info

    def _step_action(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        board = self._board
        player = self._player
        delta = self._deltas[action]
        target = player + delta
        cell = board[target]
        reward = STEP_PENALTY
        moved = False
        if cell in _MOVABLE_ONTO:
            moved = True
        elif cell in _BOXES:
            beyond = target + delta
            beyond_cell = board[beyond]
            if beyond_cell in _MOVABLE_ONTO:
                moved = True
                box_arrives = beyond_cell == levels.TARGET
                box_leaves = cell == levels.BOX_ON_TARGET
                board[beyond] = levels.BOX_ON_TARGET if box_arrives else levels.BOX
                board[target] = levels.TARGET if box_leaves else levels.FLOOR
                if box_arrives and not box_leaves:
                    self._boxes_on_target += 1
                    reward += BOX_ON_TARGET_REWARD
                elif box_leaves and not box_arrives:
                    self._boxes_on_target -= 1
                    reward += BOX_OFF_TARGET_PENALTY
        if moved:
            board[player] = levels.TARGET if board[player] == levels.PLAYER_ON_TARGET else levels.FLOOR
            board[target] = levels.PLAYER_ON_TARGET if board[target] == levels.TARGET else levels.PLAYER
            self._player = target
            if self._plan and self._plan[0] == action:
                self._plan.pop(0)
            else:
                self._plan = None
        solved = self._boxes_on_target == self.num_boxes
        if solved:
            reward += SOLVED_REWARD
        self._steps += 1
        info = self._info()
        info["action_is_effective"] = moved
        info["action_is_valid"] = True
        return self.render_text(), reward, solved, self._steps >= self.max_steps, info

    def render_text(self) -> str:
        """What observations carry: the board as text, after its coordinates in ``grid_coord``."""
        grid = self._board.decode("latin-1").translate(self._translation)[:-1]
        if self.observation_format == "grid":
            return grid
        return coords.grid_coord_text(self._size_line, coords.labelled_lines(self.entity_coordinates()), grid)

    def render_rgb(self) -> np.ndarray:
        """The room as a picture (``render_mode="rgb_array"``), whatever the observation format."""
        cells = np.frombuffer(self._board, dtype=np.uint8).reshape(self.height, self._stride)
        return picture.draw(cells[:, : self.width])

    def entity_coordinates(self) -> tuple[tuple[str, list[tuple[int, int]]], ...]:
        """``(label, [(row, col), ...])`` for each of ``COORD_LABELS``, row-major (RAGEN-2's order)."""
        stride = self._stride
        targets, boxes, boxes_on_target = [], [], []
        for index, code in enumerate(self._board):
            if code in _ON_TARGET:
                targets.append(divmod(index, stride))
            if code == levels.BOX:
                boxes.append(divmod(index, stride))
            elif code == levels.BOX_ON_TARGET:
                boxes_on_target.append(divmod(index, stride))
        player = [divmod(self._player, stride)]
        on_target = self._board[self._player] == levels.PLAYER_ON_TARGET
        found = (targets, boxes, boxes_on_target, [] if on_target else player, player if on_target else [])
        return tuple(zip(COORD_LABELS, found))

    # -- solver hooks ---------------------------------------------------------------

    def solve(self) -> list[int] | None:
        """Shortest action sequence from the current state (``None`` past the budget)."""
        return solve(self.grid_layers(), max_states=self.solver_max_states)

    def optimal_plan(self, max_actions: int) -> list[int]:
        """Up to ``max_actions`` actions of a shortest solution from the current state."""
        if self.optimal_action() is None:
            return []
        return self._plan[:max_actions]

    def optimal_action(self, steps_left: int | None = None) -> int | None:
        """First action of a shortest solution from the current state.

        The plan is computed once and followed; it is recomputed only when the agent
        deviates from it.  ``steps_left`` changes nothing: a shortest plan is optimal
        under any budget (and none succeeds if it does not fit).
        """
        if self._boxes_on_target == self.num_boxes:
            return None
        if not self._plan:
            self._plan = self.solve()
        return self._plan[0] if self._plan else None

    def grid_layers(self) -> tuple[int, int, bytes, bytes]:
        """``(height, width, fixed, state)`` in the generator's flat encoding."""
        fixed = bytearray()
        state = bytearray()
        for row in range(self.height):
            for cell in self._board[row * self._stride : row * self._stride + self.width]:
                on_target = cell in (levels.TARGET, levels.BOX_ON_TARGET, levels.PLAYER_ON_TARGET)
                fixed.append(levels.WALL if cell == levels.WALL else (levels.TARGET if on_target else levels.FLOOR))
                if cell == levels.PLAYER_ON_TARGET:
                    cell = levels.PLAYER
                state.append(cell)
        return self.height, self.width, bytes(fixed), bytes(state)

    # -- internals ------------------------------------------------------------------

    def _load(self, level: levels.Level) -> None:
        width = level.width
        rows = [level.state[row * width : (row + 1) * width] for row in range(level.height)]
        self._board = bytearray(bytes([_NEWLINE]).join(rows) + bytes([_NEWLINE]))
        player = level.state.index(levels.PLAYER)
        self._player = player + player // width  # one separator per row above
        if level.fixed[player] == levels.TARGET:
            self._board[self._player] = levels.PLAYER_ON_TARGET
        self._boxes_on_target = 0  # the generator never leaves a box on a target
        self._steps = 0
        self._plan = None

    def _info(self) -> dict[str, Any]:
        return {
            "success": self._boxes_on_target == self.num_boxes,
            "boxes_on_target": self._boxes_on_target,
            "level_seed": self._level_seed,
        }
