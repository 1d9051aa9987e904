"""The contract every ragen-bench text environment keeps, written once.

:class:`TextEnv` implements Gymnasium's ``reset``/``step`` as template methods.  A
family states only what is its own:

``_reset_level(seed) -> (observation, info)``
    Build the episode of ``seed`` (a validated Python ``int``).
``_step_action(action) -> (observation, reward, terminated, truncated, info)``
    Apply one action that is already known to lie in ``action_space``.
``render_text() -> str``
    The current observation text (what ``render()`` returns in ``"ansi"`` mode).
``render_rgb() -> np.ndarray`` (grid families, whose ``metadata`` is ``PICTURE_METADATA``)
    The current state as a picture (what ``render()`` returns in ``"rgb_array"`` mode).

Everything else is shared:

* **Seeds** (:class:`SeedContract`, which the multi-agent games keep too).
  ``reset(seed=s)`` accepts a non-negative Python or numpy integer below the family's
  ``seed_limit`` (``bool``, floats and strings are refused).  Without a seed, one is
  drawn from ``self.np_random`` (itself seeded by the first seeded reset): this is the
  reproducibility promise -- ``reset(seed=s)`` followed by any number of unseeded
  resets gives the same episodes on every machine.  The seed that built the episode is
  ``info["level_seed"]`` and ``self.level_seed``.
* **Options.**  ``reset(options=...)`` takes a mapping whose keys are all in the
  family's ``reset_options`` (none so far); any other key is refused by name.
* **Actions.**  Discrete families take exactly a Python ``int`` or numpy integer in
  range (``bool`` is refused: ``step(True)`` is a bug, not "action 1"); free-text
  families take any ``str`` up to the space's length bound.  Anything else raises
  :class:`InvalidActionError` naming the env, the action and the valid range.
* **Episode boundaries.**  ``step`` before the first ``reset`` raises
  :class:`ResetNeededError`; ``step`` after the episode terminated or was truncated
  raises :class:`EpisodeFinishedError` (Gymnasium's convention: a finished episode
  has no next state).
* **Constructor arguments.**  Each family declares its arguments once, as an
  :class:`~ragen_bench.envs.config.EnvConfig` dataclass (:mod:`ragen_bench.envs.config`):
  every field has its default, its rule and its help text.  The env's ``__init__`` calls
  ``self._configure(FamilyConfig, kwargs)``, which refuses unknown and missing arguments,
  wrong types (``TypeError``) and out-of-range values (``ValueError``) up front, each in
  one message naming the env and the argument, so no setting is silently coerced
  (``size=2.5``) or discovered deep inside a reset.
* **Vector envs.**  Observations are :class:`TextObservation` spaces.
  ``gymnasium.make_vec(id, vectorization_mode="sync")`` works as is; the async mode
  needs ``vector_kwargs={"shared_memory": False}`` and says so when it is missing
  (Gymnasium 1.4 would otherwise return the first observations forever).

The chat layer (``ragen_bench.chat``) knows environments only through Gymnasium's
``reset``/``step`` plus these attributes, so a new family needs no change elsewhere:

``action_names``
    Tuple of action names; index ``i`` is the id of ``Discrete`` action ``i``.
    ``None`` for free-text action spaces (e.g. Countdown's equations).
``symbol_meanings``
    Mapping from each grid symbol to its meaning (``{"#": "wall", ...}``); empty
    for envs whose observation is prose.
``instruction``
    One paragraph in the project's own words: the goal and the rules.
``optimal_action(steps_left=None)``
    The next action of an optimal policy from the current state (``int`` for
    discrete envs, ``str`` for text envs), or ``None`` when no optimal action is
    known.  ``steps_left`` caps the remaining horizon (the chat layer's action budget)
    where the optimal choice depends on it.  Powers the ``optimal`` agent.
``has_reference_agent`` (class attribute, ``True`` unless a family sets it)
    Whether ``optimal_action`` knows a move at all.  A family with no reference agent
    (TextArena's games, Crafter, NetHack: scripted baselines instead) sets it ``False``
    and returns ``None`` in every state; the contract tests hold every id to its claim.
``optimal_plan(max_actions)`` (optional, deterministic envs only)
    The next ``max_actions`` optimal actions: the ``optimal`` agent fills a turn without copying the env.
``baseline_action(steps_left=None)``
    The next action of the family's scripted baseline: by default the optimal action (the reference agent);
    Crafter and NetHack override it with a policy built at reset from the level seed (:mod:`.baseline`).

Observations are ``str``; ``render_mode="ansi"`` returns the same text, and
``render_mode="rgb_array"`` (grid families) a picture of the same state.
"""

from __future__ import annotations

import enum
import string
from collections.abc import Mapping
from typing import Any, ClassVar, NoReturn

import gymnasium
import numpy as np
from gymnasium import spaces
from gymnasium.error import InvalidAction, ResetNeeded
from gymnasium.utils import seeding
from gymnasium.vector.utils import shared_memory

# The config machinery lives in envs/config.py.  Its names are imported here as well because
# docs/architecture.md ("Where a new env family goes") taught plugins to import them from this
# module; the project's own families import them from envs.config.
from ragen_bench.envs.config import (  # noqa: F401
    ConfigT, EnvConfig, IntIn, IsBool, OneOf, OrNone, PathOrNone, RealIn, Rule, Text, arg_error, setting,
)


class MissingExtra(ImportError):
    """An id whose optional library (its pip extra) is not installed; the message names the extra.

    The CLI prints it as one error line: it is a request the install cannot serve, not a bug.
    """


class InvalidActionError(InvalidAction, ValueError):
    """An action outside the env's action space (wrong type or out of range)."""


class ResetNeededError(ResetNeeded, RuntimeError):
    """``step``/``render`` called before the first ``reset``."""


class EpisodeFinishedError(RuntimeError):
    """``step`` called after the episode terminated or was truncated; call ``reset()``."""


class TextObservation(spaces.Text):
    """The ``Text`` space of an env's observations.

    It differs from ``spaces.Text`` in one way: Gymnasium's async vector env refuses to
    put it in shared memory (see ``_no_shared_text``), instead of silently returning
    the first observations forever.
    """


class AnyText(TextObservation):
    """A ``Text`` space that contains every ``str`` within its length bounds.

    ``spaces.Text`` also requires every character to come from its charset, which
    would refuse correct free-text answers (``Paris``, ``\\frac{1}{2}``, ``6 − 3``).  The
    charset here only shapes ``sample()`` (so Gymnasium's checker can draw actions).
    """

    def contains(self, x: Any) -> bool:
        return isinstance(x, str) and self.min_length <= len(x) <= self.max_length

    def __repr__(self) -> str:
        return f"AnyText({self.min_length}, {self.max_length})"


# Flattening stores a Text value as charset indices, which fail on any character
# outside the sampling charset (KeyError).  An AnyText value is flattened to its code
# points instead, padded with -1: every str, lone surrogates included, round-trips.
_NO_CHAR = -1


@spaces.utils.flatten.register(AnyText)
def _flatten_any_text(space: AnyText, text: str) -> np.ndarray:
    codes = np.full(space.max_length, _NO_CHAR, dtype=np.int32)
    codes[: len(text)] = [ord(char) for char in text]
    return codes


@spaces.utils.unflatten.register(AnyText)
def _unflatten_any_text(space: AnyText, codes: np.ndarray) -> str:
    return "".join(chr(code) for code in codes if code != _NO_CHAR)


@shared_memory.create_shared_memory.register(TextObservation)
def _no_shared_text(space: TextObservation, n: int = 1, ctx: Any = None) -> NoReturn:
    # Gymnasium (1.4) reads str observations out of shared memory once, when the vector
    # env is built, so every later observation would silently be that first snapshot
    # (for Sokoban: a board of newlines).
    raise ValueError(
        "free-text observations cannot use shared memory; build the vector env with "
        "gymnasium.make_vec(..., vectorization_mode='async', vector_kwargs={'shared_memory': False})"
    )


def text_charset(*texts: str) -> frozenset[str]:
    """The characters a ``spaces.Text`` observation space must allow."""
    chars: set[str] = set()
    for text in texts:
        chars.update(text)
    return frozenset(chars)


_ASCII_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)


def ascii_casefold(text: str) -> str:
    """Lower-case ASCII letters only.

    Action names are matched case-insensitively, but only over ASCII: ``str.lower``
    also maps look-alikes such as the Kelvin sign (U+212A) to ``k``, which would let
    ``"OAK"`` written with it pick the arm ``Oak``.
    """
    return text.translate(_ASCII_LOWER)


class _Phase(enum.Enum):
    """Where an env is in its episode.  Enum members survive pickling as themselves
    (a pickled str would come back as a new object and fail the identity checks)."""

    NOT_RESET = "not reset"
    LIVE = "live"
    FINISHED = "finished"


# Module constants so the hot path compares identities without attribute lookups.
_NOT_RESET, _LIVE, _FINISHED = _Phase.NOT_RESET, _Phase.LIVE, _Phase.FINISHED


# The ``metadata`` of a family that draws pictures (``render_rgb``).
PICTURE_METADATA: dict[str, Any] = {"render_modes": ["ansi", "rgb_array"], "render_fps": 4}

SEED_LIMIT = 2**64
# Unseeded resets of single-agent envs draw their level seed below this.
_DRAWN_SEEDS = 2**32


def check_seed(owner: str, seed: Any, limit: int = SEED_LIMIT) -> int | None:
    """``seed`` as a Python ``int`` (or ``None``), or the error naming ``owner`` and the rule.

    The rule: ``None``, or a Python or numpy integer in ``0..limit-1``; ``bool`` (and
    numpy's) is refused, as are floats and strings.
    """
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"{owner}: seed must be an int or None, got {seed!r} ({type(seed).__name__})")
    if not 0 <= seed < limit:
        raise ValueError(f"{owner}: seed must be in 0..{limit - 1}, got {seed}")
    return int(seed)


class SeedContract:
    """The seed contract of every env in the project, single-agent and multi-agent alike.

    ``reset`` checks its seed with :meth:`_check_seed` (:func:`check_seed` below
    ``seed_limit``, the error naming :meth:`_owner`) and then calls
    :meth:`_seed_generator`: a seed starts ``np_random`` afresh, so the same seed gives
    the same episode on any machine; without one ``np_random`` runs on, so everything
    the episode draws comes from the env's own generator (seeded by the last seeded
    reset).  ``np_random`` and ``np_random_seed`` behave as Gymnasium's (a random
    generator until the first seeded reset).  A single-agent env draws its level seed
    from it (:meth:`_draw_seed`); a game draws what its episode needs directly (the
    Prisoner's Dilemma's number of rounds, the opponents' tie-breaks).
    """

    # Seeds are refused from here up (Sokoban's generator takes 32-bit seeds).
    seed_limit: ClassVar[int] = SEED_LIMIT
    _generator: np.random.Generator | None = None
    _np_random_seed: int | None = None
    # A seeded reset only notes its seed; the generator is seeded from it on first use, since
    # seeding one costs more than building a small level and many resets never draw from it.
    _unbuilt_seed: int | None = None

    def _owner(self) -> str:
        """The name errors start with."""
        return type(self).__name__

    def _check_seed(self, seed: Any) -> int | None:
        return check_seed(self._owner(), seed, self.seed_limit)

    def _seed_generator(self, seed: int | None) -> None:
        """Start ``np_random`` afresh from a (checked) ``seed``; without one, leave it running."""
        if seed is not None:
            self._generator, self._np_random_seed, self._unbuilt_seed = None, seed, seed

    def _draw_seed(self) -> int:
        """A seed drawn from ``np_random``, for an unseeded reset."""
        return int(self.np_random.integers(_DRAWN_SEEDS))

    @property
    def _np_random(self) -> np.random.Generator:
        """Gymnasium's attribute (its env checker reads it): the generator, seeded on first use."""
        if self._generator is None:
            # The last seeded reset's seed, or a random one before any.
            self._generator, self._np_random_seed = seeding.np_random(self._unbuilt_seed)
            self._unbuilt_seed = None
        return self._generator

    @_np_random.setter
    def _np_random(self, value: np.random.Generator) -> None:
        self._generator, self._unbuilt_seed = value, None

    @property
    def np_random(self) -> np.random.Generator:
        """The env's generator; a randomly seeded one until the first seeded reset."""
        return self._np_random

    @np_random.setter
    def np_random(self, value: np.random.Generator) -> None:
        self._np_random, self._np_random_seed = value, -1

    @property
    def np_random_seed(self) -> int:
        """The seed of ``np_random`` (-1 when it was set directly)."""
        if self._np_random_seed is None:
            _ = self._np_random  # seeds a random generator, and with it the seed
        return self._np_random_seed


class TextEnv(SeedContract, gymnasium.Env):
    """Base for single-agent text envs: the shared reset/step contract (see module doc)."""

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    action_names: tuple[str, ...] | None = None
    symbol_meanings: Mapping[str, str] = {}
    instruction: str = ""
    # Whether optimal_action() knows a move (module doc): declared, as one None from it proves nothing.
    has_reference_agent: ClassVar[bool] = True
    # Keys ``reset(options=...)`` understands.
    reset_options: ClassVar[frozenset[str]] = frozenset()

    _phase = _NOT_RESET
    level_seed: int | None = None
    _seeded_by_reset = False  # whether the current episode's reset was given its seed
    # Number of Discrete actions; 0 for free-text envs (every int then takes the slow path).
    _num_actions = 0

    def __init__(self, render_mode: str | None = "ansi") -> None:
        modes = self.metadata["render_modes"]
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"{type(self).__name__}: render_mode must be one of {modes} or None, got {render_mode!r}")
        self.render_mode = render_mode

    def _configure(self, config_class: type[ConfigT], kwargs: Mapping[str, Any]) -> ConfigT:
        """Check ``kwargs`` against ``config_class`` (see :class:`EnvConfig`) and keep the result.

        The checked config is ``self.config``, and each of its fields is also an attribute
        of the env (``env.size``), as before configs existed.
        """
        config = config_class.from_kwargs(kwargs, owner=type(self).__name__)
        self.config = config
        for name, value in config.as_dict().items():
            setattr(self, name, value)
        return config

    def _set_action_space(self, space: spaces.Space) -> None:
        self.action_space = space
        self._num_actions = int(space.n) if isinstance(space, spaces.Discrete) else 0

    # -- Gymnasium API -------------------------------------------------------------

    def reset(self, *, seed: Any = None, options: Mapping[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """Start the episode of ``seed``, or of a seed drawn from ``np_random`` (see module doc)."""
        seed = self._check_seed(seed)
        self._check_options(options)
        self._seed_generator(seed)  # all that gymnasium.Env.reset does
        self._seeded_by_reset = seed is not None
        if seed is None:
            seed = self._draw_seed()
        self.level_seed = seed
        self._phase = _NOT_RESET  # stays so if the family's reset raises
        observation, info = self._reset_level(seed)
        self._phase = _LIVE
        return observation, info

    def step(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        """Apply one action; raises on a finished or never-started episode and on bad actions."""
        if self._phase is not _LIVE:
            self._raise_not_live()
        # Fast path: a plain int in range (the common case for discrete envs).
        if action.__class__ is not int or not 0 <= action < self._num_actions:
            action = self._check_action(action)
        result = self._step_action(action)
        if result[2] or result[3]:
            self._phase = _FINISHED
        return result

    def render(self) -> str | np.ndarray | None:
        """After a reset: the observation text in ``"ansi"`` mode, the picture in ``"rgb_array"`` mode.

        ``None`` without a render mode.  The picture never changes the observation.
        """
        if self.render_mode is None:
            return None
        if self._phase is _NOT_RESET:
            raise ResetNeededError(f"{type(self).__name__}: call reset() before render()")
        if self.render_mode == "rgb_array":
            return self.render_rgb()
        return self.render_text()

    def optimal_action(self, steps_left: int | None = None) -> int | str | None:
        """Next action of an optimal policy, or ``None`` if unknown."""
        return None

    def baseline_action(self, steps_left: int | None = None) -> int | str | None:
        """Next action of the family's scripted baseline (module doc): the optimal one unless a family overrides it."""
        return self.optimal_action(steps_left=steps_left)

    def _fresh_generator_state(self, seed: int) -> dict[str, Any]:
        """The ``bit_generator.state`` of a generator freshly seeded with ``seed`` (Gymnasium's seeding).

        For families whose peer draws an episode from such a generator.  After a seeded reset
        ``np_random`` is exactly that generator, still untouched, so its state is copied
        (several times cheaper than seeding another); after an unseeded one, one is seeded.
        """
        generator = self.np_random if self._seeded_by_reset else seeding.np_random(seed)[0]
        return generator.bit_generator.state

    # -- what a family implements ---------------------------------------------------

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        raise NotImplementedError

    def _step_action(self, action: Any) -> tuple[str, float, bool, bool, dict[str, Any]]:
        raise NotImplementedError

    def render_text(self) -> str:
        """The current observation text."""
        raise NotImplementedError

    def render_rgb(self) -> np.ndarray:
        """The current state as a ``uint8`` picture ``(height, width, 3)``; families whose
        ``metadata`` lists ``"rgb_array"`` draw it (with :mod:`ragen_bench.envs.drawing`)."""
        raise NotImplementedError

    # -- checks ---------------------------------------------------------------------

    @property
    def episode_finished(self) -> bool:
        """Whether the current episode terminated or was truncated."""
        return self._phase is _FINISHED

    def _raise_not_live(self) -> None:
        name = type(self).__name__
        if self._phase is _NOT_RESET:
            raise ResetNeededError(f"{name}: call reset() before step()")
        raise EpisodeFinishedError(f"{name}: the episode has ended (terminated or truncated); call reset() first")

    def _check_options(self, options: Any) -> None:
        if options is None:
            return
        if not isinstance(options, Mapping):
            raise TypeError(f"{type(self).__name__}: options must be a mapping or None, got {type(options).__name__}")
        unknown = sorted(map(str, set(options) - self.reset_options))
        if unknown:
            known = ", ".join(sorted(self.reset_options)) or "none"
            raise ValueError(f"{type(self).__name__}.reset: unknown options {unknown} (known: {known})")

    def _check_action(self, action: Any) -> int | str:
        """``action`` as the family expects it, or :class:`InvalidActionError`."""
        space = self.action_space
        name = type(self).__name__
        if isinstance(space, spaces.Discrete):
            valid = f"an int in 0..{self._num_actions - 1}"
            if isinstance(action, (int, np.integer)) and not isinstance(action, (bool, np.bool_)):
                if 0 <= action < self._num_actions:
                    return int(action)
        else:
            valid = f"a str of {space.min_length} to {space.max_length} characters"
            if space.min_length == 0:
                valid = f"a str of at most {space.max_length} characters"
            if space.contains(action):
                return action
        shown = repr(action) if len(repr(action)) <= 80 else repr(action)[:77] + "..."
        raise InvalidActionError(f"{name}: invalid action {shown} ({type(action).__name__}); expected {valid}")
