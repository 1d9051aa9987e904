"""2048 as a text environment, reproducing RAGEN-2's ``game_2048`` exactly."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np
from gymnasium import spaces

from ragen_bench.envs.base import PICTURE_METADATA, TextEnv, TextObservation, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, IsBool, RealIn, setting
from ragen_bench.envs.game_2048 import board as rules
from ragen_bench.envs.game_2048 import picture, search
from ragen_bench.envs.game_2048.draws import PCG64Draws

ACTION_NAMES = ("Up", "Right", "Down", "Left")
# RAGEN-2's success tile, its penalty for a move that moves nothing, and its step budget
# (``max_actions_per_traj`` of the ``game_2048`` config).
WIN_TILE = 2048
INVALID_MOVE_REWARD = -0.1
RAGEN2_MAX_ACTIONS = 700
# A tile of 2**16 needs a tile sum of 65,536, more than 16,000 moves can bring (at most 4
# per spawn): below this cap every tile fits the search's 4-bit exponents.
MAX_STEPS_LIMIT = 16_000
OBSERVATION_CHARS = 4096  # RAGEN-2's Text(max_length=4096)


@lru_cache(maxsize=4096)
def log_reward(raw_reward: float) -> float:
    """RAGEN-2's shaped reward: ``0.1 * log2(raw + 1)`` for a positive merge score, else 0."""
    return float(np.log2(raw_reward + 1.0)) * 0.1 if raw_reward > 0 else 0.0


@lru_cache(maxsize=1 << 16)
def _row_text(index: int, line: rules.Line) -> str:
    return f"Row {index}: [{', '.join(map(str, line))}]"


def _after_rows(valid: tuple[int, ...]) -> str:
    """What follows the rows, up to the score: the valid actions and the goal."""
    actions = ", ".join(f"{action}({ACTION_NAMES[action]})" for action in valid) or "None"
    return f"\n\nValid Actions: {actions}.\nGoal: Merge same numbers to reach 2048.\nCurrent Score: "


_AFTER_ROWS = {valid: _after_rows(valid) for valid in rules.ACTION_SETS}


def observation_text(board: rules.Board, valid: tuple[int, ...], score: int) -> str:
    """The observation of a board, as RAGEN-2 prints it (rows, valid actions, score)."""
    rows = "\n".join([_row_text(index, line) for index, line in enumerate(board, start=1)])
    return f"Current 2048 Grid:\n{rows}{_AFTER_ROWS[valid]}{score}\nWhat is your next move?"


# The action mask of every set of valid actions (copied into each info).
_MASKS = {valid: np.isin(rules.ACTIONS, valid) for valid in rules.ACTION_SETS}
_CHARSET = text_charset(
    observation_text(((0,),), (0, 1, 2, 3), 0), observation_text(((0,),), (), 0), "0123456789"
)


@dataclass(frozen=True)
class Game2048Config(EnvConfig):
    """Game2048Env's arguments (besides ``render_mode``)."""

    size: int = setting(4, rule=IntIn(2, 8), help="The grid is size x size cells.")
    two_prob: float = setting(0.9, rule=RealIn(0.0, 1.0), help="The chance a new tile is a 2 (else a 4).")
    log_reward: bool = setting(
        True, rule=IsBool(), help="Pay 0.1*log2(merge+1) per move (RAGEN-2's use_log_reward); False: the raw merge score."
    )
    max_steps: int = setting(
        RAGEN2_MAX_ACTIONS, rule=IntIn(1, MAX_STEPS_LIMIT), help="Moves before the episode is truncated."
    )


class Game2048Env(TextEnv):
    """Slide and merge numbered tiles on a square grid; RAGEN-2's 2048.

    ## Description
    RAGEN-2's ``game_2048`` (mll-lab-nu/RAGEN commit 20daedc): a 4x4 grid starts with two
    tiles; each action slides every tile toward one side, equal tiles that meet merge
    into their sum (a merged tile does not merge again in the same move), and after a
    move that changes the grid one tile spawns on a uniformly chosen empty cell: a 2
    with probability ``two_prob`` (0.9), otherwise a 4.  Spawns reproduce RAGEN-2 draw
    for draw: ``reset(seed=s)`` gives RAGEN-2's episode of seed ``s``.

    ## Action Space
    ``Discrete(4)``: 0 = Up, 1 = Right, 2 = Down, 3 = Left (RAGEN-2's ids; names in
    ``action_names``).  A move that changes nothing is *invalid* in RAGEN-2's sense: the
    grid stays, no tile spawns, ``action_is_valid`` and ``action_is_effective`` are
    False.  Anything but an int (or numpy integer) in 0..3 raises ``InvalidActionError``.

    ## Observation Space
    ``Text`` (up to 4096 characters): ``Current 2048 Grid:``, one ``Row i: [a, b, c, d]``
    line per row (0 = empty), a blank line, the valid actions (``0(Up), 3(Left)`` or
    ``None``), the goal line, ``Current Score: N`` and ``What is your next move?``.

    ## Starting State
    An empty grid with two spawned tiles.  Seeds are ``0..2**32 - 1``, the ones RAGEN-2
    accepts.

    ## Rewards
    The merge score of the step (the sum of the tiles created by merging).  With
    ``log_reward=True`` (RAGEN-2's default, ``use_log_reward``) a positive merge score
    ``m`` is paid as ``0.1 * log2(m + 1)`` and everything else as 0.0; with
    ``log_reward=False`` the raw merge score is paid and an invalid move costs -0.1.
    ``info["raw_reward"]`` always holds the raw value.

    ## Episode End
    Terminated when no move changes the grid (game over).  Truncated after
    ``max_steps`` steps (700: RAGEN-2's ``max_actions_per_traj`` for 2048; invalid moves
    count).  Stepping a finished episode raises ``EpisodeFinishedError``.

    ## Information
    Every call: ``grid`` (the grid as a new ``int64`` array), ``score`` (the running
    merge score), ``action_mask`` (bool array: which actions change the grid),
    ``raw_reward``, ``success``, ``max_tile`` (the graded score: the largest tile) and
    ``level_seed``; reset adds ``optimal_length`` = None (no optimal length is known).
    Step adds ``action_is_valid`` and ``action_is_effective`` (both: the grid changed).
    ``success`` is RAGEN-2's: True only on the step that ends the game with a tile of at
    least 2048 (reaching 2048 does not end the game, and a truncated episode never
    succeeds).  RAGEN-2 reports ``max_tile`` on the final step only; here every info has it.

    ## Arguments
    The fields of :class:`Game2048Config` (``size``, ``two_prob``, ``log_reward``,
    ``max_steps``), ``render_mode="ansi"``, ``"rgb_array"`` (a picture of
    the grid, ``picture.draw``) or ``None``.  Wrong types or ranges raise at construction.

    ## Search
    ``optimal_action()`` is an expectimax search (:mod:`.search`) on 4x4 grids, not a
    provably optimal policy (none is known); it returns ``None`` on other sizes and once
    no move is left.

    ## Version History
    * v0: RAGEN-2-exact rules, spawns, rewards and end (mll-lab-nu/RAGEN commit 20daedc).
    """

    action_names = ACTION_NAMES
    seed_limit = 2**32  # RAGEN-2's reset also seeds numpy's global generator, which refuses larger seeds
    symbol_meanings = {"0": "empty cell"}
    metadata = PICTURE_METADATA

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`Game2048Config`."""
        super().__init__(render_mode)
        self._configure(Game2048Config, kwargs)
        self.instruction = (
            f"You play 2048 on a {self.size}x{self.size} grid of numbered tiles (0 is an empty cell). "
            "Each move (Up, Right, Down or Left) slides every tile as far as it goes that way; two "
            "equal tiles that collide become one tile of their sum, which scores its value. After "
            "every move that changes the grid a new 2 (sometimes a 4) appears on an empty cell. A "
            "move that changes nothing is wasted. The game ends when no move is left; aim for a 2048 tile."
        )
        self.observation_space = TextObservation(max_length=OBSERVATION_CHARS, charset=_CHARSET)
        self._set_action_space(spaces.Discrete(4))

        self._spawn_draws = PCG64Draws()  # restarted on every reset
        self.board: rules.Board = rules.empty_board(self.size)  # rows of tile values, 0 = empty
        self.score = 0
        self._valid: tuple[int, ...] = ()
        self._observation = ""
        self._steps = 0

    # -- Gymnasium API -------------------------------------------------------------

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        # RAGEN-2 spawns from ``numpy.random.default_rng(seed)``: the same PCG64 stream as
        # Gymnasium's ``seeding.np_random(seed)``.
        draws = self._spawn_draws
        draws.restart(self._fresh_generator_state(seed))
        # RAGEN-2's two spawns on the empty grid: a cell of all, then one of the others
        # (the second pick, in row-major order, skips the first cell).
        cells = [0] * self.size**2
        first = draws.integers(len(cells))
        cells[first] = self._spawn_value()
        second = draws.integers(len(cells) - 1)
        cells[second + (second >= first)] = self._spawn_value()
        board = tuple(tuple(cells[start : start + self.size]) for start in range(0, len(cells), self.size))
        self.score = 0
        self._steps = 0
        self._set_board(board)
        info = self._info(0.0, success=False)
        info["optimal_length"] = None
        return self._observation, info

    def _step_action(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._steps += 1
        moved = action in self._valid
        terminated = False
        if moved:
            after, gained = rules.move(self.board, action)
            self.score += gained
            raw_reward = float(gained)
            self._set_board(self._spawn(after))
            terminated = not self._valid
        else:
            raw_reward = INVALID_MOVE_REWARD
        success = terminated and rules.max_tile(self.board) >= WIN_TILE
        info = self._info(raw_reward, success)
        info["action_is_effective"] = info["action_is_valid"] = moved
        reward = log_reward(raw_reward) if self.log_reward else raw_reward
        truncated = not terminated and self._steps >= self.max_steps
        return self._observation, reward, terminated, truncated, info

    def render_text(self) -> str:
        """The current observation text."""
        return self._observation

    def render_rgb(self) -> np.ndarray:
        """The grid as a picture (``render_mode="rgb_array"``): tiles coloured by value and numbered."""
        return picture.draw(self.board)

    def optimal_action(self, steps_left: int | None = None) -> int | None:
        """The expectimax search's move (``None`` when no move is left or the grid is not 4x4).

        The search plays for the long game whatever ``steps_left`` says.
        """
        if not self._valid or self.size != search.SIZE:
            return None
        return search.best_action(self.board, self._valid)

    @property
    def grid(self) -> np.ndarray:
        """The board as a new ``(size, size)`` ``int64`` array (what ``info["grid"]`` holds)."""
        return np.array(sum(self.board, ()), dtype=np.int64).reshape(self.size, self.size)

    @property
    def valid_actions(self) -> tuple[int, ...]:
        """The actions that change the grid, in id order."""
        return self._valid

    # -- internals ------------------------------------------------------------------

    def _spawn(self, board: rules.Board) -> rules.Board:
        """RAGEN-2's spawn: a uniform empty cell (row-major order), then 2 or 4."""
        empty = rules.empty_count(board)
        if not empty:
            return board
        row, col = rules.nth_empty(board, self._spawn_draws.integers(empty))
        return rules.place(board, row, col, self._spawn_value())

    def _spawn_value(self) -> int:
        return 2 if self._spawn_draws.random() < self.two_prob else 4

    def _set_board(self, board: rules.Board) -> None:
        """Make ``board`` current: its valid actions and its text."""
        self.board = board
        self._valid = rules.valid_actions(board)
        self._observation = observation_text(board, self._valid, self.score)

    def _info(self, raw_reward: float, success: bool) -> dict[str, Any]:
        return {
            "grid": self.grid,
            "score": self.score,
            "action_mask": _MASKS[self._valid].copy(),
            "raw_reward": raw_reward,
            "success": success,
            "max_tile": rules.max_tile(self.board),
            "level_seed": self.level_seed,
        }
