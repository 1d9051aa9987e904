"""One reasoning-gym dataset as a question-answer episode, scored by the dataset itself."""

from __future__ import annotations

import contextlib
import functools
import importlib
import io
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragen_bench.envs.base import AnyText, MissingExtra, TextEnv, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, OneOf, setting
from ragen_bench.envs.reasoning_gym import grading
from ragen_bench.envs.reasoning_gym.ids import DATASETS, INSTALL_HINT, LIBRARY, REFERENCE_METADATA_KEYS

if TYPE_CHECKING:
    from types import ModuleType

    from reasoning_gym.dataset import ProceduralDataset

DIFFICULTIES = ("default", "easy", "hard")
MAX_QUESTION_CHARS = 100_000
MAX_ANSWER_CHARS = 10_000
FULL_CREDIT = "Correct: full credit."


class DatasetError(RuntimeError):
    """reasoning-gym failed to import, or to build or generate a dataset (the message names it and the seed)."""


def load_library() -> ModuleType:
    """``reasoning_gym`` (about 2 s to import), or the one-line error naming the extra."""
    try:
        return importlib.import_module(LIBRARY)
    except Exception as error:  # a broken install is reported (envs verify), not crashed on
        if isinstance(error, ModuleNotFoundError) and (error.name or "").split(".")[0] == LIBRARY:
            raise MissingExtra(INSTALL_HINT) from None
        raise DatasetError(f"{LIBRARY} failed to import: {type(error).__name__}: {error}") from error


def make_item(library: Any, dataset: str, difficulty: str, seed: int) -> tuple[Any, dict[str, Any]]:
    """``(dataset object, item)`` of ``seed``: item 0 of the dataset built with ``seed=seed, size=1``.

    That is how reasoning-gym itself addresses an item (most generators draw item ``i``
    from ``Random(seed + i)``; a few draw per-dataset choices from ``Random(seed)``), so the
    item depends on the seed alone.  ``easy``/``hard`` put every attribute of the dataset's
    curriculum at its first or last level, ranges narrowed to that level's own segment
    (reasoning-gym's ``upper_bound`` mode; its default mode widens them to every easier level).
    """
    # Some generators print (bf runs its programs, whose output goes to stdout): kept out of
    # the user's stdout, which may be a table, a JSON stream or a server's protocol.
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            data = _dataset(library, dataset, difficulty, seed)
            return data, data[0]  # items are generated when indexed
    except Exception as error:  # a generator bug is reported with the dataset and seed, not as a bare trace
        raise DatasetError(f"reasoning-gym '{dataset}' ({difficulty}) failed on seed {seed}: "
                           f"{type(error).__name__}: {error}") from error


def _dataset(library: ModuleType, dataset: str, difficulty: str, seed: int) -> ProceduralDataset:
    if difficulty == "default":
        return library.create_dataset(dataset, seed=seed, size=1)
    data_class, _ = library.factory.DATASETS[dataset]
    curriculum = library.factory.create_curriculum(dataset)
    for name, attribute in curriculum.attributes.items():
        curriculum.set_attr_level(name, 0 if difficulty == "easy" else len(attribute.levels) - 1)
    coaching = library.coaching.base_curriculum
    context = coaching.DefaultCurriculumContext(mode=coaching.RangeAttributeMode.UPPER_BOUND)
    return data_class(config=curriculum.generate_configuration({"seed": seed, "size": 1}, context))


def reference_answer(dataset: str, item: dict[str, Any]) -> str:
    """The answer the dataset stores, or for :data:`REFERENCE_METADATA_KEYS` its generator's own solution.

    ``propositional_logic`` stores no answer; its scorer gives full credit to a conclusion that
    follows from the premises, has an operator and is no tautology.  The premises' conjunction
    is such a conclusion unless every premise is a tautology, and then every conclusion that
    follows is one too (0.25 at most, which the conjunction gets): it is the best answer to
    every item.  (The generator's ``example_answer`` misses some items the conjunction wins.)
    The integration datasets store ``Integral(...)`` where sympy found no closed form when the
    item was made; their reference is then the closed form (:func:`grading.integration_reference`).
    """
    if dataset == "propositional_logic":
        return functools.reduce(lambda left, right: f"({left} ∧ {right})", item["metadata"]["premises"])
    if dataset in grading.INTEGRATION:
        return grading.integration_reference(item)
    key = REFERENCE_METADATA_KEYS.get(dataset)
    answer = item["answer"] if key is None else item["metadata"][key]
    # graph_color's solution is a {vertex: colour} dict; its scorer reads JSON.
    return answer if isinstance(answer, str) else json.dumps(answer)


def feedback(score: float, attempts_left: int) -> str:
    """What the agent reads after an answer."""
    if score == 1.0:
        return FULL_CREDIT
    verdict = f"Score {score:.3g} of 1."
    return f"{verdict} Try again ({attempts_left} attempts left)." if attempts_left else f"{verdict} No attempts left."


@dataclass(frozen=True)
class ReasoningGymConfig(EnvConfig):
    """ReasoningGymEnv's arguments (besides ``render_mode``).  Whether ``difficulty`` fits the
    dataset (only those with a curriculum take 'easy'/'hard') needs the library, so the env
    checks that when it loads it."""

    dataset: str = setting(rule=OneOf(DATASETS), help="One of the names in ragen_bench.data.reasoning_gym.DATASETS.")
    max_attempts: int = setting(1, rule=IntIn(1, 100), help="Answers allowed before the episode ends.")
    difficulty: str = setting(
        "default",
        rule=OneOf(DIFFICULTIES),
        help="'default': the dataset's default config; 'easy'/'hard': every curriculum attribute at its "
        "first/last level (registered ids use the default).",
    )


class ReasoningGymEnv(TextEnv):
    """Answer one question of a reasoning-gym dataset; the dataset's own scorer grades it.

    ## Description
    Each of reasoning-gym's procedural datasets (arithmetic, algebra, logic puzzles,
    ciphers, grid games, ...) generates questions with a reference answer and a
    ``score_answer`` that grades any answer text in ``[0, 1]``.  An episode is one
    question; the agent answers in the form the question asks for.  Full credit
    (score 1) is a success.  By default there is one attempt; with ``max_attempts=N``
    a lower score is reported back and the agent may answer again.

    ## Action Space
    ``AnyText(0, 10000)``: any ``str`` of at most 10000 characters is an answer; longer
    texts and non-``str`` raise ``InvalidActionError``.  The dataset's scorer decides
    what an answer is worth (see :mod:`.grading`: no answer is ever run as code, a hedge
    earns nothing, and a grade has a bounded cost); an answer it cannot read scores 0.

    ## Observation Space
    ``AnyText(1, 100000)``: the question (reset), then the feedback (step):
    ``"Correct: full credit."`` or ``"Score 0.5 of 1. Try again (2 attempts left)."``.

    ## Starting State
    Seed ``s`` is item 0 of the dataset built by reasoning-gym with ``seed=s, size=1``
    (reasoning-gym's own addressing), so the question depends on the seed alone.  Seeds
    are below ``2**32`` (some generators seed numpy with them).

    ## Rewards
    The improvement of the best score so far: an episode's return is its best score
    (1 for a full-credit answer, whatever attempt it came on).

    ## Episode End
    Terminated on full credit, or after ``max_attempts`` answers without it (no attempt is
    left: a terminal state, so Gymnasium's ``check_env`` passes with the default of one).
    Never truncated.
    Answering a finished episode raises ``EpisodeFinishedError``.

    ## Information
    Every call: ``success``, ``level_seed``, ``score`` (the last answer's, 0 before one).
    Reset adds ``optimal_length`` = 1; step adds ``action_is_valid`` (a non-empty answer)
    and ``action_is_effective`` (full credit).

    ## Arguments
    The fields of :class:`ReasoningGymConfig` (``dataset``, required; ``max_attempts``;
    ``difficulty``), ``render_mode="ansi"``
    or ``None``.  Building the env imports reasoning-gym (the ``rg`` extra; a missing
    extra is one ``ImportError`` naming it); a dataset that fails to build or generate
    raises :class:`DatasetError` naming the dataset and seed.

    ## Version History
    * v0: reasoning-gym 0.1.25; items pinned by the panels' checksums.  2026-12-02: graded
      without running answers (:mod:`.grading`), hedges held to one value, the last wrong
      answer terminates instead of truncating; questions and reference answers' scores unchanged.
    """

    action_names = None
    symbol_meanings: dict[str, str] = {}
    instruction = (
        "You are answering a reasoning question from reasoning-gym. Work it out, then reply with the final "
        "answer only, written exactly in the form the question asks for."
    )
    seed_limit = 2**32
    # Smaller panels than the default 256 per split: the 98 ids' items take up to a second each
    # to generate, and `ragen-bench envs verify` regenerates every one.
    split_seeds = {"train": range(10_000, 10_032), "val": range(1000, 1032), "test": range(123, 187)}

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`ReasoningGymConfig`."""
        super().__init__(render_mode)
        config = self._configure(ReasoningGymConfig, kwargs)
        dataset, difficulty = config.dataset, config.difficulty
        # Imported here so that a missing extra fails at make(); the module is not kept (envs pickle).
        library = load_library()
        if difficulty != "default" and dataset not in library.factory.CURRICULA:
            raise ValueError(f"ReasoningGymEnv: '{dataset}' has no curriculum, so only difficulty='default'")
        self.observation_space = AnyText(min_length=1, max_length=MAX_QUESTION_CHARS, charset=_SAMPLE_CHARSET)
        self._set_action_space(AnyText(min_length=0, max_length=MAX_ANSWER_CHARS, charset=_SAMPLE_CHARSET))
        self._data: Any = None
        self.item: dict[str, Any] = {}
        self._attempts = 0
        self._best = 0.0
        self._score = 0.0
        self._text = ""

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        self._data, self.item = make_item(load_library(), self.dataset, self.difficulty, seed)
        self._attempts, self._best, self._score = 0, 0.0, 0.0
        self._text = self.item["question"]
        info = self._info()
        info["optimal_length"] = 1
        return self._text, info

    def _step_action(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        self._score = self._grade(action)
        reward = max(0.0, self._score - self._best)
        self._best = max(self._best, self._score)
        self._attempts += 1
        success = self._score == 1.0
        self._text = feedback(self._score, self.max_attempts - self._attempts)
        info = self._info()
        info["action_is_valid"] = action.strip() != ""
        info["action_is_effective"] = success
        # Out of attempts is a state of the task (the feedback says so), not a time limit: terminated.
        return self._text, reward, success or self._attempts >= self.max_attempts, False, info

    def _grade(self, answer: str) -> float:
        return grading.grade(self.dataset, self._data, self.item, answer)

    def render_text(self) -> str:
        return self._text

    def optimal_action(self, steps_left: int | None = None) -> str | None:
        """The dataset's reference answer (see :func:`reference_answer`)."""
        return None if self._best == 1.0 or not self.item else reference_answer(self.dataset, self.item)

    def _info(self) -> dict[str, Any]:
        return {"success": self._best == 1.0, "level_seed": self.level_seed, "score": self._score}


_SAMPLE_CHARSET = text_charset("0123456789abcdefghijklmnopqrstuvwxyz-., ")
