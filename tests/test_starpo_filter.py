"""The StarPO-S rollout filter against hand-computed selections and invariants."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ragen_bench.starpo.filter import filter_groups, filter_metrics  # noqa: E402

torch.set_num_threads(1)

# Four seeds x 2 rollouts.  Unbiased stds: seed 10 -> 0, 11 -> sqrt(0.5), 12 -> sqrt(2), 13 -> 0.
SCORES = torch.tensor([0.0, 0.0, 0.0, 1.0, 0.0, 2.0, 1.0, 1.0])
SEEDS = [10, 10, 11, 11, 12, 12, 13, 13]


def test_std_keeps_the_groups_that_vary_most():
    result = filter_groups(SCORES, SEEDS, ratio=0.5, mode="std")
    assert result.groups.tolist() == [2, 1]  # seed 12 (sqrt 2) before seed 11 (sqrt 0.5)
    assert result.rows.tolist() == [2, 3, 4, 5]  # batch order
    assert filter_groups(SCORES, SEEDS, ratio=0.25).rows.tolist() == [4, 5]


def test_std_rev_keeps_the_flattest_groups_and_breaks_ties_by_first_appearance():
    result = filter_groups(SCORES, SEEDS, ratio=0.5, mode="std_rev")
    assert result.groups.tolist() == [0, 3]  # both std 0: seed 10 appears first
    assert result.rows.tolist() == [0, 1, 6, 7]
    assert filter_groups(SCORES, SEEDS, ratio=0.25, mode="std_rev").rows.tolist() == [0, 1]


def test_tied_spreads_go_to_the_earlier_group():
    scores = torch.tensor([5.0, 5.0, 0.0, 1.0, 3.0, 4.0])  # seeds b and c both have std sqrt(0.5)
    assert filter_groups(scores, ["a", "a", "b", "b", "c", "c"], ratio=1 / 3).rows.tolist() == [2, 3]
    assert filter_groups(scores, ["a", "a", "c", "c", "b", "b"], ratio=1 / 3).rows.tolist() == [2, 3]


@pytest.mark.parametrize("mode", ["std", "std_rev"])
def test_many_ties_keep_batch_order(mode):
    # 100 seeds of 2 rollouts; every third seed varies (std sqrt(0.5)), the rest do not.  Among
    # equals the earliest seeds win: an unstable sort (torch's default) reorders ties at this size.
    varies = [g % 3 == 0 for g in range(100)]
    scores = torch.tensor([float(i % 2 and v) for v in varies for i in range(2)])
    seeds = [g for g in range(100) for _ in range(2)]
    result = filter_groups(scores, seeds, ratio=0.5, mode=mode)
    first = [g for g in range(100) if varies[g] == (mode == "std")]  # 34 varying or 66 flat seeds
    rest = [g for g in range(100) if varies[g] != (mode == "std")]
    assert result.groups.tolist() == (first + rest)[:50]


def test_equal_scores_tie_with_a_group_of_one_despite_rounding():
    # The float mean of three 0.1s is not exactly 0.1, so torch.std gives ~1.7e-17 > 0; here both
    # groups have spread 0 and the earlier one (the single rollout, seed 1) wins the tie.
    scores = torch.tensor([7.0, 0.1, 0.1, 0.1], dtype=torch.float64)
    assert float(scores[1:].std()) > 0
    result = filter_groups(scores, [1, 2, 2, 2], ratio=0.5)
    assert result.rows.tolist() == [0]
    assert result.stats.std.tolist() == [0.0, 0.0]  # a group of one is 0, not torch's NaN


def test_ratio_one_keeps_every_row_in_order():
    scores = torch.tensor([1.0, 0.0, 3.0, 3.0, 2.0])
    result = filter_groups(scores, [0, 1, 0, 1, 2], ratio=1.0)
    assert result.rows.tolist() == [0, 1, 2, 3, 4]
    assert sorted(result.groups.tolist()) == [0, 1, 2]


def test_interleaved_and_unequal_groups():
    scores = torch.tensor([0.0, 1.0, 4.0, 1.0, 0.0])
    # seed 5 = rows 0, 2, 4 (0, 4, 0: std sqrt(16/3)); seed 6 = rows 1, 3 (1, 1: std 0)
    assert filter_groups(scores, [5, 6, 5, 6, 5], ratio=0.5).rows.tolist() == [0, 2, 4]
    assert filter_groups(scores, [5, 6, 5, 6, 5], ratio=0.5, mode="std_rev").rows.tolist() == [1, 3]


def test_ratio_that_int_would_round_down_keeps_the_exact_count():
    # int(0.29 * 100) == 28 in Python; the filter keeps the 29 groups that 29 / 100 means.
    assert int(0.29 * 100) == 28
    scores = torch.arange(200, dtype=torch.float64) % 7
    assert filter_groups(scores, [i // 2 for i in range(200)], ratio=0.29).groups.numel() == 29


def test_metrics_by_hand():
    metrics = filter_metrics(filter_groups(SCORES, SEEDS, ratio=0.5))
    r2, r05 = math.sqrt(2), math.sqrt(0.5)
    assert metrics["groups"] == 4 and metrics["kept_groups"] == 2
    assert metrics["in_group_std"] == pytest.approx((0 + r05 + r2 + 0) / 4)
    assert metrics["chosen_in_group_std"] == pytest.approx((r2 + r05) / 2)
    assert metrics["in_group_mean"] == pytest.approx((0 + 0.5 + 1 + 1) / 4)
    assert metrics["chosen_in_group_mean"] == pytest.approx((1 + 0.5) / 2)
    assert metrics["in_group_max"] == pytest.approx((0 + 1 + 2 + 1) / 4)
    assert metrics["chosen_in_group_max"] == pytest.approx((2 + 1) / 2)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"ratio": 0.0}, r"ratio must be in \(0, 1\]"),
        ({"ratio": 1.5}, r"ratio must be in \(0, 1\]"),
        ({"ratio": float("nan")}, r"ratio must be in \(0, 1\]"),
        ({"ratio": 0.2}, "keeps floor"),  # 0.2 x 4 groups = 0.8 -> nothing left to train on
        ({"mode": "max"}, "unknown rollout filter type"),
    ],
)
def test_bad_settings_are_refused_with_a_clear_message(kwargs, message):
    with pytest.raises(ValueError, match=message):
        filter_groups(SCORES, SEEDS, **kwargs)


def test_bad_scores_are_refused():
    with pytest.raises(ValueError, match="1-D tensor"):
        filter_groups(SCORES.view(4, 2), SEEDS[:4])
    with pytest.raises(ValueError, match="group_ids has 3 entries"):
        filter_groups(SCORES, SEEDS[:3])
    with pytest.raises(ValueError, match="must be finite"):
        filter_groups(torch.tensor([0.0, float("inf")]), [0, 0], ratio=1.0)


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.integers(-2, 2), min_size=1, max_size=4), min_size=1, max_size=9),
    st.data(),
    st.sampled_from(["std", "std_rev"]),
    st.randoms(use_true_random=False),
)
def test_filter_keeps_exactly_k_whole_groups_ranked_by_spread(groups, data, mode, rng):
    num_groups = len(groups)
    keep = data.draw(st.integers(1, num_groups))
    rows = [(g, score) for g, members in enumerate(groups) for score in members]
    rng.shuffle(rows)  # groups interleave in the batch
    seeds = [f"seed-{g}" for g, _ in rows]
    scores = torch.tensor([float(score) for _, score in rows])
    result = filter_groups(scores, seeds, ratio=keep / num_groups, mode=mode)

    kept_seeds = {seeds[i] for i in result.rows.tolist()}
    assert len(kept_seeds) == keep
    assert result.rows.tolist() == sorted(i for i, s in enumerate(seeds) if s in kept_seeds)  # whole groups

    def spread(seed):  # unbiased std by hand; 0 for a single rollout
        values = [float(scores[i]) for i, s in enumerate(seeds) if s == seed]
        mean = sum(values) / len(values)
        return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1)) if len(values) > 1 else 0.0

    kept = [spread(s) for s in kept_seeds]
    dropped = [spread(s) for s in set(seeds) - kept_seeds]
    if dropped:
        if mode == "std":
            assert min(kept) >= max(dropped) - 1e-9
        else:
            assert max(kept) <= min(dropped) + 1e-9
