"""One attempt: the problem's tests run on the model's code in the sandbox, and what the model reads back.

The feedback is a pure function of the sandbox's :class:`~ragen_bench.sandbox.Outcome`, which
holds no timings, process ids or host paths, so an attempt's feedback is the same on every run
(what ``leaderboard verify`` replays).  The pass mark is fresh random bytes each attempt and never
shown: code that prints its way out or exits early cannot produce it.
"""

from __future__ import annotations

import secrets

from ragen_bench.envs.human_eval.problems import Problem
from ragen_bench.sandbox import Limits, Outcome, run_python

PASSED = "All tests passed."
NO_CODE = "No code found. Reply with the whole function in a ```python fenced block."
LIMITS = Limits(wall_s=10.0, cpu_s=5, memory_bytes=512 << 20, file_bytes=1 << 20, processes=32, output_bytes=64 << 10)
FEEDBACK_LINES = 8  # the last lines of the error shown
LINE_CHARS = 200  # each cut to this many characters: a long assertion's data is cut, its place kept
FEEDBACK_CHARS = 1500


def run_tests(problem: Problem, code: str, *, allow_unconfined: bool = False, limits: Limits = LIMITS) -> tuple[bool, str]:
    """``(passed, feedback)`` of ``code`` against ``problem``'s tests."""
    mark = secrets.token_hex(16)
    outcome = run_python(problem.program(code), stdin=f"{mark}\n".encode(), limits=limits, allow_unconfined=allow_unconfined)
    lines = outcome.stdout.splitlines()
    if outcome.ok and lines and lines[-1] == mark:
        return True, PASSED
    return False, failure_text(outcome, limits)


def failure_text(outcome: Outcome, limits: Limits) -> str:
    """What a failed attempt shows: the limit it hit, or the end of its traceback, cut to size."""
    if outcome.status == "timeout":
        return f"Tests failed: time limit exceeded (the tests may run {limits.cpu_s} s of CPU time)."
    if outcome.status == "output-limit":
        return f"Tests failed: output limit exceeded (more than {limits.output_bytes} bytes printed)."
    error = outcome.stderr.rstrip()
    if not error:
        return f"Tests failed: the program exited with status {outcome.code} before the tests finished."
    tail = [_cut(line) for line in error.splitlines()[-FEEDBACK_LINES:]]
    text = "\n".join(tail)
    if len(text) > FEEDBACK_CHARS:
        text = "..." + text[-FEEDBACK_CHARS:]
    return f"Tests failed:\n{text}"


def _cut(line: str) -> str:
    return line if len(line) <= LINE_CHARS else line[:LINE_CHARS] + " ..."
