"""FrozenLake as a text environment, reproducing RAGEN's random lakes and slips exactly."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

from ragen_bench.envs import coords
from ragen_bench.envs.base import PICTURE_METADATA, ResetNeededError, TextEnv, TextObservation, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, IsBool, OneOf, RealIn, setting
from ragen_bench.envs.frozen_lake import picture, solver
from ragen_bench.envs.frozen_lake.levels import TERMINAL_LETTERS, cell, generate_level

# What the text grid shows for each cell, and for the player depending on where they stand.
CELL_SYMBOLS = {"S": "_", "F": "_", "H": "O", "G": "G"}
_CELL_TRANSLATION = str.maketrans(CELL_SYMBOLS)
PLAYER_SYMBOLS = {"S": "P", "F": "P", "H": "X", "G": "√"}
SYMBOL_MEANINGS = {
    "P": "player",
    "_": "frozen ice (safe)",
    "O": "hole",
    "G": "goal",
    "X": "player fallen into a hole",
    "√": "player on the goal",
}
# RAGEN-2's coordinate labels in its order; the player's label depends on the cell under it.
COORD_LABELS = ("Start", "Goal", "Player", "Player on goal", "Player in hole", "Holes")
_PLAYER_LABELS = {"S": "Player", "F": "Player", "G": "Player on goal", "H": "Player in hole"}
_FIXED_LABELS = {"S": "Start", "G": "Goal", "H": "Holes"}


@dataclass(frozen=True)
class FrozenLakeConfig(EnvConfig):
    """FrozenLakeEnv's arguments (besides ``render_mode``)."""

    size: int = setting(4, rule=IntIn(2, 32), help="The lake is size x size cells.")
    frozen_prob: float = setting(
        0.8, rule=RealIn(0.0, 1.0, low_open=True), help="The chance a generated cell is ice rather than a hole."
    )
    is_slippery: bool = setting(True, rule=IsBool(), help="Whether a move may slip to one side.")
    success_rate: float = setting(
        solver.SLIP_SUCCESS_RATE,
        rule=RealIn(0.0, 1.0),
        help="On slippery ice, the chance a move goes as chosen (RAGEN: 1/3; RAGEN-2: 0.8).",
    )
    observation_format: str = setting(
        "grid", rule=OneOf(coords.OBSERVATION_FORMATS), help="'grid', or 'grid_coord' (the grid plus coordinates)."
    )
    # Value iteration runs over the whole horizon, hence the cap.
    max_steps: int = setting(100, rule=IntIn(1, 10_000), help="Steps before the episode is truncated.")
    solve_on_reset: bool = setting(
        False,
        rule=IsBool(),
        help="Run value iteration on every reset and put optimal_success_prob in its info.",
    )


class FrozenLakeEnv(TextEnv):
    """Cross a frozen lake from the start to the goal without falling into a hole.

    ## Description
    RAGEN's FrozenLake: every seed gives a new random lake (each cell frozen with
    probability ``frozen_prob``, otherwise a hole) with the start and the goal at random
    cells and a hole-free path between them.  On slippery ice the player moves in the
    intended direction with probability ``success_rate`` (1/3 in RAGEN v1, 0.8 in
    RAGEN-2), otherwise in one of the two perpendicular directions, each with half the
    rest.  Lakes and slips reproduce RAGEN (v1 commit 5eb79b8 and RAGEN-2 commit 20daedc,
    Gymnasium's dynamics) draw for draw: ``reset(seed=s)`` gives RAGEN's episode for
    seed ``s``.

    ## Action Space
    ``Discrete(4)``: 0 = Left, 1 = Down, 2 = Right, 3 = Up (names in ``action_names``).
    Moving into the edge leaves the player in place (``action_is_effective = False``).
    Anything but an int (or numpy integer) in 0..3 raises ``InvalidActionError``.

    ## Observation Space
    ``Text``: the grid, one line per row joined by ``"\\n"``.  ``P`` player, ``_`` frozen
    ice, ``O`` hole, ``G`` goal, ``X`` player in a hole, ``√`` player on the goal.  The
    start cell shows as ice once the player leaves it.  With
    ``observation_format="grid_coord"`` (RAGEN-2's ``CoordFrozenLake``) the grid is
    preceded by the zero-indexed ``(row, col)`` of the start, the goal, the player and
    every hole, in RAGEN-2's layout (see :mod:`ragen_bench.envs.coords`).

    ## Rewards
    1.0 for the step that reaches the goal, 0.0 otherwise.

    ## Episode End
    Terminated on reaching the goal or falling into a hole.  Truncated after
    ``max_steps`` steps (100; RAGEN's FrozenLake has no cap of its own).  Stepping a
    finished episode raises ``EpisodeFinishedError`` (``reset()`` starts the next one).

    ## Arguments
    The fields of :class:`FrozenLakeConfig` (each documented there with its default and
    range) and ``render_mode="ansi"``, ``"rgb_array"`` (a picture of the lake,
    ``picture.draw``) or ``None``.  Wrong types or ranges raise at construction.
    A lake is redrawn until its goal is reachable, at most ``MAX_LAKE_DRAWS`` times
    (then ``LakeGenerationError``; no valid setting gets near it in practice).

    ## Info
    Every call: ``success`` (player on the goal), ``level_seed``.  Step adds
    ``action_is_effective`` (the player moved) and ``action_is_valid``.  Reset adds
    ``optimal_length`` (fewest moves from start to goal avoiding holes: the optimal
    episode length on non-slippery ice, a lower bound on slippery ice; generation finds
    it anyway) and, with ``solve_on_reset=True``, ``optimal_success_prob``.

    ## Solver
    Value iteration runs only when asked: by ``optimal_action()`` or by
    ``optimal_success_prob`` (the best achievable probability of reaching the goal from
    the start within ``max_steps``).  It runs once per lake (the solution is kept for
    the episode and cached across resets and envs, see ``solver.CACHE_BYTES``).

    ## Version History
    * v0: RAGEN-exact lakes and slips (RAGEN commit 5eb79b8, Gymnasium 1.x FrozenLake).
      Later hardening (stepping a finished episode raises instead of being a no-op;
      ``1.5``/``"1"`` actions and ``size=2.5``-style arguments raise instead of being
      coerced) changed no seed's episode, so the id stays v0.  So did moving value
      iteration off the reset (``optimal_success_prob`` left the reset info unless
      ``solve_on_reset=True``; lakes and slips are drawn as before), and adding
      ``success_rate`` and ``observation_format`` (their defaults are the old behaviour).
    """

    action_names = ("Left", "Down", "Right", "Up")
    symbol_meanings = SYMBOL_MEANINGS
    metadata = PICTURE_METADATA

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`FrozenLakeConfig`."""
        super().__init__(render_mode)
        self._configure(FrozenLakeConfig, kwargs)
        self.instruction = "You are on a frozen lake. Reach the goal G without falling into a hole O. " + (
            f"The ice is slippery: each move goes in the chosen direction {_chance_words(self.success_rate)}, "
            "otherwise to one side of it (90 degrees left or right)."
            if self.is_slippery and self.success_rate < 1.0
            else "The ice is not slippery: every move goes where you choose."
        )

        grid_chars = self.size * (self.size + 1) - 1
        charset = text_charset("".join(SYMBOL_MEANINGS), "\n")
        longest = grid_chars
        if self.observation_format == "grid_coord":
            self.instruction += " " + coords.INSTRUCTION
            size = (self.size, self.size)
            self._size_line = coords.board_size_line(*size)
            self._cell_points = [coords.format_points([divmod(state, self.size)]) for state in range(self.size**2)]
            # Each cell at most once as start, goal or hole, plus the player's.
            longest = coords.max_text_length(*size, COORD_LABELS, self.size**2 + 1, grid_chars)
            charset |= text_charset(*coords.charset_texts(*size, COORD_LABELS))
        self.observation_space = TextObservation(min_length=grid_chars, max_length=longest, charset=charset)
        self._set_action_space(spaces.Discrete(4))

        self._dynamics_rng = np.random.default_rng(0)  # re-seeded on every reset
        self.lake: tuple[str, ...] = ()
        self._empty_grid: tuple[str, ...] = ()  # the lake's rows as text, without the player
        # grid_coord: the coordinate lines listed before the player's and after it.
        self._lines_before: list[str] = []
        self._lines_after: list[str] = []
        self._solved: solver.LakeSolution | None = None  # this lake's, once asked for
        self._start = 0
        self._state = 0
        self._texts: dict[int, str] = {}  # this lake's observation per player cell, once rendered
        self._steps = 0

    # -- Gymnasium API -------------------------------------------------------------

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        """Build RAGEN's lake for ``seed``."""
        # RAGEN draws the lake from one generator seeded with ``seed`` and then resets
        # Gymnasium's FrozenLake with the same seed, whose fresh generator spends one draw
        # picking the (only) start cell and one per step deciding the slip.  Both start
        # from the state of a generator freshly seeded with ``seed``.
        fresh = self._fresh_generator_state(seed)
        rng = self._dynamics_rng
        rng.bit_generator.state = fresh
        level = generate_level(self.size, self.frozen_prob, rng)
        rng.bit_generator.state = fresh
        rng.random()
        if self.lake != level.desc:  # a new lake (not a repeated seed's): new texts
            self.lake = level.desc
            self._empty_grid = tuple(line.translate(_CELL_TRANSLATION) for line in self.lake)
            self._texts = {}
            if self.observation_format == "grid_coord":
                points = _fixed_points(self.lake)
                self._lines_before = coords.labelled_lines((label, points[label]) for label in ("Start", "Goal"))
                self._lines_after = coords.labelled_lines([("Holes", points["Holes"])])
        self._solved = None
        self._state = self._start = level.start
        self._steps = 0

        info = self._info()
        if self.solve_on_reset:
            info["optimal_success_prob"] = self.optimal_success_prob
        info["optimal_length"] = level.optimal_length
        return self.render_text(), info

    def _step_action(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        previous = self._state
        possible = solver.outcomes(self.lake, previous, action, self.is_slippery, self.success_rate)
        self._state = solver.sample_outcome(possible, self._dynamics_rng.random())
        self._steps += 1
        letter = cell(self.lake, self._state)
        info = self._info()
        info["action_is_effective"] = self._state != previous
        info["action_is_valid"] = True
        reward = 1.0 if letter == "G" else 0.0  # only a live episode steps, so this is the arrival
        return self.render_text(), reward, letter in TERMINAL_LETTERS, self._steps >= self.max_steps, info

    def render_text(self) -> str:
        """What observations carry: the grid as text, after its coordinates in ``grid_coord``."""
        # A lake's observation depends only on the player's cell: each is rendered once.
        text = self._texts.get(self._state)
        if text is None:
            text = self._texts[self._state] = self._render_cell(self._state)
        return text

    def _render_cell(self, state: int) -> str:
        row, col = divmod(state, self.size)
        lines = list(self._empty_grid)
        letter = self.lake[row][col]
        lines[row] = lines[row][:col] + PLAYER_SYMBOLS[letter] + lines[row][col + 1 :]
        grid = "\n".join(lines)
        if self.observation_format == "grid":
            return grid
        player = f"{_PLAYER_LABELS[letter]}: {self._cell_points[state]}"
        return coords.grid_coord_text(self._size_line, [*self._lines_before, player, *self._lines_after], grid)

    def render_rgb(self) -> np.ndarray:
        """The lake as a picture (``render_mode="rgb_array"``), whatever the observation format."""
        return picture.draw(self.lake, self._state)

    # -- solver hooks ---------------------------------------------------------------

    def optimal_action(self, steps_left: int | None = None) -> int | None:
        """An action maximising the chance of reaching the goal in the steps left.

        The horizon is the env's own remaining steps, or ``steps_left`` if that is
        smaller (an agent's action budget): with few steps left, the safest route is
        not always the best one.
        """
        if not self.lake or cell(self.lake, self._state) in TERMINAL_LETTERS:
            return None
        env_steps_left = self.max_steps - self._steps
        steps_left = env_steps_left if steps_left is None else min(steps_left, env_steps_left)
        if steps_left < 1:
            return None
        return self._solution.best_action(self._state, steps_left)

    @property
    def optimal_success_prob(self) -> float:
        """The best achievable probability of reaching the goal from the start within ``max_steps``.

        What ``info["optimal_success_prob"]`` holds with ``solve_on_reset=True``; runs value
        iteration on first use for the lake (1.0 without slipping).
        """
        return self._solution.success_probability(self._start)

    @property
    def _solution(self) -> solver.LakeSolution:
        """This lake's value iteration, solved on first use (cached per lake)."""
        if self._solved is None:
            if not self.lake:
                raise ResetNeededError(f"{type(self).__name__}: call reset() before asking for the optimal policy")
            self._solved = solver.solve(self.lake, self.is_slippery, self.max_steps, self.success_rate)
        return self._solved

    @property
    def player_state(self) -> int:
        """The player's cell as ``row * size + col``."""
        return self._state

    # -- internals ------------------------------------------------------------------

    def _info(self) -> dict[str, Any]:
        return {"success": cell(self.lake, self._state) == "G", "level_seed": self.level_seed}


def _chance_words(success_rate: float) -> str:
    """How often a slippery move goes as chosen, in words."""
    if success_rate == solver.SLIP_SUCCESS_RATE:
        return "only one time in three"
    return f"with probability {success_rate:g}"


def _fixed_points(lake: tuple[str, ...]) -> dict[str, list[tuple[int, int]]]:
    """Where the start, the goal and the holes are (the labels RAGEN-2 gives them), row-major."""
    found: dict[str, list[tuple[int, int]]] = {label: [] for label in _FIXED_LABELS.values()}
    for row, line in enumerate(lake):
        for col, letter in enumerate(line):
            label = _FIXED_LABELS.get(letter)
            if label:
                found[label].append((row, col))
    return found
