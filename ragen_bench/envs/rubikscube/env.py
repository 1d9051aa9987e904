"""RAGEN-2's 2x2 Rubik's cube as a text environment, scramble and text net exactly as RAGEN-2."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

from ragen_bench.envs.base import PICTURE_METADATA, TextEnv, TextObservation, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, setting
from ragen_bench.envs.rubikscube import cube, picture, solver

MAX_STEPS_LIMIT = 1000
SYMBOL_MEANINGS = {chr(colour): name for colour, name in zip(cube.COLOURS, cube.COLOUR_NAMES)}
_LIVE_TAIL = "\nAvailable Actions:\n" + ", ".join(cube.ACTION_NAMES) + "\n\nWhat is your next move?"
_SOLVED_TAIL = "\n=== Game Over: Cube Solved! ==="
_TRUNCATED_TAIL = "\n=== Game Over: Max steps reached. ==="


def _net(tail: str) -> bytes:
    """The six faces and ``tail`` as a template: sticker ``i``'s cell holds the byte ``cube.SLOT + i``."""
    lines = []
    for face, (letter, name) in enumerate(zip(cube.FACES, cube.FACE_NAMES)):
        cell = [chr(cube.SLOT + 4 * face + k) for k in range(4)]
        lines.append(f"{name} ({letter}):".ljust(11) + f"[{cell[0]}, {cell[1]}]\n [{cell[2]}, {cell[3]}]\n")
    return "".join(lines + [tail]).encode("latin-1")


_LIVE_NET, _SOLVED_NET, _TRUNCATED_NET = _net(_LIVE_TAIL), _net(_SOLVED_TAIL), _net(_TRUNCATED_TAIL)


@dataclass(frozen=True)
class RubiksCubeConfig(EnvConfig):
    """RubiksCubeEnv's arguments (besides ``render_mode``)."""

    # Capped at the depth the exact solver covers (solver.MAX_DISTANCE).
    scramble_depth: int = setting(
        5, rule=IntIn(1, solver.MAX_DISTANCE), help="Random turns that scramble the solved cube (RAGEN-2's default: 5)."
    )
    max_steps: int = setting(20, rule=IntIn(1, MAX_STEPS_LIMIT), help="Turns before the episode is truncated.")


class RubiksCubeEnv(TextEnv):
    """Solve a scrambled 2x2 Rubik's cube (pocket cube) in RAGEN-2's notation.

    ## Description
    RAGEN-2's ``rubikscube`` env (mll-lab-nu/RAGEN 20daedc): every seed scrambles a
    solved cube with ``scramble_depth`` turns drawn uniformly from the twelve face turns;
    the goal is a cube whose every face shows one colour.  Scrambles, turns, rewards and
    the text net reproduce RAGEN-2 exactly: ``reset(seed=s)`` gives RAGEN-2's episode of
    seed ``s``.  The turns are RAGEN-2's as its code applies them, including its ``B``
    turn, which is not a physical one (see ``cube.py``); the solver is exact for them.

    ## Action Space
    ``Discrete(12)``: ``U, U', D, D', L, L', R, R', F, F', B, B'`` (``action_names``; id
    ``i`` is RAGEN-2's action ``i + 1``).  A letter is a clockwise quarter turn of that
    face seen from outside it, a prime the counter-clockwise one.  Anything but an int (or
    numpy integer) in 0..11 raises ``InvalidActionError``.

    ## Observation Space
    ``Text``: RAGEN-2's net: a header with the step count (``Step: k/max_steps``), the
    four stickers of each face (Up, Left, Front, Right, Back, Down) as two rows
    ``[W, O]``, then the list of actions, or at the end ``=== Game Over: Cube Solved! ===``
    or ``=== Game Over: Max steps reached. ===``.  Colours: ``W`` white, ``O`` orange,
    ``G`` green, ``R`` red, ``B`` blue, ``Y`` yellow.

    ## Starting State
    The solved cube (faces U L F R B D in W O G R B Y) after ``scramble_depth`` turns drawn
    with ``integers`` from a generator seeded with the seed (RAGEN-2's
    ``np.random.default_rng(seed)``).  An odd depth never starts solved; an even one can
    (``U D'`` turns the whole cube).

    ## Rewards
    1.0 for the step that solves the cube, 0.0 otherwise.

    ## Episode End
    Terminated when every face shows one colour; truncated after ``max_steps`` steps (20,
    RAGEN-2's).  Stepping a finished episode raises ``EpisodeFinishedError``.

    ## Information
    Every call: ``success`` (the step solved the cube; ``False`` at reset),
    ``level_seed``.  Step adds RAGEN-2's ``action_is_effective`` and ``action_is_valid``
    (both always true: every turn is legal and moves stickers).  Reset adds
    ``optimal_length`` (the fewest turns that end the episode solved: the scramble's
    distance to solved, 2 from a solved start).  The scramble's turns are
    ``env.unwrapped.scramble`` (action ids).

    ## Arguments
    The fields of :class:`RubiksCubeConfig` (``scramble_depth``, ``max_steps``),
    ``render_mode="ansi"``, ``"rgb_array"`` (the
    net as a picture, ``picture.draw``) or ``None``.  Wrong types or ranges raise at
    construction.

    ## Solver
    ``optimal_action()``/``optimal_plan()`` follow the lexicographically first optimal
    plan (``solver.py``: a distance table of every state within 5 turns of solved, built
    on first use in a fraction of a second, met by a breadth-first search from the state).

    ## Version History
    * v0: RAGEN-2 exact (mll-lab-nu/RAGEN 20daedc).
    """

    action_names = cube.ACTION_NAMES
    symbol_meanings = SYMBOL_MEANINGS
    metadata = PICTURE_METADATA

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`RubiksCubeConfig`."""
        super().__init__(render_mode)
        self._configure(RubiksCubeConfig, kwargs)
        self.instruction = (
            "A 2x2 Rubik's cube has been scrambled. Turn its faces until each of the six faces "
            "shows a single colour (any colour per face). U, D, L, R, F and B turn the Up, "
            "Down, Left, Right, Front or Back face a quarter turn clockwise as seen looking at "
            "that face; a prime (U') turns it counter-clockwise."
        )
        self._heads = tuple(
            f"=== Rubik's Cube 2x2 State ===\nStep: {step}/{self.max_steps}\n\n" for step in range(self.max_steps + 1)
        )
        nets = (_LIVE_NET, _SOLVED_NET, _TRUNCATED_NET)
        self.observation_space = TextObservation(
            min_length=len(self._heads[0]) + min(map(len, nets)),
            max_length=len(self._heads[-1]) + max(map(len, nets)),
            charset=text_charset(*self._heads, *(net.translate(cube.table(cube.SOLVED)).decode() for net in nets)),
        )
        self._set_action_space(spaces.Discrete(len(cube.ACTION_NAMES)))

        self._table = cube.table(cube.SOLVED)  # the state: colours inside a translation table (cube.py)
        self.scramble: tuple[int, ...] = ()  # the episode's scramble turns (action ids)
        self._net = _LIVE_NET
        self._steps = 0
        self._plan: tuple[int, ...] | None = None  # an optimal plan from here, once asked for

    # -- Gymnasium API -------------------------------------------------------------

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        # After a seeded reset ``np_random`` is RAGEN-2's generator (freshly seeded with the seed).
        rng = self.np_random if self._seeded_by_reset else seeding.np_random(seed)[0]
        self.scramble, self._table = cube.scramble(rng, self.scramble_depth)
        self._net = _LIVE_NET
        self._steps = 0
        self._plan = None
        info = {"success": False, "level_seed": seed, "optimal_length": solver.optimal_length(self.stickers)}
        return self.render_text(), info

    def _step_action(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._table = table = cube.TURN_TABLES[action].translate(self._table)
        self._steps += 1
        solved = table[cube.SLOT : cube.SLOT + cube.STICKERS] in cube.SOLVED_SET
        truncated = self._steps >= self.max_steps
        self._net = _SOLVED_NET if solved else _TRUNCATED_NET if truncated else _LIVE_NET
        plan = self._plan
        self._plan = plan[1:] if plan and plan[0] == action else None
        info = {"success": solved, "level_seed": self.level_seed, "action_is_effective": True, "action_is_valid": True}
        return self.render_text(), 1.0 if solved else 0.0, solved, truncated, info

    def render_text(self) -> str:
        """RAGEN-2's text net of the current state."""
        return self._heads[self._steps] + self._net.translate(self._table).decode("ascii")

    def render_rgb(self) -> np.ndarray:
        """The net as a picture (``render_mode="rgb_array"``): U above L F R B, D below."""
        return picture.draw(self.sticker_colours)

    # -- state and solver -----------------------------------------------------------

    @property
    def stickers(self) -> bytes:
        """The 24 sticker colours as letters (``cube.COLOURS``), faces U L F R B D, four each."""
        return cube.colours_of(self._table)

    @property
    def sticker_colours(self) -> np.ndarray:
        """The stickers as colour indices (0 white, 1 orange, 2 green, 3 red, 4 blue, 5 yellow), shape (6, 2, 2)."""
        return cube.colour_indices(self.stickers).reshape(6, 2, 2)

    def optimal_plan(self, max_actions: int) -> list[int]:
        """Up to ``max_actions`` turns of the optimal plan from the current state."""
        if self.optimal_action() is None:
            return []
        return list(self._plan[:max_actions])

    def optimal_action(self, steps_left: int | None = None) -> int | None:
        """The first turn of the lexicographically first optimal plan (``None`` once the episode ended).

        ``steps_left`` changes nothing but ``0`` (no turn left): a shortest plan is optimal
        under any budget, and none succeeds if it does not fit.
        """
        if self.level_seed is None or self.episode_finished or (steps_left is not None and steps_left < 1):
            return None
        if not self._plan:
            self._plan = solver.plan(self.stickers)
        return self._plan[0]
