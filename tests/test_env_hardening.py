"""Hostile settings, answers and data files: each is refused clearly or handled, never hangs.

Every class of defect from the hardening issue has its tests here (the per-id contract
lives in ``test_env_contract_base.py``): constructor arguments, unbounded generator
loops, free-text answers the action space used to refuse, and malformed data files.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_bench.envs.bandit import BanditEnv
from ragen_bench.envs.countdown import CountdownEnv, arith, solver
from ragen_bench.envs.countdown import env as countdown_env
from ragen_bench.envs.datafiles import InstanceFileError
from ragen_bench.envs.frozen_lake import FrozenLakeEnv, levels
from ragen_bench.envs.math_qa import MathQAEnv
from ragen_bench.envs.sokoban import SokobanEnv
from ragen_bench.envs.sokoban.levels import GenerationFailed

# -- constructor arguments ------------------------------------------------------------------

BAD_ARGUMENTS = [
    (SokobanEnv, "dim_room", (6,)),
    (SokobanEnv, "dim_room", "66"),
    (SokobanEnv, "dim_room", 6),
    (SokobanEnv, "dim_room", (2.5, 6)),
    (SokobanEnv, "dim_room", (4, 6)),
    (SokobanEnv, "dim_room", (6, 33)),
    (SokobanEnv, "num_boxes", 0),
    (SokobanEnv, "num_boxes", 1.5),
    (SokobanEnv, "num_boxes", True),
    (SokobanEnv, "num_boxes", "1"),
    (SokobanEnv, "search_depth", 0),
    (SokobanEnv, "search_depth", 5000),  # would overflow the reverse play's recursion
    (SokobanEnv, "max_steps", 0),
    (SokobanEnv, "max_steps", 2.5),
    (SokobanEnv, "max_steps", None),
    (SokobanEnv, "vocabulary", "fancy"),
    (SokobanEnv, "vocabulary", ["default"]),
    (SokobanEnv, "solve_on_reset", "no"),
    (SokobanEnv, "solve_on_reset", 1),
    (SokobanEnv, "solver_max_states", -1),
    (SokobanEnv, "solver_max_states", 1e6),
    (FrozenLakeEnv, "size", 2.5),
    (FrozenLakeEnv, "size", 1),
    (FrozenLakeEnv, "size", 33),
    (FrozenLakeEnv, "size", "4"),
    (FrozenLakeEnv, "frozen_prob", 0),
    (FrozenLakeEnv, "frozen_prob", -0.5),
    (FrozenLakeEnv, "frozen_prob", 1.5),
    (FrozenLakeEnv, "frozen_prob", math.nan),
    (FrozenLakeEnv, "frozen_prob", math.inf),
    (FrozenLakeEnv, "frozen_prob", "0.8"),
    (FrozenLakeEnv, "frozen_prob", True),
    (FrozenLakeEnv, "is_slippery", "no"),
    (FrozenLakeEnv, "is_slippery", 0),
    (FrozenLakeEnv, "is_slippery", None),
    (FrozenLakeEnv, "max_steps", 0),
    (FrozenLakeEnv, "max_steps", 10_001),
    (FrozenLakeEnv, "max_steps", True),
    (FrozenLakeEnv, "solve_on_reset", "yes"),
    (FrozenLakeEnv, "solve_on_reset", 1),
    (BanditEnv, "name_pool", "reversed"),
    (BanditEnv, "name_pool", ["train"]),
    (BanditEnv, "low_risk_name", 7),
    (CountdownEnv, "min_count", 1),
    (CountdownEnv, "max_count", 6),
    (CountdownEnv, "max_count", 2),  # below min_count=3
    (CountdownEnv, "max_number", 0),
    (CountdownEnv, "max_number", 10**9),
    (CountdownEnv, "max_number", 99.5),
    (CountdownEnv, "max_target", 0),
    (CountdownEnv, "max_target", -5),
    (CountdownEnv, "max_target", True),
    (CountdownEnv, "data_path", 3),
    (MathQAEnv, "max_attempts", 0),
    (MathQAEnv, "max_attempts", 1.5),
    (MathQAEnv, "max_attempts", "5"),
    (MathQAEnv, "data_path", 3),
]


@pytest.mark.parametrize("cls, name, value", BAD_ARGUMENTS, ids=lambda v: repr(v)[:30])
def test_bad_constructor_arguments_are_refused_naming_env_and_argument(cls, name, value):
    with pytest.raises((TypeError, ValueError)) as caught:
        cls(**{name: value})
    message = str(caught.value)
    assert message.startswith(f"{cls.__name__}: {name}") and repr(value)[:20] in message, message


@pytest.mark.parametrize(
    "cls, kwargs",
    [
        (SokobanEnv, dict(dim_room=[np.int64(6), 6], num_boxes=np.int32(1), max_steps=np.uint16(50))),
        (FrozenLakeEnv, dict(size=np.int64(4), frozen_prob=np.float32(0.5), is_slippery=np.bool_(False))),
        (FrozenLakeEnv, dict(frozen_prob=1)),  # an int probability is still a number
        (CountdownEnv, dict(min_count=2, max_count=5, max_number=10_000, max_target=10**6)),
        (MathQAEnv, dict(max_attempts=np.int8(3))),
    ],
)
def test_numpy_and_boundary_arguments_are_accepted(cls, kwargs):
    env = cls(**kwargs)
    obs, _ = env.reset(seed=0)
    assert env.observation_space.contains(obs)


# -- generators terminate ---------------------------------------------------------------------


def _count_calls(monkeypatch, module, name: str) -> list[int]:
    calls = [0]
    original = getattr(module, name)

    def counting(*args, **kwargs):
        calls[0] += 1
        return original(*args, **kwargs)

    monkeypatch.setattr(module, name, counting)
    return calls


@pytest.mark.parametrize("seed", range(5))
def test_countdown_with_rarely_reachable_targets_stops_after_the_draw_bound(monkeypatch, seed):
    # Valid but pathological: two numbers up to 10,000 rarely make exactly 1.  The old
    # generator redrew forever; now it gives up after MAX_INSTANCE_DRAWS searches.
    searches = _count_calls(monkeypatch, solver, "reachable_values")
    env = CountdownEnv(min_count=2, max_count=2, max_number=10_000, max_target=1)
    try:
        _, info = env.reset(seed=seed)
    except countdown_env.InstanceGenerationError as error:
        assert "max_target" in str(error) and str(countdown_env.MAX_INSTANCE_DRAWS) in str(error)
        assert searches[0] == countdown_env.MAX_INSTANCE_DRAWS
    else:
        assert info["target"] == 1 and searches[0] <= countdown_env.MAX_INSTANCE_DRAWS


def test_countdown_generation_failure_is_an_error_not_a_hang(monkeypatch):
    monkeypatch.setattr(countdown_env, "MAX_INSTANCE_DRAWS", 3)
    searches = _count_calls(monkeypatch, solver, "reachable_values")
    with pytest.raises(countdown_env.InstanceGenerationError):
        CountdownEnv(min_count=2, max_count=2, max_number=10_000, max_target=1).reset(seed=1)
    assert searches[0] == 3


def test_frozen_lake_with_almost_no_ice_stops_after_the_draw_bound(monkeypatch):
    monkeypatch.setattr(levels, "MAX_LAKE_DRAWS", 5)
    checks = _count_calls(monkeypatch, levels, "shortest_path_length")
    env = FrozenLakeEnv(size=32, frozen_prob=1e-12)
    failures = 0
    for seed in range(10):
        checks[0] = 0
        try:
            env.reset(seed=seed)
        except levels.LakeGenerationError as error:
            failures += 1
            assert "32x32" in str(error)
        assert checks[0] <= 5  # one per board tried; the reset reuses the last one's length
    assert failures > 0  # the bound was actually reached


def test_frozen_lake_with_almost_no_ice_still_finds_adjacent_start_and_goal():
    # Start and goal overwrite holes, so an adjacent pair is always reachable: valid
    # settings terminate well within the bound.
    env = FrozenLakeEnv(size=4, frozen_prob=1e-12)
    for seed in range(20):
        _, info = env.reset(seed=seed)
        assert info["optimal_length"] == 1


def test_sokoban_room_too_small_for_its_boxes_fails_after_the_fallback_bound():
    with pytest.raises(GenerationFailed, match="no 5x5 level with 10 boxes after 64 fallback seeds"):
        SokobanEnv(dim_room=(5, 5), num_boxes=10).reset(seed=0)


def test_countdown_search_refuses_more_than_five_numbers():
    # Six numbers take ~15 s per unsolvable instance; the search stops at five.
    with pytest.raises(ValueError, match="1 to 5 numbers"):
        solver.solve((97, 89, 83, 79, 73, 71), 100_000_007)


# -- Countdown answers: what the parser accepts is in the action space and scores ----------------

SPACES = [" ", "\u00a0", "\u2009", "\u202f", "\u3000", "\t", ""]
TIMES = ["*", "x", "X", "×", "·"]
MINUS = ["-", "−"]
DIVIDE = ["/", "÷"]


def _countdown_file(tmp_path: Path, nums: list[int], target: int) -> Path:
    path = tmp_path / "one.jsonl"
    path.write_text(json.dumps({"nums": nums, "target": target}) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "answer, nums, target",
    [
        ("3 X 2", [3, 2], 6),
        ("3 x 2", [3, 2], 6),
        ("3 · 2", [3, 2], 6),
        ("3 × 2", [3, 2], 6),
        ("6 − 3 − 2", [6, 3, 2], 1),
        ("6 ÷ 3", [6, 3], 2),
        ("3\u00a0*\u00a02", [3, 2], 6),
        ("(6\u2009−\u20093)\u202f×\u30002", [6, 3, 2], 6),
    ],
)
def test_countdown_answers_in_documented_notations_are_actions_and_score(tmp_path, answer, nums, target):
    env = CountdownEnv(data_path=_countdown_file(tmp_path, nums, target))
    env.reset(seed=0)
    assert env.action_space.contains(answer)
    _, reward, terminated, _, info = env.step(answer)
    assert (reward, terminated, info["success"], info["action_is_valid"]) == (1.0, True, True, True)


_trees = st.recursive(
    st.integers(min_value=0, max_value=99),
    lambda inner: st.tuples(inner, st.sampled_from("+-*/"), inner),
    max_leaves=6,
)


@st.composite
def _spelled_expressions(draw) -> tuple[str, Fraction | None]:
    """An expression tree written with random operator spellings and Unicode spaces."""

    def spell(tree) -> tuple[str, Fraction | None]:
        if isinstance(tree, int):
            return str(tree), Fraction(tree)
        (left_text, left), op, (right_text, right) = spell(tree[0]), tree[1], spell(tree[2])
        symbol = draw(st.sampled_from({"+": ["+"], "-": MINUS, "*": TIMES, "/": DIVIDE}[op]))
        gap = draw(st.sampled_from(SPACES))
        if symbol in "xX" and not gap:
            gap = " "  # "2x3" reads fine, but keep literals and the letter apart for clarity
        value = None
        if left is not None and right is not None and not (op == "/" and right == 0):
            value = {"+": left + right, "-": left - right, "*": left * right, "/": left / right if right else 0}[op]
        return f"({left_text}{gap}{symbol}{gap}{right_text})", value

    return spell(draw(_trees))


@settings(max_examples=300, deadline=None)
@given(_spelled_expressions(), st.sampled_from(SPACES), st.sampled_from(SPACES))
def test_parser_reads_every_operator_spelling_and_unicode_space(expression, before, after):
    text, value = expression
    text = before + text + after
    result = arith.evaluate(text)
    if value is None or len(text) > arith.MAX_CHARS:
        assert result is None
    else:
        assert result is not None and result.value == value


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(min_value=1, max_value=50), min_size=2, max_size=4), st.data())
def test_any_permutation_of_the_numbers_with_any_spelling_scores(numbers, data):
    # Whatever the spelling, an expression over exactly the given numbers scores 0.1 or 1.
    ops = data.draw(st.lists(st.sampled_from(["+"] + MINUS + TIMES), min_size=len(numbers) - 1,
                             max_size=len(numbers) - 1))
    gap = data.draw(st.sampled_from(SPACES[:-1]))
    text = str(numbers[0]) + "".join(f"{gap}{op}{gap}{n}" for op, n in zip(ops, numbers[1:]))
    parsed = arith.evaluate(text)
    assert parsed is not None and parsed.numbers == tuple(numbers)
    assert countdown_env.score(text, numbers, int(parsed.value) + 1) == countdown_env.WELL_FORMED_REWARD
    if parsed.value.denominator == 1:
        assert countdown_env.score(text, numbers, int(parsed.value)) == countdown_env.CORRECT_REWARD


# -- data files --------------------------------------------------------------------------------


def _raw_file(tmp_path: Path, text: str | bytes) -> Path:
    path = tmp_path / "data.jsonl"
    if isinstance(text, str):
        text = text.encode("utf-8")
    path.write_bytes(text)
    return path


COUNTDOWN_BAD_LINES = [
    ('{"nums": [1, 2, 3], "target": NaN}', "line 2: NaN"),
    ('{"nums": [1, 2, 3], "target": Infinity}', "line 2: Infinity"),
    ('{"nums": [1, -Infinity, 3], "target": 6}', "line 2: -Infinity"),
    ('{"nums": [1, 2, 3], "target": 1e400}', "line 2: field 'target'"),
    ('{"nums": [1, 2, 3], "target": 6.5}', "line 2: field 'target'"),
    ('{"nums": [1, 2, 3], "target": "6"}', "line 2: field 'target'"),
    ('{"nums": [1, 2, 3], "target": true}', "line 2: field 'target'"),
    ('{"nums": [1, 2, 3], "target": 99999999999999999999999}', "line 2: field 'target'"),
    ('{"nums": "123", "target": 6}', "line 2: field 'nums'"),
    ('{"nums": 3, "target": 6}', "line 2: field 'nums'"),
    ('{"nums": [[1], 2], "target": 6}', "line 2: field 'nums'"),
    ('{"nums": [97, 89, 83, 79, 73, 71], "target": 100000007}', "line 2: field 'nums': expected 2 to 5"),
]


@pytest.mark.parametrize("line, message", COUNTDOWN_BAD_LINES)
def test_countdown_files_with_bad_values_name_file_and_line(tmp_path, line, message):
    path = _raw_file(tmp_path, '{"nums": [1, 2, 3], "target": 6}\n' + line + "\n")
    with pytest.raises(InstanceFileError, match=message) as caught:
        CountdownEnv(data_path=path)
    assert str(caught.value).startswith(str(path))


MATH_QA_BAD_LINES = [
    ('{"question": "Q?", "answer": NaN}', "line 2: NaN"),
    ('{"question": "Q?", "answer": Infinity}', "line 2: Infinity"),
    ('{"question": "Q?", "answer": 1e400}', "line 2: field 'answer': expected a finite number"),
    ('{"question": "Q?", "answer": ""}', "line 2: field 'answer': expected a non-empty answer"),
    ('{"question": "Q?", "answer": [1]}', "line 2: field 'answer'"),
    ('{"question": 5, "answer": "5"}', "line 2: field 'question'"),
]


@pytest.mark.parametrize("line, message", MATH_QA_BAD_LINES)
def test_math_qa_files_with_bad_values_name_file_and_line(tmp_path, line, message):
    path = _raw_file(tmp_path, '{"question": "Q?", "answer": "1"}\n' + line + "\n")
    with pytest.raises(InstanceFileError, match=message) as caught:
        MathQAEnv(data_path=path)
    assert str(caught.value).startswith(str(path))


@pytest.mark.parametrize("cls", [CountdownEnv, MathQAEnv])
def test_a_latin1_file_names_file_line_and_byte(tmp_path, cls):
    good = '{"nums": [1, 2, 3], "target": 6, "question": "Q?", "answer": "1"}\n'
    path = _raw_file(tmp_path, good.encode() + '{"question": "Café?", "answer": "1"}\n'.encode("latin-1"))
    with pytest.raises(InstanceFileError, match=r"line 2: not UTF-8 \(byte 0xe9 at column 18\)"):
        cls(data_path=path)


def test_math_qa_questions_in_any_script_are_observations(tmp_path):
    rows = [{"question": "Combien font ½ + ½ ? 東京 🚀\u0000", "answer": 1}]
    path = _raw_file(tmp_path, "".join(json.dumps(row) + "\n" for row in rows))
    env = MathQAEnv(data_path=path)
    obs, _ = env.reset(seed=0)
    assert obs == rows[0]["question"] and env.observation_space.contains(obs)
    assert env.step("1")[1] == 1.0  # a JSON number answer compares as its text


def test_math_qa_question_longer_than_the_observation_bound_is_refused(tmp_path):
    path = _raw_file(tmp_path, json.dumps({"question": "x" * 100_001, "answer": "1"}) + "\n")
    with pytest.raises(InstanceFileError, match="line 1: field 'question': longer than 100000"):
        MathQAEnv(data_path=path)


def test_a_directory_is_not_a_data_file(tmp_path):
    with pytest.raises(InstanceFileError, match="no such file"):
        CountdownEnv(data_path=tmp_path)
