"""Math question answering with RAGEN's MetaMathQA semantics, from a local file or generated."""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import numpy as np
from gymnasium import spaces
from gymnasium.utils import seeding

from ragen_bench.envs.base import TextEnv
from ragen_bench.envs.datafiles import check_fields, read_records

MAX_ANSWER_CHARS = 1000
_METAMATH_ANSWER = re.compile(r"The answer is: (.*?)$", re.DOTALL)
CORRECT = "Correct!"
INCORRECT = "Incorrect. Please think again."


def normalize_answer(text: str) -> str:
    """RAGEN's comparison form: lower case, all whitespace removed."""
    return re.sub(r"\s+", "", text.strip().lower())


def _question_field(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty string")
    return value


def _answer_field(value: Any) -> str:
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        raise ValueError(f"expected a string or number, got {type(value).__name__}")
    return str(value)


def _metamath_answer_field(value: Any) -> str:
    """The final answer inside a MetaMathQA ``response`` ("... The answer is: 42")."""
    match = _METAMATH_ANSWER.search(_question_field(value))
    if match is None or not match.group(1).strip():
        raise ValueError("no 'The answer is: ...' line in the response")
    return match.group(1).strip()


def load_questions(path: str | Path) -> list[tuple[str, str]]:
    """(question, answer) pairs from JSONL/Parquet rows.

    Rows have ``question`` and ``answer``, or MetaMathQA's ``query`` and ``response``
    (the answer is the text after "The answer is: "); the first row decides which.
    """
    records = read_records(path)
    if "query" in records[0][1] and "question" not in records[0][1]:
        rows = check_fields(path, records, {"query": _question_field, "response": _metamath_answer_field})
        return [(row["query"], row["response"]) for row in rows]
    rows = check_fields(path, records, {"question": _question_field, "answer": _answer_field})
    return [(row["question"], row["answer"]) for row in rows]


# -- the built-in procedural source ---------------------------------------------------

_NAMES = ("Ada", "Bruno", "Chen", "Dara", "Emeka", "Farah", "Goran", "Hana", "Ines", "Jonas")
_ITEMS = ("marbles", "stickers", "apples", "books", "coins", "shells", "pencils", "stamps")


def generate_question(rng: np.random.Generator) -> tuple[str, str]:
    """One arithmetic word problem with a non-negative integer answer (2 to 3 operations)."""
    name = _NAMES[int(rng.integers(len(_NAMES)))]
    item = _ITEMS[int(rng.integers(len(_ITEMS)))]
    kind = int(rng.integers(4))
    a, b, c = (int(v) for v in rng.integers(2, 30, size=3))
    if kind == 0:
        question = f"{name} has {a + b} {item}, gets {c} more, then gives away {b}. "
        return question + f"How many {item} does {name} have now?", str(a + c)
    if kind == 1:
        question = f"{name} fills {a} boxes with {b} {item} each and has {c} {item} left over. "
        return question + f"How many {item} are there in all?", str(a * b + c)
    if kind == 2:
        question = f"{name} shares {a * b} {item} equally among {a} friends and then adds {c} to each share. "
        return question + f"How many {item} are in one share?", str(b + c)
    lost = 1 + c % (a * b - 1)  # fewer than were bought
    question = f"{name} buys {a} packs of {b} {item} and loses {lost}. Then {name} doubles what is left. "
    return question + f"How many {item} does {name} have?", str(2 * (a * b - lost))


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
    ``Text``: the final answer, e.g. ``"42"``.  Answers longer than 1000 characters
    count as wrong.

    ## Observation Space
    ``Text``: the question (reset), then ``"Correct!"`` or
    ``"Incorrect. Please think again."`` (step).

    ## Rewards
    ``1 / 2**k`` for a correct answer on attempt ``k + 1`` (1, 0.5, 0.25, ...); 0 for a
    wrong one.

    ## Episode End
    Terminated on a correct answer.  Truncated after ``max_attempts`` wrong answers
    (RAGEN leaves the cap to the rollout loop).

    ## Arguments
    ``data_path=None`` (generated questions), ``max_attempts=5``, ``render_mode="ansi"``
    or ``None``.

    ## Info
    Every call: ``success``, ``level_seed``.  Step adds ``action_is_valid`` (a
    non-empty answer) and ``action_is_effective`` (the answer was correct).  Reset
    adds ``optimal_length`` = 1.

    ## Version History
    * v0: RAGEN's MetaMathQA semantics; built-in word problems (4 templates).
    """

    action_names = None
    symbol_meanings: dict[str, str] = {}
    instruction = "You are solving a math problem. Reply with the final answer only, for example 42."

    def __init__(
        self, data_path: str | Path | None = None, max_attempts: int = 5, render_mode: str | None = "ansi"
    ) -> None:
        if render_mode not in (None, "ansi"):
            raise ValueError(f"render_mode must be 'ansi' or None, got {render_mode!r}")
        if max_attempts < 1:
            raise ValueError(f"max_attempts must be >= 1, got {max_attempts}")
        self.max_attempts = int(max_attempts)
        self.render_mode = render_mode
        self.questions = load_questions(data_path) if data_path is not None else None
        # Questions from files may use any characters: allow any printable text.
        self.observation_space = spaces.Text(max_length=100_000, charset=_PRINTABLE)
        self.action_space = spaces.Text(max_length=MAX_ANSWER_CHARS, charset="0123456789-./ ")

        self.question = ""
        self.answer = ""
        self._attempts = 0
        self._solved = False
        self._text = ""
        self._level_seed: int | None = None

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[str, dict[str, Any]]:
        """The question of ``seed``."""
        super().reset(seed=seed)
        if options:
            raise ValueError(f"MathQAEnv.reset takes no options, got {sorted(options)}")
        if seed is None:
            seed = int(self.np_random.integers(2**32))
        self._level_seed = seed
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

    def step(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        if not self._text:
            raise RuntimeError("call reset() before step()")
        answer = action if isinstance(action, str) and len(action) <= MAX_ANSWER_CHARS else ""
        normalized = normalize_answer(answer)
        correct = normalized != "" and normalized == normalize_answer(self.answer)
        reward = 1.0 / 2**self._attempts if correct else 0.0
        self._attempts += 1
        self._solved = self._solved or correct
        self._text = CORRECT if correct else INCORRECT
        info = self._info()
        info["action_is_valid"] = normalized != ""
        info["action_is_effective"] = correct
        return self._text, reward, correct, not correct and self._attempts >= self.max_attempts, info

    def render(self) -> str | None:
        return self._text if self.render_mode == "ansi" else None

    def optimal_action(self, steps_left: int | None = None) -> str | None:
        """The reference answer."""
        return None if self._solved or not self._text else self.answer

    def _info(self) -> dict[str, Any]:
        return {"success": self._solved, "level_seed": self._level_seed}


_PRINTABLE = frozenset(chr(code) for code in range(32, 0x3000)) | {"\n", "\t"}
