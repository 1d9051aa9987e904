"""Eval metrics against hand-computed values, plus invariants with hypothesis."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragen_bench.eval import metrics


def row(seed=1, sample=0, *, success=False, env_id="E", split="test", **overrides):
    base = {
        "env_id": env_id,
        "split": split,
        "seed": seed,
        "sample": sample,
        "success": success,
        "total_reward": 0.0,
        "num_turns": 1,
        "num_actions": 1,
        "num_proposed_actions": 1,
        "num_valid_actions": 1,
        "num_effective_actions": 1,
        "num_penalized_turns": 0,
        "num_truncated_replies": 0,
        "num_null_content_replies": 0,
        "optimal_length": None,
        "tokens": None,
        "progress": float(success),
    }
    base.update(overrides)
    return base


# ---------------------------------------------------------------- Wilson interval


def test_wilson_interval_seven_of_ten():
    # p = 0.7, n = 10, z = 1.96: centre (0.7 + z²/20) / (1 + z²/10) = 0.64449,
    # half-width z·sqrt(0.021 + z²/400) / (1 + z²/10) = 0.24771.
    low, high = metrics.wilson_interval(7, 10)
    assert low == pytest.approx(0.396778, abs=1e-6)
    assert high == pytest.approx(0.892209, abs=1e-6)


def test_wilson_interval_zero_successes_starts_at_zero_and_is_not_degenerate():
    # Wald would give [0, 0]; Wilson gives [0, z²/(n + z²)] = [0, 0.27753] for n = 10.
    low, high = metrics.wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(1.959963984540054**2 / (10 + 1.959963984540054**2), rel=1e-12)


def test_wilson_interval_without_data_is_everything():
    assert metrics.wilson_interval(0, 0) == (0.0, 1.0)


@pytest.mark.parametrize("successes, n", [(-1, 3), (4, 3)])
def test_wilson_interval_rejects_impossible_counts(successes, n):
    with pytest.raises(ValueError):
        metrics.wilson_interval(successes, n)


@given(st.integers(0, 500).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_wilson_interval_contains_the_point_estimate(counts):
    successes, n = counts
    low, high = metrics.wilson_interval(successes, n)
    assert 0.0 <= low <= high <= 1.0
    if n:
        assert low - 1e-12 <= successes / n <= high + 1e-12


# ---------------------------------------------------------------- pass@k


@pytest.mark.parametrize(
    "n, c, k, expected",
    [
        (4, 2, 2, 1 - 1 / 6),  # 1 - C(2,2)/C(4,2)
        (5, 2, 1, 0.4),  # pass@1 is the success fraction
        (4, 0, 4, 0.0),
        (4, 1, 4, 1.0),  # k samples are all of them
        (10, 3, 4, 1 - 35 / 210),  # 1 - C(7,4)/C(10,4)
    ],
)
def test_pass_at_k_hand_values(n, c, k, expected):
    assert metrics.pass_at_k(n, c, k) == pytest.approx(expected, rel=1e-12)


@given(st.integers(1, 60).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n), st.integers(1, n))))
def test_pass_at_k_equals_binomial_formula(args):
    n, c, k = args
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)
    assert metrics.pass_at_k(n, c, k) == pytest.approx(exact, abs=1e-12)


@pytest.mark.parametrize("n, c, k", [(3, 4, 1), (3, 1, 0), (3, 1, 4)])
def test_pass_at_k_rejects_bad_arguments(n, c, k):
    with pytest.raises(ValueError):
        metrics.pass_at_k(n, c, k)


def test_pass_k_values_are_powers_of_two_up_to_samples():
    assert metrics.pass_k_values(1) == [1]
    assert metrics.pass_k_values(6) == [1, 2, 4]
    assert metrics.pass_k_values(8) == [1, 2, 4, 8]


def test_pass_at_k_stats_averages_over_seeds():
    # seed 1: 4 samples, 2 successes; seed 2: 4 samples, 0 successes.
    rows = [row(1, s, success=s < 2) for s in range(4)] + [row(2, s) for s in range(4)]
    stats = metrics.pass_at_k_stats(rows)
    assert stats == pytest.approx({"pass@1": 0.25, "pass@2": (5 / 6) / 2, "pass@4": 0.5})


def test_pass_at_k_stats_stops_at_the_fewest_samples_any_seed_has():
    rows = [row(1, s) for s in range(4)] + [row(2, s) for s in range(2)]
    assert sorted(metrics.pass_at_k_stats(rows)) == ["pass@1", "pass@2"]


# ---------------------------------------------------------------- the other metrics


def test_efficiency_counts_only_solved_episodes_with_known_optimum():
    rows = [
        row(1, success=True, optimal_length=3, num_actions=6),  # 0.5
        row(2, success=True, optimal_length=4, num_actions=4),  # 1.0
        row(3, success=False, optimal_length=2, num_actions=10),  # unsolved: ignored
        row(4, success=True, optimal_length=None, num_actions=5),  # unknown optimum: ignored
    ]
    assert metrics.efficiency(rows) == pytest.approx(0.75)
    assert metrics.efficiency([row(1, success=False, optimal_length=3)]) is None


def test_group_summary_hand_computed():
    rows = [
        row(1, success=True, total_reward=9.5, num_turns=2, num_actions=4, num_proposed_actions=5,
            num_valid_actions=4, num_effective_actions=3, num_penalized_turns=1, optimal_length=4, tokens=100,
            num_truncated_replies=1, num_null_content_replies=1),
        row(2, success=False, total_reward=-1.5, num_turns=5, num_actions=10, num_proposed_actions=10,
            num_valid_actions=10, num_effective_actions=5, num_penalized_turns=0, optimal_length=3, tokens=None,
            num_truncated_replies=2),
    ]
    summary = metrics.group_summary(rows)
    assert summary["episodes"] == 2 and summary["instances"] == 2
    assert summary["success_rate"] == 0.5
    # Wilson, 1 of 2: centre (0.5 + z²/4) / (1 + z²/2) = 0.5, half-width
    # z·sqrt(0.125 + z²/16) / (1 + z²/2) = 0.405469 (z = 1.959964).
    assert summary["success_ci95"] == pytest.approx([0.094531, 0.905469], abs=1e-6)
    assert summary["pass@1"] == 0.5 and "pass@2" not in summary
    assert summary["mean_return"] == pytest.approx(4.0)
    assert summary["mean_actions"] == 7.0
    assert summary["mean_turns"] == 3.5
    assert summary["efficiency"] == 1.0  # only seed 1 is solved: 4 / 4
    assert summary["valid_action_rate"] == pytest.approx(14 / 15)
    assert summary["effective_action_rate"] == pytest.approx(8 / 14)
    assert summary["format_penalty_rate"] == pytest.approx(1 / 7)
    assert summary["tokens_per_episode"] == 100.0  # episodes without counts are left out
    assert summary["truncated_replies"] == 3 and summary["truncated_reply_rate"] == pytest.approx(3 / 7)
    assert summary["null_content_replies"] == 1 and summary["null_content_reply_rate"] == pytest.approx(1 / 7)


def test_group_summary_without_actions_reports_none_not_a_division_error():
    summary = metrics.group_summary([row(1, num_actions=0, num_proposed_actions=0, num_valid_actions=0,
                                         num_effective_actions=0)])
    assert summary["valid_action_rate"] is None
    assert summary["effective_action_rate"] is None


def test_summarize_groups_by_env_and_split_sorted():
    rows = [row(1, env_id="B", success=True), row(1, env_id="A", split="val"), row(1, env_id="A")]
    groups = metrics.summarize(rows)
    assert [(g["env_id"], g["split"]) for g in groups] == [("A", "test"), ("A", "val"), ("B", "test")]
    assert [g["success_rate"] for g in groups] == [0.0, 0.0, 1.0]


@given(st.lists(st.floats(-20, 20, allow_nan=False), min_size=1, max_size=40), st.randoms())
def test_summary_is_independent_of_row_order(rewards, rng):
    rows = [row(i, success=i % 3 == 0, total_reward=r) for i, r in enumerate(rewards)]
    shuffled = rows[:]
    rng.shuffle(shuffled)
    assert metrics.summarize(shuffled) == metrics.summarize(rows)


def test_episode_row_reads_a_trajectory_dict():
    turn = {"parsed_actions": ["Up", "Jump"], "format_penalty": -0.1, "prompt_tokens": 30, "completion_tokens": 7,
            "finish_reason": "length"}
    # A record from an agent that does not say why replies ended has no finish_reason.
    quiet = {"parsed_actions": ["Left"], "format_penalty": 0.0, "prompt_tokens": None, "completion_tokens": None}
    record = {
        "env_id": "E", "split": "test", "seed": 5, "sample": 1, "success": True, "total_reward": 10.8,
        "num_turns": 2, "num_actions": 2, "num_valid_actions": 2, "num_effective_actions": 2,
        "optimal_length": 2, "turns": [turn, quiet], "messages": [],
    }
    got = metrics.episode_row(record)
    assert got["num_proposed_actions"] == 3
    assert got["num_penalized_turns"] == 1
    assert got["tokens"] == 37
    assert got["num_truncated_replies"] == 1
    stopped = {**turn, "finish_reason": "stop"}
    assert metrics.episode_row({**record, "turns": [stopped, quiet]})["num_truncated_replies"] == 0
    assert metrics.episode_row({**record, "turns": [quiet]})["tokens"] is None


def test_episode_row_counts_replies_without_content():
    def record(*turns):
        return {
            "env_id": "E", "split": "test", "seed": 5, "sample": 0, "success": False, "total_reward": -0.2,
            "num_turns": len(turns), "num_actions": 0, "num_valid_actions": 0, "num_effective_actions": 0,
            "optimal_length": None, "turns": list(turns),
        }

    base = {"raw_response": "", "parsed_actions": [], "format_penalty": -0.1}
    null = {**base, "finish_reason": "content_filter", "null_content": True}
    refused = {**base, "finish_reason": "stop", "null_content": True, "refusal": "No."}
    empty = {**base, "finish_reason": "stop"}  # an empty string the agent did send: not a null reply
    assert metrics.episode_row(record(null, refused, empty))["num_null_content_replies"] == 2
    # Records the openai agent wrote before null_content existed marked it in finish_reason.
    legacy = [{**base, "finish_reason": "null_content"}, {**base, "finish_reason": "refusal"}]
    assert metrics.episode_row(record(*legacy, empty))["num_null_content_replies"] == 2
    assert metrics.episode_row(record({**legacy[0], "raw_response": "text"}))["num_null_content_replies"] == 0
    with pytest.raises(ValueError, match="null_content must be true or false"):
        metrics.episode_row(record({**null, "null_content": "yes"}))


def test_row_helper_matches_episode_row_keys():
    # The hand-built rows above must have exactly the fields the harness produces.
    record = {
        "env_id": "E", "split": "test", "seed": 5, "sample": 1, "success": True, "total_reward": 1.0,
        "num_turns": 0, "num_actions": 0, "num_valid_actions": 0, "num_effective_actions": 0,
        "optimal_length": None, "turns": [],
    }
    assert set(metrics.episode_row(record)) == set(row())


def test_success_rate_matches_a_simulation_of_its_interval():
    # Coverage sanity check: the 95% interval covers the true rate in roughly 95% of
    # simulated panels of 100 episodes (deterministic stream; Wald would fall short).
    rng = random.Random(7)
    true_rate, trials, n = 0.1, 2000, 100
    covered = 0
    for _ in range(trials):
        successes = sum(rng.random() < true_rate for _ in range(n))
        low, high = metrics.wilson_interval(successes, n)
        covered += low <= true_rate <= high
    assert 0.92 <= covered / trials <= 0.98


def test_progress_is_the_world_s_own_score_and_success_where_it_has_none():
    record = {
        "env_id": "E", "split": "test", "seed": 5, "sample": 0, "success": False, "total_reward": 1.0,
        "num_turns": 0, "num_actions": 0, "num_valid_actions": 0, "num_effective_actions": 0,
        "optimal_length": None, "turns": [],
    }
    assert metrics.episode_row(record)["progress"] == 0.0
    assert metrics.episode_row({**record, "success": True})["progress"] == 1.0
    assert metrics.episode_row({**record, "progress": 0.25})["progress"] == 0.25
    for bad in (1.5, -0.1, True, "0.5", math.nan):
        with pytest.raises(ValueError, match="progress must be a number in \\[0, 1\\]"):
            metrics.episode_row({**record, "progress": bad})


def test_progress_summary_and_its_interval():
    # Binary progress is success: the same mean and exactly the Wilson interval.
    binary = [row(1, success=True), row(2), row(3)]
    summary = metrics.group_summary(binary)
    assert (summary["progress"], summary["progress_ci95"]) == (summary["success_rate"], summary["success_ci95"])
    # Partial scores: their mean, with Wilson's interval at the largest variance [0, 1] allows.
    partial = [row(1, progress=0.5), row(2, progress=0.25), row(3, progress=0.0), row(4, progress=0.25)]
    summary = metrics.group_summary(partial)
    assert summary["success_rate"] == 0.0 and summary["progress"] == 0.25
    assert summary["progress_ci95"] == pytest.approx(list(metrics.wilson_interval_of_mean(0.25, 4)))
    low, high = summary["progress_ci95"]
    assert 0.0 < low < 0.25 < high < 1.0


@given(st.lists(st.floats(0, 1), min_size=1, max_size=30))
def test_the_progress_interval_holds_its_mean_inside_zero_one(values):
    mean = math.fsum(values) / len(values)
    low, high = metrics.wilson_interval_of_mean(min(1.0, mean), len(values))
    assert 0.0 <= low <= mean + 1e-12 and mean - 1e-12 <= high <= 1.0
