"""Math question answering with RAGEN's MetaMathQA semantics, from a local file or generated."""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gymnasium.utils import seeding

from ragen_bench.envs.base import AnyText, TextEnv, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, PathOrNone, setting
from ragen_bench.envs.math_qa.questions import (
    MAX_ANSWER_CHARS,
    MAX_QUESTION_CHARS,
    generate_question,
    load_questions,
)

CORRECT = "Correct!"
INCORRECT = "Incorrect. Please think again."


def normalize_answer(text: str) -> str:
    """RAGEN's comparison form: lower case, all whitespace removed."""
    return re.sub(r"\s+", "", text.strip().lower())


@dataclass(frozen=True)
class MathQAConfig(EnvConfig):
    """MathQAEnv's arguments (besides ``render_mode``)."""

    data_path: str | Path | None = setting(
        None,
        rule=PathOrNone(),
        help="A local JSONL or Parquet file of questions (None: the built-in generated ones).",
    )
    max_attempts: int = setting(5, rule=IntIn(1, 1000), help="Answers allowed before the episode ends.")


class MathQAEnv(TextEnv):
    """Answer a math question; retries are allowed but each halves the reward.

    ## Description
    RAGEN's MetaMathQA environment: each episode poses one question; the agent answers
    with the final answer only.  An answer is correct when it equals the reference
    after lower-casing and removing all whitespace.  A wrong answer gets feedback and
    another try, for at most ``max_attempts`` tries.  Questions come from a local file
    the user names (``data_path``, JSONL or Parquet; nothing is downloaded), where seed
    ``s`` picks the question exactly as RAGEN does (``random.Random(s).randint``, here
    with a private generator), or from a built-in generator of arithmetic word problems
    so the env works with no files at all.

    ## Action Space
    ``AnyText(0, 1000)``: any ``str`` of at most 1000 characters is an answer (``"42"``,
    ``"Paris"``, ``"\\frac{1}{2}"``, ``"½"``); a longer text or a non-``str`` raises
    ``InvalidActionError``.  An empty answer is wrong and uses up an attempt.

    ## Observation Space
    ``AnyText(1, 100000)``: the question (reset; file questions may use any
    characters), then ``"Correct!"`` or ``"Incorrect. Please think again."`` (step).

    ## Rewards
    ``1 / 2**k`` for a correct answer on attempt ``k + 1`` (1, 0.5, 0.25, ...); 0 for a
    wrong one.

    ## Episode End
    Terminated on a correct answer.  Truncated after ``max_attempts`` wrong answers
    (RAGEN leaves the cap to the rollout loop).  Answering a finished episode raises
    ``EpisodeFinishedError`` (``reset()`` starts the next one).

    ## Arguments
    The fields of :class:`MathQAConfig` (``data_path``, ``max_attempts``),
    ``render_mode="ansi"`` or ``None``.  Wrong types or ranges raise at construction;
    a malformed file row raises ``InstanceFileError`` naming the file and line.

    ## Info
    Every call: ``success``, ``level_seed``.  Step adds ``action_is_valid`` (a
    non-empty answer) and ``action_is_effective`` (the answer was correct).  Reset
    adds ``optimal_length`` = 1.

    ## Version History
    * v0: RAGEN's MetaMathQA semantics; built-in word problems (4 templates).  Later
      hardening (answers after the end raise instead of paying again; any answer text
      is in the action space) changed no seed's episode, so the id stays v0.
    """

    action_names = None
    symbol_meanings: dict[str, str] = {}
    instruction = "You are solving a math problem. Reply with the final answer only, for example 42."

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`MathQAConfig`."""
        super().__init__(render_mode)
        data_path = self._configure(MathQAConfig, kwargs).data_path
        self.questions = load_questions(data_path) if data_path is not None else None
        # Questions from files may use any characters; the charsets only shape sample().
        self.observation_space = AnyText(min_length=1, max_length=MAX_QUESTION_CHARS, charset=_SAMPLE_CHARSET)
        self._set_action_space(AnyText(min_length=0, max_length=MAX_ANSWER_CHARS, charset=_SAMPLE_CHARSET))

        self.question = ""
        self.answer = ""
        self._attempts = 0
        self._solved = False
        self._text = ""

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        """The question of ``seed``."""
        if self.questions is not None:
            self.question, self.answer = self.questions[random.Random(seed).randint(0, len(self.questions) - 1)]
        else:
            self.question, self.answer = generate_question(seeding.np_random(seed)[0])
        self._attempts = 0
        self._solved = False
        self._text = self.question
        info = self._info()
        info["optimal_length"] = 1
        return self._text, info

    def _step_action(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        normalized = normalize_answer(action)
        correct = normalized != "" and normalized == normalize_answer(self.answer)
        reward = 1.0 / 2**self._attempts if correct else 0.0
        self._attempts += 1
        self._solved = correct
        self._text = CORRECT if correct else INCORRECT
        info = self._info()
        info["action_is_valid"] = normalized != ""
        info["action_is_effective"] = correct
        return self._text, reward, correct, not correct and self._attempts >= self.max_attempts, info

    def render_text(self) -> str:
        return self._text

    def optimal_action(self, steps_left: int | None = None) -> str | None:
        """The reference answer."""
        return None if self._solved or not self._text else self.answer

    def _info(self) -> dict[str, Any]:
        return {"success": self._solved, "level_seed": self.level_seed}


_SAMPLE_CHARSET = text_charset("0123456789-./ ")
