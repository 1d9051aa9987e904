"""Advantage estimators of the StarPO core against hand-computed values and invariants."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ragen_bench.starpo.advantages import (  # noqa: E402
    compute_bi_level_gae,
    compute_gae,
    compute_grpo,
    grpo_scores,
    turn_ends_from_mask,
)
from ragen_bench.starpo.masked import masked_mean, masked_var, masked_whiten  # noqa: E402

torch.set_num_threads(1)


def t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def close(actual, expected, **kw):
    torch.testing.assert_close(actual, t(expected) if isinstance(expected, list) else expected, **kw)


# --- masked helpers -----------------------------------------------------------------------


def test_masked_whiten_uses_unbiased_variance_of_selected_values_only():
    values = t([[1.0, 2.0, 3.0, 100.0]])
    mask = torch.tensor([[1, 1, 1, 0]])
    # mean 2, unbiased var ((1-2)^2 + 0 + (3-2)^2) / (3 - 1) = 1; the 100 is ignored, its slot becomes 0.
    scale = 1 / math.sqrt(1 + 1e-8)
    close(masked_whiten(values, mask), [[-scale, 0.0, scale, 0.0]])
    close(masked_var(values, mask), t(1.0))
    close(masked_var(values, mask, unbiased=False), t(2 / 3))


def test_masked_helpers_ignore_nan_padding_and_survive_empty_and_single_masks():
    values = t([[float("nan"), 5.0, float("inf")]])
    close(masked_mean(values, torch.tensor([[0, 1, 0]])), t(5.0))
    # An empty mask gives 0, not NaN; a single value has variance 0 and whitens to 0.
    close(masked_mean(values, torch.zeros(1, 3)), t(0.0))
    close(masked_whiten(values, torch.zeros(1, 3)), [[0.0, 0.0, 0.0]])
    close(masked_whiten(values, torch.tensor([[0, 1, 0]])), [[0.0, 0.0, 0.0]])


# --- token-level GAE ----------------------------------------------------------------------


def test_gae_1x3_by_hand():
    # gamma = lam = 0.5, V = [0.25, 0.5, 0.75], reward 1 on the last token:
    # t2: delta = 1 + 0.5*0 - 0.75 = 0.25                 A2 = 0.25
    # t1: delta = 0 + 0.5*0.75 - 0.5 = -0.125             A1 = -0.125 + 0.25*0.25 = -0.0625
    # t0: delta = 0 + 0.5*0.5 - 0.25 = 0                  A0 = 0 + 0.25*(-0.0625) = -0.015625
    advantages, returns = compute_gae(
        t([[0, 0, 1]]), t([[0.25, 0.5, 0.75]]), torch.ones(1, 3), gamma=0.5, lam=0.5, whiten=False
    )
    close(advantages, [[-0.015625, -0.0625, 0.25]])
    close(returns, [[0.234375, 0.4375, 1.0]])  # A + V


def test_gae_skips_observation_gaps_and_ignores_their_values():
    # Two replies [t0 t1] and [t4] with an observation (t2, t3) between them, whose values are
    # garbage (NaN): the gap neither receives nor passes on value, so t1 bootstraps from V(t4)
    # one gamma step away and the numbers equal the gap-free 1x3 example above.
    rewards = t([[0, 0, 0, 0, 1]])
    values = t([[0.25, 0.5, float("nan"), float("nan"), 0.75]])
    mask = torch.tensor([[1, 1, 0, 0, 1]], dtype=torch.bool)
    advantages, returns = compute_gae(rewards, values, mask, gamma=0.5, lam=0.5, whiten=False)
    close(advantages, [[-0.015625, -0.0625, 0.0, 0.0, 0.25]])
    close(returns, [[0.234375, 0.4375, 0.0, 0.0, 1.0]])


def test_gae_trailing_padding_is_terminal():
    # Reward on the last real token t1; padding t2 (value 5) must not be bootstrapped from.
    # gamma = lam = 1, V = [0.5, 0.25]: A1 = 1 - 0.25 = 0.75; A0 = 0 + 0.25 - 0.5 + 0.75 = 0.5.
    advantages, _ = compute_gae(t([[0, 1, 0]]), t([[0.5, 0.25, 5.0]]), torch.tensor([[1, 1, 0]]), whiten=False)
    close(advantages, [[0.5, 0.75, 0.0]])


def test_gae_whitens_over_the_whole_batch_after_taking_returns():
    # Values 0, gamma = lam = 1: raw A = [1,1,1] and [3,3,3]; mean 2, unbiased var 6*1/5 = 1.2.
    values = torch.zeros(2, 3, dtype=torch.float64)
    advantages, returns = compute_gae(t([[0, 0, 1], [0, 0, 3]]), values, torch.ones(2, 3))
    w = 1 / math.sqrt(1.2 + 1e-8)
    close(advantages, [[-w] * 3, [w] * 3])
    close(returns, [[1.0] * 3, [3.0] * 3])


def test_gae_one_token_and_empty_rows_give_no_nan():
    rewards = t([[1, 0], [0, 0]])
    values = t([[0.25, 0.0], [float("nan"), float("nan")]])
    mask = torch.tensor([[1, 0], [0, 0]])
    advantages, returns = compute_gae(rewards, values, mask, whiten=False)
    close(advantages, [[0.75, 0.0], [0.0, 0.0]])
    close(returns, [[1.0, 0.0], [0.0, 0.0]])
    # Whitening a single token gives 0 (it is its own mean), never NaN.
    whitened, _ = compute_gae(rewards, values, mask)
    close(whitened, [[0.0, 0.0], [0.0, 0.0]])


def test_gae_refuses_rewards_outside_the_mask_and_bad_shapes():
    with pytest.raises(ValueError, match="outside the response mask"):
        compute_gae(t([[0, 0, 1]]), torch.zeros(1, 3), torch.tensor([[1, 1, 0]]))
    with pytest.raises(ValueError, match=r"values are not finite on masked tokens \(rows \[1\]\)"):
        compute_gae(torch.zeros(2, 2), t([[0, 9], [float("nan"), 0]]), torch.tensor([[1, 0], [1, 1]]))
    with pytest.raises(ValueError, match="rewards are not finite"):
        compute_bi_level_gae(t([[float("inf"), 0]]), torch.zeros(1, 2), torch.ones(1, 2))
    with pytest.raises(ValueError, match="values has shape"):
        compute_gae(torch.zeros(1, 3), torch.zeros(1, 4), torch.ones(1, 3))
    with pytest.raises(ValueError, match=r"mask must be \[batch, tokens\]"):
        compute_gae(torch.zeros(3), torch.zeros(3), torch.ones(3))


def grid(elements, rows, tokens):
    """Strategy for a rows x tokens nested list."""
    return st.lists(st.lists(elements, min_size=tokens, max_size=tokens), min_size=rows, max_size=rows)


@st.composite
def masked_batches(draw, max_rows=3, max_tokens=8):
    """(rewards, values, mask) with rewards only on masked tokens; masks may have gaps or be empty."""
    rows = draw(st.integers(1, max_rows))
    tokens = draw(st.integers(1, max_tokens))
    floats = st.floats(-4, 4, allow_nan=False, width=32)
    mask = t(draw(grid(st.sampled_from([0.0, 1.0]), rows, tokens)))
    rewards = t(draw(grid(floats, rows, tokens))) * mask
    values = t(draw(grid(floats, rows, tokens)))
    return rewards, values, mask


@settings(max_examples=60, deadline=None)
@given(masked_batches())
def test_gae_with_gamma_lambda_one_is_reward_to_go_minus_value(batch):
    rewards, values, mask = batch
    advantages, returns = compute_gae(rewards, values, mask, gamma=1.0, lam=1.0, whiten=False)
    # Reward-to-go by an explicit double loop, independent of the backward recursion.
    rows, tokens = rewards.shape
    for b in range(rows):
        for i in range(tokens):
            if mask[b, i]:
                to_go = sum(float(rewards[b, j]) for j in range(i, tokens))
                assert float(advantages[b, i]) == pytest.approx(to_go - float(values[b, i]), abs=1e-9)
                assert float(returns[b, i]) == pytest.approx(to_go, abs=1e-9)
            else:
                assert float(advantages[b, i]) == 0.0


@settings(max_examples=60, deadline=None)
@given(masked_batches(), st.floats(0.0, 1.0), st.integers(0, 8), st.integers(1, 3))
def test_gae_is_unchanged_by_inserting_unmasked_columns(batch, gamma, where, width):
    rewards, values, mask = batch
    where = min(where, rewards.shape[1])

    def insert(x, fill):
        gap = torch.full((x.shape[0], width), fill, dtype=x.dtype)
        return torch.cat([x[:, :where], gap, x[:, where:]], dim=1)

    plain, _ = compute_gae(rewards, values, mask, gamma=gamma, lam=0.9, whiten=False)
    gapped, _ = compute_gae(
        insert(rewards, 0.0), insert(values, 123.0), insert(mask, 0.0), gamma=gamma, lam=0.9, whiten=False
    )
    keep = torch.cat([torch.arange(where), torch.arange(where + width, gapped.shape[1])])
    close(gapped[:, keep], plain)


@settings(max_examples=40, deadline=None)
@given(masked_batches(), st.floats(0.0, 1.0))
def test_gae_with_lambda_zero_is_one_step_td(batch, gamma):
    rewards, values, mask = batch
    advantages, _ = compute_gae(rewards, values, mask, gamma=gamma, lam=0.0, whiten=False)
    for b in range(rewards.shape[0]):
        positions = [i for i in range(rewards.shape[1]) if mask[b, i]]
        for here, after in zip(positions, positions[1:] + [None]):
            next_value = 0.0 if after is None else float(values[b, after])
            expected = float(rewards[b, here]) + gamma * next_value - float(values[b, here])
            assert float(advantages[b, here]) == pytest.approx(expected, abs=1e-9)


# --- GRPO / RLOO --------------------------------------------------------------------------


def test_grpo_mean_std_mean_and_rloo_by_hand():
    scores = t([1, 0, 2, 2])
    seeds = [7, 7, 9, 9]
    # Group 7: mean 0.5, unbiased std sqrt((0.25 + 0.25) / 1) = sqrt(0.5); group 9 is all equal.
    s = 0.5 / (math.sqrt(0.5) + 1e-6)
    close(grpo_scores(scores, seeds), [s, -s, 0.0, 0.0])
    close(grpo_scores(scores, seeds, mode="mean"), [0.5, -0.5, 0.0, 0.0])
    # RLOO, group of 3 with scores 3, 0, 0: each minus the mean of the other two.
    close(grpo_scores(t([3, 0, 0]), ["a", "a", "a"], mode="rloo"), [3 - 0.0, 0 - 1.5, 0 - 1.5])


def test_grpo_groups_of_one_and_all_equal_groups_give_exact_zeros():
    scores = t([5.0, 0.1, 0.1, 0.1, -2.0])
    seeds = [1, 2, 2, 2, 3]  # two singletons and a group of equal scores (whose float mean is not exactly 0.1)
    for mode in ("mean_std", "mean", "rloo"):
        result = grpo_scores(scores, seeds, mode=mode)
        assert result.tolist() == [0.0] * 5, mode


def test_grpo_interleaved_groups_and_token_broadcast():
    rewards = t([[0, 1], [0, 0], [0, 3], [1, 0]])  # totals 1, 0, 3, 1
    mask = torch.tensor([[1, 1], [1, 0], [0, 1], [1, 1]])
    advantages, returns = compute_grpo(rewards, mask, torch.tensor([4, 8, 4, 8]), mode="mean")
    # Group 4 = rows 0, 2 (totals 1, 3; mean 2); group 8 = rows 1, 3 (totals 0, 1; mean 0.5).
    close(advantages, [[-1.0, -1.0], [-0.5, 0.0], [0.0, 1.0], [0.5, 0.5]])
    close(returns, advantages)


def test_grpo_rejects_bad_input():
    with pytest.raises(ValueError, match="unknown GRPO mode"):
        grpo_scores(t([1, 0]), [0, 0], mode="median")
    with pytest.raises(ValueError, match="group_ids has 3 entries"):
        grpo_scores(t([1, 0]), [0, 0, 0])
    with pytest.raises(ValueError, match="must be finite"):
        grpo_scores(t([1, float("nan")]), [0, 0])


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(-3, 3)), min_size=1, max_size=12))
def test_grpo_invariants(rows):
    seeds = [seed for seed, _ in rows]
    scores = t([score for _, score in rows])
    centered = grpo_scores(scores, seeds, mode="mean")
    normalised = grpo_scores(scores, seeds, mode="mean_std")
    rloo = grpo_scores(scores, seeds, mode="rloo")
    for seed in set(seeds):
        members = [i for i, s in enumerate(seeds) if s == seed]
        assert float(centered[members].sum()) == pytest.approx(0.0, abs=1e-9)
        spread = len(set(float(scores[i]) for i in members)) > 1
        if spread:  # unit (unbiased) std up to epsilon
            assert float(normalised[members].std()) == pytest.approx(1.0, rel=1e-4)
        for i in members:  # leave-one-out baseline, computed directly
            others = [float(scores[j]) for j in members if j != i]
            expected = float(scores[i]) - sum(others) / len(others) if others else 0.0
            assert float(rloo[i]) == pytest.approx(expected, abs=1e-9)


# --- bi-level GAE -------------------------------------------------------------------------


def ragen_example():
    """RAGEN's own example: rewards 1 at t4 and t9, V = 0.1 .. 1.0, all tokens masked."""
    rewards = t([[0, 0, 0, 0, 1, 0, 0, 0, 0, 1]])
    values = t([[0.1 * k for k in range(1, 11)]])
    return rewards, values, torch.ones(1, 10)


def test_bi_level_gae_on_ragens_example_with_reward_positions_as_turn_ends():
    rewards, values, mask = ragen_example()
    # Turn level (high gamma 0.95, lam 1): turn 2 ends at t9: A = 1 + 0 - 1.0 = 0, G2 = 1.0;
    # turn 1 ends at t4: A = 1 + 0.95*V(t9) - V(t4) = 1 + 0.95 - 0.5 = 1.45, G1 = 1.95.
    # Token level with gamma = lam = 1: A_t = G_turn - V_t.
    advantages, returns = compute_bi_level_gae(
        rewards, values, mask, gamma=1.0, lam=1.0, high_level_gamma=0.95, turn_ends=rewards != 0, whiten=False
    )
    close(advantages, [[1.85, 1.75, 1.65, 1.55, 1.45, 0.4, 0.3, 0.2, 0.1, 0.0]])
    close(returns, [[1.95] * 5 + [1.0] * 5])


def test_bi_level_gae_token_level_discounting_by_hand():
    rewards, values, mask = ragen_example()
    # Same turns (G1 = 1.95, G2 = 1.0: the turn level uses lam too, and A2 = 0), gamma = lam = 0.5:
    # turn 2: A9 = 1.0 - 1.0 = 0
    #   A8 = (0.5*1.0 - 0.9) + 0.25*0 = -0.4;   A7 = (0.5*0.9 - 0.8) + 0.25*(-0.4) = -0.45
    #   A6 = (0.5*0.8 - 0.7) + 0.25*(-0.45) = -0.4125;   A5 = (0.5*0.7 - 0.6) + 0.25*(-0.4125) = -0.353125
    # turn 1: A4 = 1.95 - 0.5 = 1.45;   A3 = (0.5*0.5 - 0.4) + 0.25*1.45 = 0.2125
    #   A2 = (0.5*0.4 - 0.3) + 0.25*0.2125 = -0.046875;   A1 = (0.5*0.3 - 0.2) + 0.25*(-0.046875) = -0.06171875
    #   A0 = (0.5*0.2 - 0.1) + 0.25*(-0.06171875) = -0.0154296875
    # (RAGEN's compute_bi_level_gae_advantage_return prints the same numbers, float32-rounded.)
    advantages, _ = compute_bi_level_gae(
        rewards, values, mask, gamma=0.5, lam=0.5, high_level_gamma=0.95, turn_ends=rewards != 0, whiten=False
    )
    expected = [-0.0154296875, -0.06171875, -0.046875, 0.2125, 1.45, -0.353125, -0.4125, -0.45, -0.4, 0.0]
    close(advantages, [expected])


def test_bi_level_gae_default_turns_are_the_replies_between_observations():
    # Reply 1 = t0..t1 (reward 0.5 on t1), observation t2 (value NaN), reply 2 = t3..t4 (reward 1 on t4).
    rewards = t([[0, 0.5, 0, 0, 1]])
    values = t([[0.25, 0.5, float("nan"), 0.25, 0.5]])
    mask = torch.tensor([[1, 1, 0, 1, 1]])
    # Turn level, high gamma 0.5, lam 1: turn 2: A = 1 - V(t4) = 0.5, G2 = 1.0;
    #   turn 1: A = 0.5 + 0.5*V(t4) - V(t1) + 0.5*1*0.5 = 0.5 + 0.25 - 0.5 + 0.25 = 0.5, G1 = 1.0.
    # Token level, gamma 0.5, lam 1: A4 = 0.5; A3 = (0.5*0.5 - 0.25) + 0.5*0.5 = 0.25;
    #   A1 = 0.5; A0 = (0.5*0.5 - 0.25) + 0.5*0.5 = 0.25.
    advantages, returns = compute_bi_level_gae(
        rewards, values, mask, gamma=0.5, lam=1.0, high_level_gamma=0.5, whiten=False
    )
    close(advantages, [[0.25, 0.5, 0.0, 0.25, 0.5]])
    close(returns, [[0.5, 1.0, 0.0, 0.5, 1.0]])
    assert turn_ends_from_mask(mask).tolist() == [[False, True, False, False, True]]


def test_bi_level_gae_zero_reward_trajectory_does_not_index_past_the_end():
    # RAGEN raises IndexError here: no position holds a reward, so no turn end is found.
    rewards = torch.zeros(2, 4, dtype=torch.float64)
    values = t([[0.5, 0.25, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    mask = torch.tensor([[1, 1, 0, 0], [0, 0, 0, 0]])
    advantages, returns = compute_bi_level_gae(rewards, values, mask, turn_ends=rewards != 0, whiten=False)
    # The last masked token ends the only turn: gamma = lam = 1, A_t = 0 - V_t.
    close(advantages, [[-0.5, -0.25, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]])
    close(returns, torch.zeros(2, 4, dtype=torch.float64))
    whitened, _ = compute_bi_level_gae(rewards, values, mask, turn_ends=rewards != 0)
    assert bool(torch.isfinite(whitened).all())


def test_bi_level_gae_tokens_after_the_last_given_turn_end_form_a_final_turn():
    # turn_ends marks only t1, but t2..t3 follow with a reward on t3: t3 ends a second turn.
    rewards = t([[0, 0, 0, 1]])
    values = t([[0.5, 0.25, 0.5, 0.25]])
    turn_ends = torch.tensor([[False, True, False, False]])
    # Turn level (high gamma 0.5, lam 1): turn 2: A = 1 - 0.25 = 0.75, G2 = 1.0;
    #   turn 1: A = 0 + 0.5*0.25 - 0.25 + 0.5*0.75 = 0.25, G1 = 0.5.
    # Token level (gamma = lam = 1): A_t = G_turn - V_t: [0.5 - 0.5, 0.25, 1 - 0.5, 0.75].
    advantages, returns = compute_bi_level_gae(
        rewards, values, torch.ones(1, 4), high_level_gamma=0.5, turn_ends=turn_ends, whiten=False
    )
    close(advantages, [[0.0, 0.25, 0.5, 0.75]])
    close(returns, [[0.5, 0.5, 1.0, 1.0]])


def test_bi_level_gae_moves_rewards_inside_a_turn_to_its_end():
    # One turn t0..t2 with rewards 0.5 (t0) and 1 (t2), values 0, gamma 0.5, lam 1:
    # R = 1.5 at t2, so A2 = 1.5, A1 = 0.5 * 1.5 = 0.75, A0 = 0.5 * 0.75 = 0.375
    # (plain GAE would give A0 = 0.5 + 0.5 * 0.5 = 0.75: the early reward is not discounted).
    advantages, _ = compute_bi_level_gae(
        t([[0.5, 0, 1]]), torch.zeros(1, 3, dtype=torch.float64), torch.ones(1, 3), gamma=0.5, whiten=False
    )
    close(advantages, [[0.375, 0.75, 1.5]])


def test_bi_level_gae_rejects_turn_ends_outside_the_mask():
    with pytest.raises(ValueError, match="turn_ends marks positions outside the mask"):
        compute_bi_level_gae(
            torch.zeros(1, 3), torch.zeros(1, 3), torch.tensor([[1, 1, 0]]), turn_ends=torch.tensor([[0, 0, 1]])
        )


@settings(max_examples=60, deadline=None)
@given(masked_batches(max_rows=2, max_tokens=6), st.floats(0.0, 1.0), st.floats(0.0, 1.0), st.floats(0.0, 1.0))
def test_bi_level_gae_of_one_turn_with_an_outcome_reward_is_plain_gae(batch, gamma, lam, high_gamma):
    _, values, _ = batch
    rows, tokens = values.shape
    mask = torch.ones(rows, tokens)  # one contiguous reply
    rewards = torch.zeros(rows, tokens, dtype=torch.float64)
    rewards[:, -1] = torch.arange(rows, dtype=torch.float64) - 0.5
    bi_level, bi_returns = compute_bi_level_gae(rewards, values, mask, gamma, lam, high_gamma, whiten=False)
    plain, plain_returns = compute_gae(rewards, values, mask, gamma, lam, whiten=False)
    close(bi_level, plain)
    close(bi_returns, plain_returns)
