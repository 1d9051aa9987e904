"""Speed of RAGEN/HumanEval-v0: one reset + step (an attempt: the problem's tests run in the
sandbox), beside the sandbox's own cost on an empty program and a bare ``python -S -c pass``
process (the floor any separate-process runner pays), in the same run.

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_human_eval.py \
        --benchmark-enable --benchmark-only --benchmark-columns=median,iqr,ops,rounds

Every timed result is checked: the canonical solution passes, the wrong one fails on its assertion,
the empty program exits 0, the bare process exits 0.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import catalog
from ragen_bench.sandbox import probe, run_python
from tests.benchmarks.checks import recorded
from tests.test_human_eval import env  # noqa: F401  (the fixture: one env for the module)

ENV_ID = "RAGEN/HumanEval-v0"
ROUNDS = 30
pytestmark = pytest.mark.skipif(catalog.missing_extra(ENV_ID) is not None or probe() is not None,
                                reason="needs the 'code' extra and a working sandbox")
WRONG = "def has_close_elements(numbers, threshold):\n    return False\n"


def test_reset_and_passing_step(benchmark, env) -> None:
    env.reset(seed=0)
    answer = env.unwrapped.optimal_action()
    results: list = []
    benchmark.pedantic(recorded(lambda: (env.reset(seed=0), env.step(answer)), results), rounds=ROUNDS, iterations=1)
    assert results and all(step[1] == 1.0 and step[0] == "All tests passed." for _, step in results)


def test_reset_and_failing_step(benchmark, env) -> None:
    results: list = []
    benchmark.pedantic(recorded(lambda: (env.reset(seed=0), env.step(WRONG)), results), rounds=ROUNDS, iterations=1)
    assert results and all(step[1] == 0.0 and "AssertionError" in step[0] for _, step in results)


def test_sandbox_empty_program(benchmark) -> None:
    results: list = []
    benchmark.pedantic(recorded(lambda: run_python("pass"), results), rounds=ROUNDS, iterations=1)
    assert results and all(outcome.ok for outcome in results)


def test_bare_python_process(benchmark) -> None:
    results: list = []
    command = [sys.executable, "-S", "-c", "pass"]
    benchmark.pedantic(recorded(lambda: subprocess.run(command, check=False).returncode, results),
                       rounds=ROUNDS, iterations=1)
    assert results and set(results) == {0}
