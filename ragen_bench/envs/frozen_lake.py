"""FrozenLake as a text environment, reproducing RAGEN's random lakes and slips exactly."""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

from ragen_bench.envs.base import TextEnv, text_charset
from ragen_bench.solvers import frozen_lake as solver

# What the text grid shows for each cell, and for the player depending on where they stand.
CELL_SYMBOLS = {"S": "_", "F": "_", "H": "O", "G": "G"}
PLAYER_SYMBOLS = {"S": "P", "F": "P", "H": "X", "G": "√"}
SYMBOL_MEANINGS = {
    "P": "player",
    "_": "frozen ice (safe)",
    "O": "hole",
    "G": "goal",
    "X": "player fallen into a hole",
    "√": "player on the goal",
}


def generate_lake(size: int, frozen_prob: float, rng: np.random.Generator) -> tuple[str, ...]:
    """A random ``size`` x ``size`` lake with a start and a goal joined by a hole-free path.

    Draw for draw as RAGEN's generator: each attempt samples the whole board
    (frozen with ``frozen_prob``, else hole), then the start cell, then the goal cell;
    an attempt is kept when start != goal and the goal is reachable.  Start and goal
    may overwrite holes.
    """
    while True:
        board = rng.choice(["F", "H"], (size, size), p=[frozen_prob, 1 - frozen_prob])
        start = tuple(int(v) for v in rng.integers(size, size=2))
        goal = tuple(int(v) for v in rng.integers(size, size=2))
        if start == goal:
            continue
        board[start], board[goal] = "S", "G"
        lake = tuple("".join(row) for row in board)
        start_state = start[0] * size + start[1]
        if solver.shortest_path_length(lake, start_state) is not None:
            return lake


class FrozenLakeEnv(TextEnv):
    """Cross a frozen lake from the start to the goal without falling into a hole.

    ## Description
    RAGEN's FrozenLake: every seed gives a new random lake (each cell frozen with
    probability ``frozen_prob``, otherwise a hole) with the start and the goal at random
    cells and a hole-free path between them.  On slippery ice the player moves in the
    intended direction or in one of the two perpendicular directions, each with
    probability 1/3.  Lakes and slips reproduce RAGEN (commit 5eb79b8, Gymnasium's
    dynamics) draw for draw: ``reset(seed=s)`` gives RAGEN's episode for seed ``s``.

    ## Action Space
    ``Discrete(4)``: 0 = Left, 1 = Down, 2 = Right, 3 = Up (names in ``action_names``).
    Moving into the edge leaves the player in place (``action_is_effective = False``).

    ## Observation Space
    ``Text``: the grid, one line per row joined by ``"\\n"``.  ``P`` player, ``_`` frozen
    ice, ``O`` hole, ``G`` goal, ``X`` player in a hole, ``√`` player on the goal.  The
    start cell shows as ice once the player leaves it.

    ## Rewards
    1.0 for the step that reaches the goal, 0.0 otherwise.

    ## Episode End
    Terminated on reaching the goal or falling into a hole.  Truncated after
    ``max_steps`` steps (100; RAGEN's FrozenLake has no cap of its own).  Stepping a
    terminated episode leaves it unchanged (reward 0), as Gymnasium's FrozenLake does.

    ## Arguments
    ``size=4``, ``frozen_prob=0.8``, ``is_slippery=True``, ``max_steps=100``,
    ``render_mode="ansi"`` or ``None``.

    ## Info
    Every call: ``success`` (player on the goal), ``level_seed``.  Step adds
    ``action_is_effective`` (the player moved) and ``action_is_valid``.  Reset adds
    ``optimal_success_prob`` (value iteration: best achievable probability of reaching
    the goal within ``max_steps``) and ``optimal_length`` (fewest moves from start to
    goal avoiding holes: the optimal episode length on non-slippery ice, a lower bound
    on slippery ice).

    ## Version History
    * v0: RAGEN-exact lakes and slips (RAGEN commit 5eb79b8, Gymnasium 1.x FrozenLake).
    """

    action_names = ("Left", "Down", "Right", "Up")
    symbol_meanings = SYMBOL_MEANINGS

    def __init__(
        self,
        size: int = 4,
        frozen_prob: float = 0.8,
        is_slippery: bool = True,
        max_steps: int = 100,
        render_mode: str | None = "ansi",
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be 'ansi' or None, got {render_mode!r}")
        if size < 2:
            raise ValueError(f"size must be >= 2, got {size}")
        if not 0.0 < frozen_prob <= 1.0:
            raise ValueError(f"frozen_prob must be in (0, 1], got {frozen_prob}")
        if max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {max_steps}")
        self.size = int(size)
        self.frozen_prob = float(frozen_prob)
        self.is_slippery = bool(is_slippery)
        self.max_steps = int(max_steps)
        self.render_mode = render_mode
        self.instruction = "You are on a frozen lake. Reach the goal G without falling into a hole O. " + (
            "The ice is slippery: each move goes in the chosen direction only one time in "
            "three, otherwise to one side of it (90 degrees left or right)."
            if self.is_slippery
            else "The ice is not slippery: every move goes where you choose."
        )

        grid_chars = self.size * (self.size + 1) - 1
        self.observation_space = spaces.Text(
            min_length=grid_chars, max_length=grid_chars, charset=text_charset("".join(SYMBOL_MEANINGS), "\n")
        )
        self.action_space = spaces.Discrete(4)

        self._dynamics_rng = np.random.default_rng(0)  # replaced on every reset
        self.lake: tuple[str, ...] = ()
        self._empty_grid: tuple[str, ...] = ()  # the lake's rows as text, without the player
        self._solution: solver.LakeSolution | None = None
        self._state = 0
        self._steps = 0
        self._level_seed: int | None = None

    # -- Gymnasium API -------------------------------------------------------------

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Build the lake of ``seed`` (RAGEN's), or of a seed drawn from ``np_random``."""
        super().reset(seed=seed)
        if options:
            raise ValueError(f"FrozenLakeEnv.reset takes no options, got {sorted(options)}")
        if seed is None:
            seed = int(self.np_random.integers(2**32))
        self._level_seed = seed
        # RAGEN draws the lake from one generator seeded with ``seed`` and then resets
        # Gymnasium's FrozenLake with the same seed, whose fresh generator spends one draw
        # picking the (only) start cell and one per step deciding the slip.
        self.lake = generate_lake(self.size, self.frozen_prob, seeding.np_random(seed)[0])
        self._empty_grid = tuple("".join(CELL_SYMBOLS[letter] for letter in line) for line in self.lake)
        self._dynamics_rng = seeding.np_random(seed)[0]
        self._dynamics_rng.random()
        # Value iteration runs on every reset: its table is the one we step with, and its
        # success probability is reset metadata.
        self._solution = solver.solve(self.lake, self.is_slippery, self.max_steps)
        self._state = "".join(self.lake).index("S")
        self._steps = 0

        info = self._info()
        info["optimal_success_prob"] = self._solution.success_probability(self._state)
        info["optimal_length"] = solver.shortest_path_length(self.lake, self._state)
        return self.render_text(), info

    def step(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self.lake:
            raise RuntimeError("call reset() before step()")
        action = int(action)
        if not 0 <= action < 4:
            raise ValueError(f"action must be in 0..3, got {action}")
        was_terminal = solver.cell(self.lake, self._state) in solver.TERMINAL_LETTERS
        previous = self._state
        self._state = solver.sample_outcome(self._solution.table[previous][action], self._dynamics_rng.random())
        self._steps += 1
        letter = solver.cell(self.lake, self._state)
        reward = 1.0 if letter == "G" and not was_terminal else 0.0
        info = self._info()
        info["action_is_effective"] = self._state != previous
        info["action_is_valid"] = True
        terminated = letter in solver.TERMINAL_LETTERS
        return self.render_text(), reward, terminated, self._steps >= self.max_steps, info

    def render(self) -> str | None:
        if self.render_mode == "ansi":
            return self.render_text()
        return None

    def render_text(self) -> str:
        """The grid as text (what observations carry)."""
        row, col = divmod(self._state, self.size)
        lines = list(self._empty_grid)
        lines[row] = lines[row][:col] + PLAYER_SYMBOLS[self.lake[row][col]] + lines[row][col + 1 :]
        return "\n".join(lines)

    # -- solver hooks ---------------------------------------------------------------

    def optimal_action(self, steps_left: int | None = None) -> int | None:
        """An action maximising the chance of reaching the goal in the steps left.

        The horizon is the env's own remaining steps, or ``steps_left`` if that is
        smaller (an agent's action budget): with few steps left, the safest route is
        not always the best one.
        """
        if not self.lake or solver.cell(self.lake, self._state) in solver.TERMINAL_LETTERS:
            return None
        env_steps_left = self.max_steps - self._steps
        steps_left = env_steps_left if steps_left is None else min(steps_left, env_steps_left)
        if steps_left < 1:
            return None
        return self._solution.best_action(self._state, steps_left)

    @property
    def player_state(self) -> int:
        """The player's cell as ``row * size + col``."""
        return self._state

    # -- internals ------------------------------------------------------------------

    def _info(self) -> dict[str, Any]:
        return {"success": solver.cell(self.lake, self._state) == "G", "level_seed": self._level_seed}
