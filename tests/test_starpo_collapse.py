"""Collapse diagnostics (`ragen_bench.starpo.collapse`): hand-computed cases for each formula,
constructed policies whose reasoning copies the prompt (high I(X;Z)) or is one template for
every prompt (I(X;Z) = 0).  Parity with RAGEN-2's ``CollapseDetector``, whose module imports
veRL, is in ``tests_verl/test_collapse_parity.py``.
"""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")

from ragen_bench.starpo.collapse import (  # noqa: E402
    collapse_metrics,
    ema,
    log_prob_stats,
    mi_estimate,
    reasoning_entropy,
    retrieval_accuracy,
)

# Rows 0, 1 come from prompt 0, row 2 from prompt 1.
CROSS = torch.tensor([[-1.0, -3.0], [-2.0, -2.0], [-4.0, -1.0]])
COLUMNS = torch.tensor([0, 0, 1])


def lse2(a: float, b: float) -> float:
    return math.log(math.exp(a) + math.exp(b))


def test_matched_and_marginal_by_hand():
    matched, marginal = log_prob_stats(CROSS, COLUMNS)
    assert matched.tolist() == [-1.0, -2.0, -1.0]
    expected = [lse2(-1, -3) - math.log(2), -2.0, lse2(-4, -1) - math.log(2)]
    assert marginal.tolist() == pytest.approx(expected)


def test_mi_and_entropies_by_hand():
    matched, marginal = log_prob_stats(CROSS, COLUMNS)
    m = [lse2(-1, -3) - math.log(2), -2.0, lse2(-4, -1) - math.log(2)]
    found = mi_estimate(matched, marginal, 2)
    assert found["matched_log_prob_mean"] == pytest.approx(-4 / 3)
    assert found["marginal_log_prob_mean"] == pytest.approx(sum(m) / 3)
    assert found["mi_estimate"] == pytest.approx(-4 / 3 - sum(m) / 3)
    assert found["mi_upper_bound"] == pytest.approx(math.log(2))
    sums = torch.tensor([-10.0, -20.0, -5.0])
    entropies = reasoning_entropy(matched, marginal, sums, sums - 1)
    assert entropies == pytest.approx({"conditional_entropy_est": 4 / 3, "reasoning_entropy_est": -sum(m) / 3,
                                       "conditional_entropy_seq_est": 35 / 3, "reasoning_entropy_seq_est": 38 / 3})
    # I = H(Z) - H(Z|X), the identity the plot is read by.
    assert found["mi_estimate"] == pytest.approx(entropies["reasoning_entropy_est"]
                                                 - entropies["conditional_entropy_est"])


def test_retrieval_by_hand_with_equal_prompts_counted_as_one():
    # Row 1 ties; argmax takes the first column, its own: all three right.
    found = retrieval_accuracy(CROSS, COLUMNS)
    assert found["retrieval_accuracy"] == 1.0 and found["retrieval_chance_level"] == 0.5
    assert found["retrieval_accuracy@2"] == 1.0 and found["retrieval_chance_level@2"] == 1.0
    assert found["retrieval_above_chance"] == 0.5 and found["retrieval_above_chance@8"] == 0.0
    # Four prompts, the last two the same text: row 2 (own column 2) is retrieved by column 3.
    cross = torch.tensor([[0.0, -1, -2, -3], [-1, 0, -2, -3], [-3, -2, -1, 0], [-3, -2, -1, 0]])
    columns = torch.tensor([1, 1, 2, 3])
    found = retrieval_accuracy(cross, columns, ["a", "b", "c", "c"])
    assert found["retrieval_accuracy"] == pytest.approx(3 / 4)  # row 0 picks prompt a, not b
    # Chance: rows of b see 1/4 of the columns equal to theirs, rows of c 2/4.
    assert found["retrieval_chance_level"] == pytest.approx((0.25 + 0.25 + 0.5 + 0.5) / 4)
    assert found["retrieval_accuracy@2"] == 1.0
    assert found["retrieval_chance_level@2"] == pytest.approx(0.75)
    assert found["retrieval_chance_level@4"] == 1.0 and found["retrieval_chance_level@8"] == 1.0


def test_zscores_and_the_moving_average_by_hand():
    cross = torch.tensor([[0.0, -2.0], [-2.0, 0.0]])
    columns = torch.tensor([0, 1])
    found = collapse_metrics(cross, 3 * cross, columns, std_eps=0.5, ema_decay=0.75)
    gap = -lse2(0, -2) + math.log(2)  # matched - marginal, the same for both rows
    assert found["mi_estimate"] == pytest.approx(gap)
    assert found["mi_seq_estimate"] == pytest.approx(-(lse2(0, -6) - math.log(2)))
    assert found["marginal_std"] == 0.0  # both marginals equal
    assert found["mi_zscore"] == pytest.approx(gap / 0.5)
    assert found["marginal_std_ema"] == 0.0  # the first value is the current one
    later = collapse_metrics(cross, 3 * cross, columns, std_eps=0.5, ema_decay=0.75, ema_std=(2.0, 4.0))
    assert later["marginal_std_ema"] == pytest.approx(0.75 * 2.0)
    assert later["marginal_std_ema_seq"] == pytest.approx(0.75 * 4.0)
    assert later["mi_zscore_ema"] == pytest.approx(gap / (1.5 + 0.5))
    # Unequal marginals: the population std of two values a, b is |a - b| / 2.
    uneven = collapse_metrics(torch.tensor([[0.0, -4.0], [-1.0, -1.0]]), torch.zeros(2, 2), columns)
    assert uneven["marginal_std"] == pytest.approx(abs((lse2(0, -4) - math.log(2)) - (-1.0)) / 2)
    assert ema(None, 3.0, 0.9) == 3.0 and ema(1.0, 3.0, 0.9) == pytest.approx(1.2)


def test_one_prompt_gives_no_metrics():
    assert collapse_metrics(torch.zeros(3, 1), torch.zeros(3, 1), torch.zeros(3, dtype=torch.long)) == {}


# -- constructed policies ----------------------------------------------------------------------------


def copy_and_template_cross(n_prompts: int, k: int, eps: float) -> tuple[torch.Tensor, torch.Tensor]:
    """Cross log-probs of two policies over a vocabulary of ``n_prompts`` tokens, prompt j = token j.

    ``copy``: every reasoning token repeats the prompt's token with probability 1 - eps.
    ``template``: the reasoning's distribution does not look at the prompt at all.
    """
    own = torch.arange(n_prompts).repeat_interleave(k)
    hit, miss = math.log(1 - eps), math.log(eps / (n_prompts - 1))
    copy = torch.full((n_prompts * k, n_prompts), miss)
    copy[torch.arange(n_prompts * k), own] = hit
    template = -5 * torch.rand(n_prompts * k, 1).expand(-1, n_prompts)  # any z, one likelihood under every x
    return copy, template


def test_reasoning_that_copies_the_prompt_carries_almost_log_n_nats():
    copy, _ = copy_and_template_cross(n_prompts=8, k=4, eps=1e-3)
    columns = torch.arange(8).repeat_interleave(4)
    found = collapse_metrics(copy, 10 * copy, columns)
    assert math.log(8) - 0.01 < found["mi_estimate"] <= found["mi_upper_bound"] == pytest.approx(math.log(8))
    assert found["retrieval_accuracy"] == 1.0 and found["retrieval_above_chance"] == pytest.approx(7 / 8)
    assert found["mi_zscore"] > 0


def test_one_template_for_every_prompt_carries_nothing():
    _, template = copy_and_template_cross(n_prompts=8, k=4, eps=1e-3)
    columns = torch.arange(8).repeat_interleave(4)
    found = collapse_metrics(template, 10 * template, columns)
    assert found["mi_estimate"] == pytest.approx(0.0, abs=1e-6)
    assert found["mi_seq_estimate"] == pytest.approx(0.0, abs=1e-5)
    # Diverse reasoning (entropy well above 0) that says nothing about the prompt: template collapse.
    assert found["reasoning_entropy_est"] == pytest.approx(found["conditional_entropy_est"], abs=1e-6)
    # Every column ties, argmax picks prompt 0: only its 4 rows of 32 are "retrieved", chance exactly.
    assert found["retrieval_accuracy"] == pytest.approx(1 / 8) == found["retrieval_chance_level"]
