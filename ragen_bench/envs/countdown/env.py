"""Countdown: combine the given numbers with + - * / to hit a target (RAGEN's scoring)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium.utils import seeding

from ragen_bench.envs.base import AnyText, TextEnv, TextObservation, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, PathOrNone, setting
from ragen_bench.envs.countdown import arith, solver
from ragen_bench.envs.datafiles import load_instances

CORRECT_REWARD = 1.0
WELL_FORMED_REWARD = 0.1  # uses exactly the given numbers but misses the target
MALFORMED_REWARD = 0.0

# Only shapes action_space.sample(); any str within the length bound is an action.
_SAMPLE_CHARSET = text_charset("0123456789 +-*/()")

# Generation redraws until some target in range is reachable.  With the default
# settings none of the first 20,000 seeds needs a redraw; this bound turns a setting
# whose targets are almost never reachable into an error instead of a reset that
# never returns.
MAX_INSTANCE_DRAWS = 200
MAX_GENERATED_NUMBER = 10_000
MAX_GENERATED_TARGET = 1_000_000


class InstanceGenerationError(RuntimeError):
    """No reachable target within ``MAX_INSTANCE_DRAWS`` draws of the numbers."""


def generate_instance(
    rng: np.random.Generator, min_count: int, max_count: int, max_number: int, max_target: int
) -> tuple[tuple[int, ...], int]:
    """Numbers and a target that is provably reachable (checked by exhaustive search).

    Draws the count, then the numbers (1..``max_number``), then a target uniformly among
    the integers in 1..``max_target`` that the numbers can make; redraws all of it if
    there are none, at most ``MAX_INSTANCE_DRAWS`` times.
    """
    for _ in range(MAX_INSTANCE_DRAWS):
        count = int(rng.integers(min_count, max_count + 1))
        numbers = tuple(int(n) for n in rng.integers(1, max_number + 1, size=count))
        targets = sorted(
            int(v) for v in solver.reachable_values(numbers) if v.denominator == 1 and 1 <= v <= max_target
        )
        if targets:
            return numbers, targets[int(rng.integers(len(targets)))]
    raise InstanceGenerationError(
        f"no reachable target in 1..{max_target} after {MAX_INSTANCE_DRAWS} draws of {min_count}-{max_count} "
        f"numbers in 1..{max_number}; raise max_target or lower max_number"
    )


_MAX_FILE_VALUE = 10**9  # keeps prompts short and literals within the parser's bounds


def _int_field(value: Any) -> int:
    expected = f"an integer in 0..{_MAX_FILE_VALUE}"
    if isinstance(value, (float, np.floating)) and math.isfinite(value) and float(value).is_integer():
        value = int(value)  # Parquet integer columns with gaps arrive as floats
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise ValueError(f"expected {expected}, got {value!r}")
    if not 0 <= value <= _MAX_FILE_VALUE:
        raise ValueError(f"expected {expected}, got {value!r}")
    return int(value)


def _numbers_field(value: Any) -> tuple[int, ...]:
    if isinstance(value, (str, bytes, dict)) or not hasattr(value, "__iter__"):
        raise ValueError(f"expected a list of numbers, got {value!r}")
    numbers = tuple(_int_field(n) for n in value)
    if not 2 <= len(numbers) <= solver.MAX_NUMBERS:
        # The exhaustive search behind the solvability check grows ~30x per extra number:
        # 5 numbers take well under a second, 6 would take ~15 s per unsolvable row.
        raise ValueError(f"expected 2 to {solver.MAX_NUMBERS} numbers, got {len(numbers)}")
    return numbers


def score(answer: object, numbers: Sequence[int], target: int) -> float:
    """RAGEN's Countdown score: 1 if correct, 0.1 if well formed with the right numbers, else 0."""
    return _score_parsed(arith.evaluate(answer), numbers, target)


def _score_parsed(evaluation: arith.Evaluation | None, numbers: Sequence[int], target: int) -> float:
    if evaluation is None or sorted(evaluation.numbers) != sorted(numbers):
        return MALFORMED_REWARD
    return CORRECT_REWARD if evaluation.value == target else WELL_FORMED_REWARD


@dataclass(frozen=True)
class CountdownConfig(EnvConfig):
    """CountdownEnv's arguments (besides ``render_mode``)."""

    # The solver's exhaustive search caps how many numbers an instance may hold.
    min_count: int = setting(3, rule=IntIn(2, solver.MAX_NUMBERS), help="Fewest numbers in a generated instance.")
    max_count: int = setting(
        4, rule=IntIn("min_count", solver.MAX_NUMBERS), help="Most numbers in a generated instance (>= min_count)."
    )
    max_number: int = setting(99, rule=IntIn(1, MAX_GENERATED_NUMBER), help="Generated numbers lie in 1..max_number.")
    max_target: int = setting(
        100, rule=IntIn(1, MAX_GENERATED_TARGET), help="Generated targets lie in 1..max_target and are reachable."
    )
    data_path: str | Path | None = setting(
        None,
        rule=PathOrNone(),
        help="A local JSONL or Parquet file of instances (nums, target) to draw from instead of generating.",
    )


class CountdownEnv(TextEnv):
    """Write one equation that uses each given number exactly once and equals the target.

    ## Description
    RAGEN's Countdown (TinyZero's task): a list of 3 or 4 numbers and a target.  The
    agent answers with one arithmetic expression using + - * / and parentheses in which
    every number appears exactly once.  Instances are generated procedurally (no data
    download): every target is reachable, which exhaustive search verifies while also
    producing a reference equation.  Optionally the instances come from a local
    TinyZero-style file (``data_path``; JSONL or Parquet rows with ``target`` and
    ``nums``), in which case seed ``s`` plays row ``s % n`` of the solvable rows, as in
    RAGEN.

    ## Action Space
    ``AnyText(0, 256)``: any ``str`` of at most 256 characters (longer text or a
    non-``str`` raises ``InvalidActionError``).  The answer is an equation, e.g.
    ``"(2 + 5) - 3"``; ``x``, ``X``, ``×`` and ``·`` are read as ``*``, ``÷`` as ``/``,
    ``−`` (U+2212) as ``-``, and any Unicode space as a space; unary minus is allowed.
    It is parsed by this project's bounded parser, never evaluated as code.

    ## Observation Space
    ``Text``: the numbers and the target (reset), then the score (step).

    ## Rewards
    1.0 if the expression uses exactly the given numbers (as a multiset) and equals the
    target exactly (rational arithmetic); 0.1 if it uses exactly the given numbers but
    misses; 0.0 for anything else (wrong numbers, malformed, division by zero,
    over-long).  RAGEN's scheme, with exact instead of floating-point comparison.

    ## Episode End
    Terminated after the single answer.  Answering again raises
    ``EpisodeFinishedError`` (``reset()`` starts the next episode).

    ## Arguments
    The fields of :class:`CountdownConfig` (``min_count``, ``max_count``, ``max_number``,
    ``max_target``, ``data_path``), ``render_mode="ansi"`` or ``None``.  Wrong types or ranges raise at construction; a
    setting whose targets are almost never reachable raises
    ``InstanceGenerationError`` at reset after ``MAX_INSTANCE_DRAWS`` redraws.  File
    rows hold 2 to 5 numbers (the solvability check is exhaustive); a malformed row
    raises ``InstanceFileError`` naming the file and line.

    ## Info
    Every call: ``success``, ``level_seed``, ``numbers``, ``target``.  Step adds
    ``action_is_effective`` (reward > 0, as RAGEN) and ``action_is_valid``
    (the answer parsed).  Reset adds ``optimal_length`` = 1 and ``reference_solution``.

    ## Version History
    * v0: procedural instances (3-4 numbers in 1..99, target in 1..100), RAGEN's rewards.
      Later hardening (a second answer raises instead of scoring again; answers with
      ``X``, ``·``, ``−`` or Unicode spaces are in the action space) changed no seed's
      episode, so the id stays v0.
    """

    action_names = None
    symbol_meanings: dict[str, str] = {}
    instruction = (
        "You are given a list of numbers and a target. Write one arithmetic expression that "
        "uses every number exactly once, combined with + - * / and parentheses, and equals the "
        "target. Answer with the expression only, for example (6 - 2) * 5."
    )

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`CountdownConfig`."""
        super().__init__(render_mode)
        data_path = self._configure(CountdownConfig, kwargs).data_path
        self.instances: list[tuple[tuple[int, ...], int]] | None = None
        if data_path is not None:
            rows = load_instances(data_path, {"nums": _numbers_field, "target": _int_field})
            # RAGEN drops instances it cannot verify as solvable; we verify with the full search.
            self.instances = [(row["nums"], row["target"]) for row in rows if solver.solve(row["nums"], row["target"])]
            if not self.instances:
                raise ValueError(f"{data_path}: none of the {len(rows)} instances is solvable")

        # At most 5 numbers of at most 10 digits: every prompt fits in 512 characters.
        self.observation_space = TextObservation(
            max_length=512,
            charset=text_charset(self._prompt((0,), 0), self._feedback(WELL_FORMED_REWARD), "0123456789,"),
        )
        self._set_action_space(AnyText(min_length=0, max_length=arith.MAX_CHARS, charset=_SAMPLE_CHARSET))

        self.numbers: tuple[int, ...] = ()
        self.target = 0
        self._reference: str | None = None
        self._text = ""

    @staticmethod
    def _prompt(numbers: tuple[int, ...], target: int) -> str:
        listed = ", ".join(str(n) for n in numbers)
        return f"Numbers: [{listed}]. Target: {target}. Use every number exactly once with + - * / and parentheses."

    @staticmethod
    def _feedback(reward: float) -> str:
        return f"Your equation scored {reward} points."

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        """The instance of ``seed`` (generated, or row ``seed % n`` of the file's solvable rows)."""
        if self.instances is not None:
            self.numbers, self.target = self.instances[seed % len(self.instances)]
        else:
            rng = seeding.np_random(seed)[0]
            self.numbers, self.target = generate_instance(
                rng, self.min_count, self.max_count, self.max_number, self.max_target
            )
        self._reference = solver.solve(self.numbers, self.target)
        self._text = self._prompt(self.numbers, self.target)
        info = self._info(success=False)
        info["optimal_length"] = 1
        info["reference_solution"] = self._reference
        return self._text, info

    def _step_action(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        evaluation = arith.evaluate(action)
        reward = _score_parsed(evaluation, self.numbers, self.target)
        self._text = self._feedback(reward)
        info = self._info(success=reward == CORRECT_REWARD)
        info["action_is_effective"] = reward > 0
        info["action_is_valid"] = evaluation is not None
        return self._text, reward, True, False, info

    def render_text(self) -> str:
        return self._text

    def optimal_action(self, steps_left: int | None = None) -> str | None:
        """The reference equation found by exhaustive search."""
        return None if self.episode_finished else self._reference  # one answer per episode

    def _info(self, success: bool) -> dict[str, Any]:
        return {"success": success, "level_seed": self.level_seed, "numbers": self.numbers, "target": self.target}
