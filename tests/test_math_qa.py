"""MathQA: RAGEN's MetaMathQA rules, local files, the built-in question generator."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import gymnasium
import pytest
from gymnasium.error import InvalidAction
from gymnasium.utils import seeding
from hypothesis import given, settings
from hypothesis import strategies as st

from ragen_bench.envs.datafiles import InstanceFileError
from ragen_bench.envs.math_qa import MathQAEnv
from ragen_bench.envs.math_qa.env import CORRECT, INCORRECT, normalize_answer
from ragen_bench.envs.math_qa.questions import generate_question
from tests import env_contract

ENV_ID = "RAGEN/MathQA-v0"


def make(**kwargs) -> MathQAEnv:
    return gymnasium.make(ENV_ID, **kwargs).unwrapped


def test_global_random_states_are_untouched():
    env_contract.assert_global_rngs_untouched(ENV_ID, ["1", "2"])


# -- RAGEN's rules -----------------------------------------------------------------------


def test_retries_halve_the_reward_until_correct():
    env = make()
    env.reset(seed=8)
    wrong = str(int(env.answer) + 1)
    assert env.step(wrong)[:4] == (INCORRECT, 0.0, False, False)
    assert env.step(wrong)[:4] == (INCORRECT, 0.0, False, False)
    obs, reward, terminated, truncated, info = env.step(env.answer)
    assert (obs, reward, terminated, truncated, info["success"]) == (CORRECT, 0.25, True, False, True)


def test_first_try_scores_1_and_wrong_answers_truncate_at_the_cap():
    env = make(max_attempts=2)
    env.reset(seed=1)
    assert env.step(f"  {env.answer} ")[1] == 1.0
    env.reset(seed=1)
    env.step("nope")
    _, reward, terminated, truncated, info = env.step("")
    assert (reward, terminated, truncated, info["success"], info["action_is_valid"]) == (0.0, False, True, False, False)


def test_normalization_is_case_and_whitespace_insensitive_only():
    assert normalize_answer(" \\Frac{1}{ 2 } ") == normalize_answer("\\frac{1}{2}")
    assert normalize_answer("1/2") != normalize_answer("0.5")


_SHARED_ENV = MathQAEnv()


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=1000))
def test_any_text_answer_is_in_the_action_space_and_graded(answer):
    env = _SHARED_ENV
    env.reset(seed=0)
    assert env.action_space.contains(answer)
    _, reward, *_ = env.step(answer)
    assert reward == (1.0 if normalize_answer(answer) == env.answer else 0.0)


@settings(max_examples=100, deadline=None)
@given(st.text(min_size=1001, max_size=1500) | st.from_type(object).filter(lambda v: not isinstance(v, str)))
def test_over_long_or_non_text_answers_are_refused_and_cost_nothing(answer):
    env = _SHARED_ENV
    env.reset(seed=0)
    with pytest.raises(InvalidAction, match="MathQAEnv: invalid action"):
        env.step(answer)
    assert env.step(env.answer)[1] == 1.0  # still the first attempt


@pytest.mark.parametrize("answer", ["Paris", "\\frac{1}{2}", "B", "1,000", "x = 3", "10%", "½", "東京", "−4"])
def test_correct_answers_in_any_script_score(tmp_path, answer):
    # The old charset (digits, "-./ ") refused all of these, so even the optimal agent scored 0.
    env = MathQAEnv(data_path=_write_jsonl(tmp_path / "qa.jsonl", [{"question": "Which?", "answer": answer}]))
    env.reset(seed=0)
    assert env.action_space.contains(answer) and env.action_space.contains(env.optimal_action())
    assert env.step(answer)[1] == 1.0


def test_generated_questions_state_their_answer_consistently():
    for seed in range(300):
        question, answer = generate_question(seeding.np_random(seed)[0])
        assert question.endswith("?") and re.fullmatch(r"\d+", answer), (question, answer)
    # Recompute one template by hand: "fills A boxes with B each and has C left over".
    for seed in range(300):
        question, answer = generate_question(seeding.np_random(seed)[0])
        match = re.search(r"fills (\d+) boxes with (\d+) \w+ each and has (\d+)", question)
        if match:
            a, b, c = map(int, match.groups())
            assert int(answer) == a * b + c
            return
    pytest.fail("template never drawn in 300 seeds")


def test_generator_gives_varied_questions():
    questions = {make().reset(seed=seed)[0] for seed in range(50)}
    assert len(questions) == 50


# -- local files ------------------------------------------------------------------------


def _write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(json.dumps(row) for row in rows) + "\n", encoding="utf-8")
    return path


def test_reads_metamathqa_rows_and_picks_questions_as_ragen_does(tmp_path):
    rows = [{"query": f"What is {i} + {i}?", "response": f"Double it.\nThe answer is: {2 * i}"} for i in range(10)]
    env = make(data_path=str(_write_jsonl(tmp_path / "mm.jsonl", rows)))
    for seed in (0, 5, 42, 10_001):
        obs, _ = env.reset(seed=seed)
        index = random.Random(seed).randint(0, 9)  # RAGEN: random.seed(seed); random.randint(0, n - 1)
        assert obs == f"What is {index} + {index}?" and env.answer == str(2 * index)


def test_reads_plain_question_answer_rows(tmp_path):
    env = MathQAEnv(
        data_path=_write_jsonl(tmp_path / "qa.jsonl", [{"question": "Capital of France?", "answer": "Paris"}])
    )
    env.reset(seed=3)
    assert env.step("paris")[1] == 1.0


@pytest.mark.parametrize(
    "rows, message",
    [
        ([{"question": "Q?", "answer": "1"}, {"question": "Q2?"}], "line 2: missing field 'answer'"),
        ([{"query": "Q?", "response": "no final line"}], "line 1: field 'response': no 'The answer is"),
        ([{"question": "", "answer": "1"}], "line 1: field 'question': expected a non-empty string"),
        ([{"prompt": "Q?"}], "line 1: missing field 'question'"),
    ],
)
def test_malformed_files_name_the_line_and_field(tmp_path, rows, message):
    with pytest.raises(InstanceFileError, match=re.escape(message)):
        MathQAEnv(data_path=_write_jsonl(tmp_path / "bad.jsonl", rows))


def test_missing_file_fails_clearly(tmp_path):
    with pytest.raises(InstanceFileError, match="no such file"):
        MathQAEnv(data_path=tmp_path / "nowhere.jsonl")
