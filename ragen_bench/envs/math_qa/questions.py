"""MathQA's question sources: local JSONL/Parquet files, or built-in word problems."""

from __future__ import annotations

import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from ragen_bench.envs.datafiles import check_fields, read_records

_METAMATH_ANSWER = re.compile(r"The answer is: (.*?)$", re.DOTALL)
MAX_QUESTION_CHARS = 100_000  # the observation space's bound
MAX_ANSWER_CHARS = 1000  # the action space's bound: a longer reference answer could never be given


def _question_field(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected a non-empty string")
    if len(value) > MAX_QUESTION_CHARS:
        raise ValueError(f"longer than {MAX_QUESTION_CHARS} characters ({len(value)})")
    return value


def _answer_field(value: Any) -> str:
    """The reference answer as text; numbers must be finite (``1e400`` would read as "inf")."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (str, int, float, np.integer, np.floating)):
        raise ValueError(f"expected a string or number, got {type(value).__name__}")
    if isinstance(value, (float, np.floating)) and not math.isfinite(value):
        raise ValueError(f"expected a finite number, got {value!r} (write large or special answers as strings)")
    return _answer_text(str(value))


def _answer_text(text: str) -> str:
    if not text.strip():
        raise ValueError("expected a non-empty answer")
    if len(text) > MAX_ANSWER_CHARS:
        raise ValueError(f"longer than the {MAX_ANSWER_CHARS} characters an answer may have ({len(text)})")
    return text


def _metamath_answer_field(value: Any) -> str:
    """The final answer inside a MetaMathQA ``response`` ("... The answer is: 42")."""
    match = _METAMATH_ANSWER.search(_question_field(value))
    if match is None or not match.group(1).strip():
        raise ValueError("no 'The answer is: ...' line in the response")
    return _answer_text(match.group(1).strip())


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
