"""How an answer is graded: the dataset's own scorer, except where it would run the answer or reward a hedge.

Three kinds of dataset, one entry point (:func:`grade`):

- **Parsed here** (:data:`PARSED`): reasoning-gym 0.1.25's scorer for these hands the answer
  to ``eval`` or ``sympy.parse_expr`` (Python), so a reply could run code or hang the
  process.  Their rule is restated on a reader of our own (:mod:`.safe_math` for
  expressions, :func:`read_literal` for Python-style lists), with the library's credit for
  every answer that reader admits; ``tests/test_reasoning_gym_grading.py`` finds these
  datasets by watching every scorer, not from this list.
- **Held to one value** (:data:`STRICT`): the library's scorer is safe but pays for a
  hedge (both options of a yes/no, a list holding the answer, the question echoed).  The
  answer must first match the form the question asks for (one number, one word, one of
  the options); partial credit for text that merely contains the answer is dropped.
- Every other dataset: the library's ``score_answer``.

Every grade runs under a work budget (:data:`CALL_BUDGET` Python calls, counted, so the
bound is the same on every machine): a grade over it is a failed answer, never a hang.
"""

from __future__ import annotations

import ast
import functools
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import FrameType
from typing import Any

from ragen_bench.envs.reasoning_gym import safe_math

# Python function calls one grade may make.  The panels' most expensive reference answer
# (an intermediate_integration simplify) takes about 30,000; this is 60 times that.
CALL_BUDGET = 2_000_000
# A Python-style list answer: at most this many characters and items.
MAX_LITERAL_CHARS = 20_000
MAX_LITERAL_ITEMS = 10_000

Grader = Callable[[str, Mapping[str, Any], Any], float]


class OverBudget(Exception):
    """A grade made more than :data:`CALL_BUDGET` calls."""


def grade(dataset: str, data: Any, item: Mapping[str, Any], answer: str) -> float:
    """``answer``'s score in ``[0, 1]`` (0 for an answer the grader cannot read or that exhausts the budget)."""
    grader = grader_of(dataset, data)
    try:
        score = float(within_budget(lambda: grader(answer, item, data)))
    except Exception:  # noqa: BLE001  an answer that makes a scorer fail (or run over) gets no credit
        return 0.0
    return min(max(score, 0.0), 1.0) if score == score else 0.0  # NaN scores nothing


def grader_of(dataset: str, data: Any) -> Grader:
    """The grader :func:`grade` uses for ``dataset`` (``data``: its reasoning-gym dataset object)."""
    if dataset in PARSED:
        return PARSED[dataset]
    if dataset in STRICT:
        return functools.partial(_strict, STRICT[dataset])
    if uses_default_scorer(data):
        return exact_match
    return _library


def uses_default_scorer(data: Any) -> bool:
    """Whether the dataset keeps reasoning-gym's base ``score_answer``: exact match, or for an answer
    that merely contains the stored one, ``len(stored) / len(answer)`` (so a list of every number
    up to 1000 earns credit on any numeric question).  Those datasets are graded by :func:`exact_match`."""
    from reasoning_gym.dataset import ProceduralDataset

    return type(data).score_answer is ProceduralDataset.score_answer


def exact_match(answer: str, item: Mapping[str, Any], data: Any) -> float:
    """1 for the stored answer exactly (as the library's first test), 0 for anything else."""
    return 1.0 if answer == item["answer"] else 0.0


def _library(answer: str, item: Mapping[str, Any], data: Any) -> float:
    return data.score_answer(answer, item)


def within_budget(work: Callable[[], float], budget: int = CALL_BUDGET) -> float:
    """``work()``, raising :class:`OverBudget` once it has made ``budget`` Python calls.

    Counting calls with a trace function works in any thread and gives the same bound on
    every machine, which a wall-clock timer would not (a grade must not depend on load).
    A tracer already installed (a debugger, coverage) is suspended for the grade and restored.
    """
    calls = 0

    def count(frame: FrameType, event: str, arg: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == budget + 1:  # once: a generator closed while unwinding must not raise again
            raise OverBudget(f"over {budget} calls")

    previous = sys.gettrace()
    sys.settrace(count)
    try:
        return work()
    finally:
        sys.settrace(previous)


# -- held to one value ----------------------------------------------------------------------


@dataclass(frozen=True)
class AnswerForm:
    """The form a strict dataset's answer must have: ``pattern``, matched against the stripped
    answer (case-insensitive, ``.`` spans lines), described by ``why`` in the card."""

    pattern: str
    why: str
    # Whether the library's partial credit stands for an answer in the form (it rewards a near
    # value, not text around the answer); otherwise only full credit counts.
    partial: bool = False

    def admits(self, answer: str) -> bool:
        return re.fullmatch(self.pattern, answer.strip(), flags=re.IGNORECASE | re.DOTALL) is not None


def _strict(form: AnswerForm, answer: str, item: Mapping[str, Any], data: Any) -> float:
    """The library's credit for an answer in ``form``, nothing for anything else; partial credit
    only where ``form.partial`` (the others pay text that shares letters or numbers with the answer)."""
    if not form.admits(answer):
        return 0.0
    credit = _credit(answer, item, data)
    return credit if form.partial or credit == 1.0 else 0.0


def _credit(answer: str, item: Mapping[str, Any], data: Any) -> float:
    # game_of_life_halting's scorer compares bool(answer) with bool(stored): every non-empty
    # answer is "right", since both "True" and "False" are non-empty strings.
    if item["metadata"].get("source_dataset") == "game_of_life_halting":
        return 1.0 if answer.strip().lower() == str(item["answer"]).lower() else 0.0
    return _library(answer, item, data)


_NUMBER = r"[-+]?(\d[\d,]*(\.\d*)?|\.\d+)"
ONE_NUMBER = AnswerForm(_NUMBER, "one number")
ONE_WORD = AnswerForm(r"\S+", "one word, no spaces")

# The datasets whose own scorers paid a hedge in the scan of tests/test_reasoning_gym_grading.py.
STRICT: dict[str, AnswerForm] = {
    "arc_agi": AnswerForm(r"\S.*", "a board (an empty answer parsed as one and earned 0.05)"),
    "rearc": AnswerForm(r"\S.*", "a board (an empty answer parsed as one and earned 0.05)"),
    "chain_sum": ONE_NUMBER,
    "gsm_symbolic": AnswerForm(_NUMBER, "one number (the library reads the first number in the text)"),
    "emoji_mystery": AnswerForm(r"[^\n]+", "one sentence (the library pays letters in place to any text as long)"),
    "figlet_font": AnswerForm(r"[a-z ]+", "one word of letters (the library pays 0.1 a letter in place)"),
    "game_of_life_halting": AnswerForm(r"true|false", "True or False (the library pays any non-empty text)"),
    "graph_color": AnswerForm(r"\{.*\}", "one JSON object"),
    "knights_knaves": AnswerForm(r"[^\n]+", "one line of roles (the library pays 0.3 and up for some roles right)"),
    "letter_jumble": AnswerForm(r"[a-z ]+", "words of letters (the library pays words in place)"),
    "manipulate_matrix": AnswerForm(r"[-\d\s]+", "the matrix's numbers (the library pays for text containing them)"),
    "products": ONE_NUMBER,
    "quantum_lock": AnswerForm(r"[a-c](\s*(→|->|,)?\s*[a-c])*",
                               "buttons A-C only (the library reads every A, B or C in the text)", partial=True),
    "time_intervals": AnswerForm(r"(?=\S)(\d+ days?)?,?\s*(\d+(:\d+)*(\.\d+)?)?",
                                 "one duration (the library reads the first number in the text)", partial=True),
    "mini_sudoku": AnswerForm(r"[\d_\s]+", "the grid's digits (the library pays for digits in place)"),
    "sokoban": AnswerForm(r"[udlr]+", "moves U, D, L, R only (the library plays every character, so text can solve)"),
    "sudoku": AnswerForm(r"[\d_\s]+", "the grid's digits (the library pays for digits in place)"),
    "spell_backward": ONE_WORD,
    "word_sorting": AnswerForm(r"[^,]+(,[^,]+)*", "one comma-separated list (the library pays words in place)"),
}


# -- parsed here --------------------------------------------------------------------------


def read_literal(text: str) -> Any:
    """A Python-style literal of lists, tuples, ints and strings, read as data (never evaluated).

    :class:`ValueError` for anything else (names, calls, operators but a leading minus) or
    over :data:`MAX_LITERAL_CHARS` / :data:`MAX_LITERAL_ITEMS`.
    """
    if len(text) > MAX_LITERAL_CHARS:
        raise ValueError(f"longer than {MAX_LITERAL_CHARS} characters")
    tree = ast.parse(text.strip(), mode="eval").body
    if sum(1 for _ in ast.walk(tree)) > MAX_LITERAL_ITEMS:
        raise ValueError(f"more than {MAX_LITERAL_ITEMS} items")
    return _literal(tree)


def _literal(node: ast.AST) -> Any:
    if isinstance(node, (ast.List, ast.Tuple)):
        values = [_literal(element) for element in node.elts]
        return values if isinstance(node, ast.List) else tuple(values)
    if isinstance(node, ast.Constant) and type(node.value) in (int, str):
        return node.value
    if (isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant)
            and type(node.operand.value) is int):
        return -node.operand.value
    raise ValueError(f"not a literal of lists, ints and strings: {type(node).__name__}")


def _literal_credit(answer: str, to_text: Callable[[Any], str], accepted: Callable[[str], bool]) -> bool:
    """Whether ``answer``, read as a literal and written out by ``to_text``, is an accepted answer."""
    try:
        return accepted(to_text(read_literal(answer)))
    except (ValueError, TypeError, SyntaxError, RecursionError, MemoryError):
        return False


def binary_matrix(answer: str, item: Mapping[str, Any], data: Any) -> float:
    """1 for the matrix as text; 0.1 for it as a list of lists (the library's ``eval`` path)."""
    oracle = item["answer"]
    if answer == oracle:
        return 1.0
    return 0.1 if _literal_credit(answer, data._matrix_to_str, oracle.__eq__) else 0.0


def spiral_matrix(answer: str, item: Mapping[str, Any], data: Any) -> float:
    """1 for the numbers as text (stripped); 0.1 for them as a list."""
    oracle, answer = item["answer"].strip(), answer.strip()
    if not answer:
        return 0.0
    if answer == oracle:
        return 1.0
    return 0.1 if _literal_credit(answer, lambda value: " ".join(str(x) for x in value), oracle.__eq__) else 0.0


def string_insertion(answer: str, item: Mapping[str, Any], data: Any) -> float:
    """1 for the string; 0.1 for it as a list of characters."""
    oracle = item["answer"]
    if answer == oracle:
        return 1.0
    return 0.1 if _literal_credit(answer, "".join, oracle.__eq__) else 0.0


def n_queens(answer: str, item: Mapping[str, Any], data: Any) -> float:
    """1 for a valid board as text; 0.5 for one as a list of rows."""
    valid = item["metadata"]["valid_answers"]
    if answer in valid:
        return 1.0
    return 0.5 if _literal_credit(answer, data._board_to_string, valid.__contains__) else 0.0


# countdown and puzzle24 pay 0.01 for any attempt and 0.05 for the right numbers (countdown).
_ATTEMPT, _RIGHT_NUMBERS = 0.01, 0.05


def countdown(answer: str, item: Mapping[str, Any], data: Any) -> float:
    """1 for an expression of exactly the given numbers equal to the target (within 1e-6, as
    ``numpy.isclose``); 0.05 for the right numbers; 0.01 for any other attempt."""
    if not answer.strip():
        return _ATTEMPT
    try:
        value = safe_math.arithmetic(answer)
    except safe_math.Unreadable:
        return _ATTEMPT
    metadata = item["metadata"]
    if sorted(int(n) for n in re.findall(r"\b\d+\b", answer)) != sorted(metadata["numbers"]):
        return _RIGHT_NUMBERS
    target = metadata["target"]
    return 1.0 if abs(float(value) - target) <= 1e-6 + 1e-5 * abs(target) else _RIGHT_NUMBERS


def puzzle24(answer: str, item: Mapping[str, Any], data: Any) -> float:
    """1 for an expression of exactly the four given numbers equal to 24; 0.01 otherwise.

    Stricter than the library's, which truncates the value (49/2 counts as 24) and checks
    only that four numbers in range appear (so ``6*4*1*1`` won every item).
    """
    try:
        value = safe_math.arithmetic(answer)
    except safe_math.Unreadable:
        return _ATTEMPT
    used = sorted(int(n) for n in re.findall(r"\b\d+\b", answer))
    return 1.0 if value == 24 and used == sorted(item["metadata"]["numbers"]) else _ATTEMPT


def integration(answer: str, item: Mapping[str, Any], data: Any) -> float:
    """1 when the answer's derivative simplifies to the integrand, else 0.

    The answer's names are the item's variable, the functions and constants of
    :mod:`.safe_math`, and single letters as constants; ``Integral(...)`` (which the
    library's ``parse_expr`` admitted, paying for the question restated) is not an answer.
    """
    import sympy

    metadata = item["metadata"]
    variable = metadata["variable"]
    try:
        candidate = safe_math.calculus(answer, variable)
    except safe_math.Unreadable:
        return 0.0
    integrand = safe_math.calculus(metadata["integrand"], variable)
    difference = sympy.diff(candidate, sympy.Symbol(variable)) - integrand
    if _differs_somewhere(difference, sympy.Symbol(variable)):
        return 0.0
    return 1.0 if sympy.simplify(difference) == 0 else 0.0


def integration_reference(item: Mapping[str, Any]) -> str:
    """The stored answer, or where it is an unevaluated ``Integral(...)`` (which :func:`integration`
    does not admit), the closed form sympy finds for the integrand, plus ``C``."""
    import sympy

    answer = item["answer"]
    if "Integral" not in answer:
        return answer
    metadata = item["metadata"]
    variable = metadata["variable"]
    antiderivative = sympy.integrate(safe_math.calculus(metadata["integrand"], variable), sympy.Symbol(variable))
    return f"{antiderivative} + C"


# Where a wrong antiderivative shows itself without simplify (which can take millions of calls
# to fail on a wrong trigonometric answer): points away from the integrands' singularities.
_PROBE_POINTS = ("0.3711", "1.1337", "2.4213")


def _differs_somewhere(difference: Any, variable: Any) -> bool:
    """Whether ``difference`` is clearly non-zero at one of :data:`_PROBE_POINTS` (30 digits).

    Only a clear non-zero decides: a point where the value is not a finite real number (a
    singularity, a free constant) leaves the verdict to ``simplify``, as the library has it.
    """
    import sympy

    for point in _PROBE_POINTS:
        value = difference.evalf(30, subs={variable: sympy.Float(point, 30)})
        if value.is_real and value.is_finite and value.is_Number and abs(value) > 1e-12:
            return True
    return False


INTEGRATION = ("simple_integration", "intermediate_integration")
PARSED: dict[str, Grader] = {
    "binary_matrix": binary_matrix,
    "spiral_matrix": spiral_matrix,
    "string_insertion": string_insertion,
    "n_queens": n_queens,
    "countdown": countdown,
    "puzzle24": puzzle24,
    **dict.fromkeys(INTEGRATION, integration),
}
