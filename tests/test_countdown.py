"""Countdown: generator, exhaustive solver, RAGEN's scoring, the bounded parser, files."""

from __future__ import annotations

import ast
import contextlib
import json
from fractions import Fraction
from pathlib import Path

import gymnasium
import pytest
from gymnasium.error import InvalidAction
from gymnasium.utils import seeding
from hypothesis import given, settings
from hypothesis import strategies as st

import ragen_bench
from ragen_bench.envs.countdown import CountdownEnv, arith, solver
from ragen_bench.envs.countdown import env as countdown
from ragen_bench.envs.countdown.env import generate_instance, score
from ragen_bench.envs.datafiles import InstanceFileError
from tests import env_contract

ENV_ID = "RAGEN/Countdown-v0"


def make(**kwargs) -> CountdownEnv:
    return gymnasium.make(ENV_ID, **kwargs).unwrapped


# -- the parser's work, counted (a bound that machine load cannot move) --------------------

# Per input character, at most: this many parser calls (expression/term/factor/peek/take;
# the worst measured is 5, an opening parenthesis), one token match, one arithmetic step.
PARSER_CALLS_PER_CHAR = 8
# Operands stay within MAX_MAGNITUDE; one product of two such operands is the largest
# number ever formed (then rejected).
MAX_OPERAND_BITS = 2 * arith.MAX_MAGNITUDE.bit_length()


@contextlib.contextmanager
def parser_work():
    """Counts what ``arith.evaluate`` does while the block runs."""
    work = {"parser_calls": 0, "token_matches": 0, "arithmetic": 0, "max_bits": 0}
    with pytest.MonkeyPatch.context() as patch:
        for name in ("expression", "term", "factor", "peek", "take"):
            original = getattr(arith._Parser, name)

            def counting(self, *args, _original=original):
                work["parser_calls"] += 1
                return _original(self, *args)

            patch.setattr(arith._Parser, name, counting)
        bounded = arith._bounded

        def counting_bounded(value):
            work["arithmetic"] += 1
            work["max_bits"] = max(work["max_bits"], value.numerator.bit_length(), value.denominator.bit_length())
            return bounded(value)

        patch.setattr(arith, "_bounded", counting_bounded)
        pattern = arith._TOKEN

        class CountingPattern:
            def match(self, *args):
                work["token_matches"] += 1
                return pattern.match(*args)

        patch.setattr(arith, "_TOKEN", CountingPattern())
        yield work


def assert_linear_work(work: dict[str, int], text: str) -> None:
    """The parse of ``text`` did work linear in its (bounded) length, on bounded numbers."""
    chars = min(len(text), arith.MAX_CHARS) + 1  # longer text is refused before any work
    assert work["parser_calls"] <= PARSER_CALLS_PER_CHAR * chars, work
    assert work["token_matches"] <= chars and work["arithmetic"] <= chars, work
    assert work["max_bits"] <= MAX_OPERAND_BITS, work


def test_chat_facing_attributes():
    env = make()
    assert env.action_names is None and isinstance(env.action_space, gymnasium.spaces.Text)


def test_global_random_states_are_untouched():
    env_contract.assert_global_rngs_untouched(ENV_ID, ["1 + 2"])


# -- generator and solver ------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_every_generated_instance_is_solvable_and_its_reference_scores_1(seed):
    numbers, target = generate_instance(seeding.np_random(seed)[0], 3, 4, 99, 100)
    assert 3 <= len(numbers) <= 4 and all(1 <= n <= 99 for n in numbers) and 1 <= target <= 100
    reference = solver.solve(numbers, target)
    assert reference is not None and score(reference, numbers, target) == 1.0


def test_env_reset_exposes_instance_and_reference_solution():
    env = make()
    obs, info = env.reset(seed=42)
    assert str(info["target"]) in obs and all(str(n) in obs for n in info["numbers"])
    # The reference is checked against the instance, not against itself.
    parsed = arith.evaluate(env.optimal_action())
    assert sorted(parsed.numbers) == sorted(info["numbers"]) and parsed.value == info["target"]
    _, reward, terminated, truncated, step_info = env.step(env.optimal_action())
    assert (reward, terminated, truncated, step_info["success"]) == (1.0, True, False, True)
    assert env.optimal_action() is None


def test_solver_finds_known_solutions_and_rejects_impossible_targets():
    assert arith.evaluate(solver.solve([1, 2, 3, 4], 24)).value == 24
    assert arith.evaluate(solver.solve([3, 3, 8, 8], 24)).value == 24  # needs 8 / (3 - 8 / 3)
    assert solver.solve([2, 2], 5) is None
    assert solver.solve([1, 1, 1], 10) is None
    assert Fraction(1, 4) in solver.reachable_values([1, 2, 2])  # non-integer intermediate values count


def _naive_reachable(values: tuple[Fraction, ...]) -> set[Fraction]:
    """Oracle: replace any two entries by any combination, until one is left."""
    if len(values) == 1:
        return {values[0]}
    found = set()
    for i in range(len(values)):
        for j in range(len(values)):
            if i == j:
                continue
            a, b = values[i], values[j]
            rest = tuple(v for k, v in enumerate(values) if k not in (i, j))
            for combined in [a + b, a - b, a * b] + ([a / b] if b else []):
                found |= _naive_reachable(rest + (combined,))
    return found


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=30), min_size=1, max_size=3))
def test_subset_search_reaches_exactly_what_pairwise_search_reaches(numbers):
    assert solver.reachable_values(numbers) == _naive_reachable(tuple(Fraction(n) for n in numbers))
    for value in list(solver.reachable_values(numbers))[:20]:
        if value.denominator == 1:
            assert arith.evaluate(solver.solve(numbers, int(value))).value == value


# -- scoring (RAGEN's scheme) ----------------------------------------------------------------


@pytest.mark.parametrize(
    "answer, expected",
    [
        ("(6 - 2) * 5", 1.0),
        ("5 × (6 − 2)", 1.0),
        ("5x(6-2)", 1.0),
        ("(6 - 2) + 5", 0.1),  # right numbers, wrong value
        ("6 - 2 * 5", 0.1),
        ("(6 - 2) * 5 * 1", 0.0),  # an extra number
        ("(6 - 2) * 2 * 2 + 4", 0.0),
        ("6 * 5 - 10", 0.0),  # wrong numbers
        ("(6 - 2) * 5 = 20", 0.0),  # not an expression
        ("20", 0.0),
        ("6 / (2 - 2) * 5", 0.0),
        ("", 0.0),
        ("<answer>(6-2)*5</answer>", 0.0),
    ],
)
def test_rewards_follow_ragens_scheme(answer, expected):
    assert score(answer, (6, 2, 5), 20) == expected


def test_well_formed_means_the_exact_multiset_of_numbers():
    assert score("3 + 3 + 4", (3, 4, 3), 10) == 1.0
    assert score("3 + 4 + 4", (3, 4, 3), 10) == 0.0


@pytest.mark.parametrize("hostile", ["9" * 100_000, "(" * 50_000 + "1" + ")" * 50_000, "-" * 10_000 + "1"])
def test_over_long_answers_are_outside_the_action_space(hostile):
    env = make()
    env.reset(seed=0)
    assert not env.action_space.contains(hostile)
    with pytest.raises(InvalidAction, match="CountdownEnv: invalid action .* at most 256 characters"):
        env.step(hostile)
    assert env.step("1")[2]  # the refused answer did not end the episode


@pytest.mark.parametrize(
    "hostile",
    [
        "-" * 200 + "1",  # short enough to parse: the nesting bound rejects it
        "(" * 100 + "1" + ")" * 100,
        "__import__('os').system('echo hacked')",
        "2 ** 99999999",
        "*".join(["999999999999"] * 19),
        "1/" * 120 + "1",
        "\x00" * 256,
    ],
)
def test_hostile_answers_score_zero_fast(hostile):
    env = make()
    env.reset(seed=0)
    with parser_work() as work:
        _, reward, terminated, _, info = env.step(hostile)
    assert reward == 0.0 and terminated and not info["success"]
    assert_linear_work(work, hostile)  # no exponential blowup: a few parser calls per character


@pytest.mark.parametrize("action", [None, 6, 6.0, b"3 * 2", ["3 * 2"], ("3", "*", "2")])
def test_non_string_actions_are_refused(action):
    env = make()
    env.reset(seed=0)
    with pytest.raises(InvalidAction, match="CountdownEnv: invalid action"):
        env.step(action)


# -- the parser --------------------------------------------------------------------------

_expressions = st.recursive(
    st.integers(min_value=0, max_value=999).map(lambda n: (str(n), Fraction(n))),
    lambda inner: st.tuples(inner, st.sampled_from("+-*/"), inner),
    max_leaves=8,
)


def _render(tree) -> tuple[str, Fraction | None]:
    """Text and exact value (None on division by zero) of a generated expression tree."""
    if isinstance(tree[1], Fraction):
        return tree
    (left_text, left), op, (right_text, right) = _render(tree[0]), tree[1], _render(tree[2])
    if left is None or right is None or (op == "/" and right == 0):
        return f"({left_text} {op} {right_text})", None
    value = {"+": left + right, "-": left - right, "*": left * right, "/": left / right if right else None}[op]
    return f"({left_text} {op} {right_text})", value


@settings(max_examples=300, deadline=None)
@given(_expressions)
def test_parser_agrees_with_exact_arithmetic_on_generated_expressions(tree):
    text, value = _render(tree)
    result = arith.evaluate(text)
    if value is None:
        assert result is None
    else:
        assert result is not None and result.value == value


@settings(max_examples=500, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("0123456789+-*/()x×÷ .=_a\n")), max_size=300) | st.text(max_size=300))
def test_parser_never_raises_and_stays_fast(text):
    with parser_work() as work:
        result = arith.evaluate(text)
    assert_linear_work(work, text)
    assert result is None or isinstance(result.value, Fraction)


@pytest.mark.parametrize(
    "text",
    [
        "(" * 32 + "1" + ")" * 32,  # as deep as MAX_DEPTH allows
        "+".join(["1"] * 128),
        "/".join(["7"] * 128),
        "(" * 15 + "999999999999" + "*999999999999)" * 15,  # grows past the magnitude bound
        "+".join(["((((1+2)*3)/4)-5)"] * 14),
        "1" * 300,  # over MAX_CHARS: refused before any work
    ],
)
def test_parser_work_is_linear_on_the_longest_and_deepest_inputs(text):
    with parser_work() as work:
        arith.evaluate(text)
    assert_linear_work(work, text)
    assert (work["parser_calls"] > 0) == (len(text) <= arith.MAX_CHARS)  # the counters see the parse



def test_parser_precedence_and_unary_minus():
    assert arith.evaluate("2 + 3 * 4").value == 14
    assert arith.evaluate("(2 + 3) * 4").value == 20
    assert arith.evaluate("8 / 4 / 2").value == 1  # left associative
    assert arith.evaluate("-3 + 5").value == 2 and arith.evaluate("-3 + 5").numbers == (3, 5)
    assert arith.evaluate("7 ÷ 2").value == Fraction(7, 2)
    for bad in ("2 3", "()", "1 +", "(1", "1)", "1.5 + 2", "٣ + 1", "1 ** 2"):
        assert arith.evaluate(bad) is None, bad


def test_model_text_never_reaches_eval_exec_or_compile():
    forbidden = {"eval", "exec", "compile", "__import__"}
    for module in (arith, countdown, solver):
        tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
        called = {
            node.func.id for node in ast.walk(tree) if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
        }
        assert not called & forbidden, module.__name__


# -- local instance files -------------------------------------------------------------------


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    return path


def test_loads_tinyzero_style_jsonl_and_keeps_solvable_rows(tmp_path):
    rows = [{"target": 24, "nums": [1, 2, 3, 4]}, {"target": 5, "nums": [2, 2]}, {"target": 10, "nums": [7, 3, 1]}]
    env = make(data_path=str(_write_jsonl(tmp_path / "cd.jsonl", rows)))
    assert env.instances == [((1, 2, 3, 4), 24), ((7, 3, 1), 10)]  # 2 + 2 can never make 5
    assert env.reset(seed=0)[1]["target"] == 24 and env.reset(seed=3)[1]["target"] == 10


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"target": 24, "nums": [1, 2, 3, 4]}, {"nums": [1, 2]}], "line 2: missing field 'target'"),
        ([{"target": "x", "nums": [1, 2]}], "line 1: field 'target'"),
        ([{"target": 3, "nums": [1]}], "line 1: field 'nums': expected 2 to 5 numbers"),
        ([[1, 2]], "line 1: expected a JSON object"),
    ],
)
def test_malformed_files_name_the_line_and_field(tmp_path, rows, message):
    with pytest.raises(InstanceFileError, match=message):
        CountdownEnv(data_path=_write_jsonl(tmp_path / "bad.jsonl", rows))


def test_missing_or_broken_files_fail_clearly(tmp_path):
    with pytest.raises(InstanceFileError, match="no such file"):
        CountdownEnv(data_path=tmp_path / "absent.jsonl")
    (tmp_path / "broken.jsonl").write_text('{"target": 1,\n', encoding="utf-8")
    with pytest.raises(InstanceFileError, match="line 1: not valid JSON"):
        CountdownEnv(data_path=tmp_path / "broken.jsonl")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(InstanceFileError, match="Parquet"):
        CountdownEnv(data_path=tmp_path / "junk.parquet")


def test_reads_parquet_when_pyarrow_is_installed(tmp_path):
    pandas = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    path = tmp_path / "cd.parquet"
    pandas.DataFrame({"target": [24, 10], "nums": [[1, 2, 3, 4], [7, 3, 1]]}).to_parquet(path)
    assert CountdownEnv(data_path=path).instances == [((1, 2, 3, 4), 24), ((7, 3, 1), 10)]


def test_registered_id_plays_the_documented_instances():
    # The card promises 3-4 numbers in 1..99 and a target in 1..100: check what the id
    # generates, and that it spans those ranges rather than a narrower one.
    env = make()
    counts, numbers, targets = set(), set(), set()
    for seed in range(1000):
        _, info = env.reset(seed=seed)
        counts.add(len(info["numbers"]))
        numbers.update(info["numbers"])
        targets.add(info["target"])
    assert counts == {3, 4}
    assert min(numbers) >= 1 and max(numbers) == 99 and min(numbers) <= 3
    assert min(targets) >= 1 and max(targets) == 100 and min(targets) <= 3
    assert ENV_ID in ragen_bench.ENV_IDS
