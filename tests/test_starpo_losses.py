"""PPO losses of the StarPO core against hand-computed values, gradients and invariants."""

from __future__ import annotations

import math

import pytest

torch = pytest.importorskip("torch")
from hypothesis import example, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ragen_bench.starpo.losses import (  # noqa: E402
    aggregate,
    entropy_from_logits,
    kl_estimate,
    kl_penalized_rewards,
    policy_loss,
    value_loss,
)

torch.set_num_threads(1)

MODES = ["token-mean", "seq-mean-token-sum", "seq-mean-token-mean"]


def t(rows):
    return torch.tensor(rows, dtype=torch.float64)


# --- aggregation --------------------------------------------------------------------------

LOSS = t([[1, 2, 3, 4], [5, 6, 7, 8]])
MASK = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 1]])


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("token-mean", (1 + 2 + 5 + 6 + 7 + 8) / 6),  # 29 / 6: every token weighs the same
        ("seq-mean-token-sum", ((1 + 2) + (5 + 6 + 7 + 8)) / 2),  # 14.5
        ("seq-mean-token-mean", ((1 + 2) / 2 + (5 + 6 + 7 + 8) / 4) / 2),  # (1.5 + 6.5) / 2 = 4
    ],
)
def test_aggregate_2x4_by_hand(mode, expected):
    assert float(aggregate(LOSS, MASK, mode)) == pytest.approx(expected)
    # An empty row (with NaN padding) is left out of every mode's means.
    padded_loss = torch.cat([LOSS, t([[float("nan")] * 4])])
    padded_mask = torch.cat([MASK, torch.zeros(1, 4, dtype=MASK.dtype)])
    assert float(aggregate(padded_loss, padded_mask, mode)) == pytest.approx(expected)


@pytest.mark.parametrize("mode", MODES)
def test_aggregate_of_an_empty_mask_is_zero_with_zero_gradient(mode):
    loss = t([[1.0, float("inf")], [float("nan"), 2.0]]).requires_grad_(True)
    result = aggregate(loss, torch.zeros(2, 2), mode)
    result.backward()
    assert float(result.detach()) == 0.0
    assert loss.grad.tolist() == [[0.0, 0.0], [0.0, 0.0]]


def test_aggregate_refuses_unknown_modes_and_shapes():
    with pytest.raises(ValueError, match="unknown loss aggregation 'seq-sum'"):
        aggregate(LOSS, MASK, "seq-sum")
    with pytest.raises(ValueError, match=r"must both be \[batch, tokens\]"):
        aggregate(LOSS, MASK[:, :2], "token-mean")


def grid(elements, rows, tokens):
    """Strategy for a rows x tokens nested list."""
    return st.lists(st.lists(elements, min_size=tokens, max_size=tokens), min_size=rows, max_size=rows)


@st.composite
def loss_batches(draw):
    """Two loss matrices of one shape and a mask (rows may be empty)."""
    rows, tokens = draw(st.integers(1, 4)), draw(st.integers(1, 6))
    loss = t(draw(grid(st.floats(-10, 10), rows, tokens)))
    other = t(draw(grid(st.floats(-10, 10), rows, tokens)))
    mask = torch.tensor(draw(grid(st.booleans(), rows, tokens)))
    return loss, other, mask


@settings(max_examples=60, deadline=None)
@given(loss_batches(), st.floats(-5, 5), st.sampled_from(MODES), st.randoms(use_true_random=False))
def test_aggregate_invariants(batch, constant, mode, rng):
    loss, other_loss, mask = batch
    value = float(aggregate(loss, mask, mode))
    # Linear in the loss matrix (for a fixed mask) ...
    combined = float(aggregate(2 * loss + other_loss, mask, mode))
    assert combined == pytest.approx(2 * value + float(aggregate(other_loss, mask, mode)), abs=1e-9)
    # ... blind to the order of the rows ...
    order = list(range(loss.shape[0]))
    rng.shuffle(order)
    assert float(aggregate(loss[order], mask[order], mode)) == pytest.approx(value, abs=1e-9)
    # ... and a constant loss averages to itself in the mean modes.
    if bool(mask.any()) and mode != "seq-mean-token-sum":
        assert float(aggregate(torch.full_like(loss, constant), mask, mode)) == pytest.approx(constant)


@settings(max_examples=40, deadline=None)
@given(loss_batches())
def test_token_mean_equals_seq_mean_token_mean_when_rows_have_equal_lengths(batch):
    loss, _, _ = batch
    mask = torch.ones_like(loss, dtype=torch.bool)
    tokens_per_row = loss.shape[1]
    token_mean = float(aggregate(loss, mask, "token-mean"))
    assert float(aggregate(loss, mask, "seq-mean-token-mean")) == pytest.approx(token_mean, abs=1e-9)
    assert float(aggregate(loss, mask, "seq-mean-token-sum")) == pytest.approx(token_mean * tokens_per_row, abs=1e-8)


# --- policy loss --------------------------------------------------------------------------


def ratios_example():
    """Ratios 1.5, 0.5, 4.0 with advantages +1, +1, -1."""
    log_probs = torch.log(t([[1.5, 0.5, 4.0]])).requires_grad_(True)
    return log_probs, torch.zeros(1, 3, dtype=torch.float64), t([[1.0, 1.0, -1.0]]), torch.ones(1, 3)


def test_policy_loss_clip_and_dual_clip_by_hand():
    log_probs, old, advantages, mask = ratios_example()
    loss, metrics = policy_loss(log_probs, old, advantages, mask)  # clip 0.2 / 0.28, dual clip 3
    # t0: A=+1, rho 1.5: max(-1.5, -clip(1.5, 0.8, 1.28) = -1.28) = -1.28   (clipped)
    # t1: A=+1, rho 0.5: max(-0.5, -0.8) = -0.5                              (not clipped)
    # t2: A=-1, rho 4.0: max(4.0, 1.28) = 4.0, capped by dual clip at 3.0     (dual-clipped)
    assert float(loss.detach()) == pytest.approx((-1.28 - 0.5 + 3.0) / 3)
    assert metrics["ppo_clipfrac"] == pytest.approx(1 / 3)
    assert metrics["dual_clipfrac"] == pytest.approx(1 / 3)
    # approx KL = mean(old - new) = -(ln 1.5 + ln 0.5 + ln 4) / 3 = -ln(3) / 3
    assert metrics["approx_kl"] == pytest.approx(-math.log(3) / 3)
    # Only the unclipped token moves: d/dlogp of -A*rho/3 at rho 0.5 is -0.5/3.
    loss.backward()
    torch.testing.assert_close(log_probs.grad, t([[0.0, -0.5 / 3, 0.0]]))


def test_policy_loss_without_dual_clip_and_with_negative_advantage_below_the_range():
    log_probs, old, advantages, mask = ratios_example()
    loss, metrics = policy_loss(log_probs, old, advantages, mask, dual_clip=None)
    assert float(loss.detach()) == pytest.approx((-1.28 - 0.5 + 4.0) / 3)
    assert metrics["dual_clipfrac"] == 0.0
    # A=-1, rho 0.5: max(0.5, clip -> 0.8) = 0.8: the pessimistic (clipped) term wins, no gradient.
    low = torch.log(t([[0.5]])).requires_grad_(True)
    loss, metrics = policy_loss(low, torch.zeros(1, 1, dtype=torch.float64), t([[-1.0]]), torch.ones(1, 1))
    assert float(loss.detach()) == pytest.approx(0.8)
    assert metrics["ppo_clipfrac"] == 1.0
    loss.backward()
    assert low.grad.tolist() == [[0.0]]


def test_policy_loss_on_policy_is_minus_mean_advantage_and_masks_apply():
    log_probs = t([[-1.0, -2.0, -3.0], [-0.5, -0.5, -0.5]])
    advantages = t([[2.0, -1.0, 100.0], [1.0, 0.5, 0.5]])
    mask = torch.tensor([[1, 1, 0], [1, 0, 0]])  # one-token response in row 1
    loss, metrics = policy_loss(log_probs, log_probs.clone(), advantages, mask)
    # rho = 1 everywhere: per-token loss -A.  The default aggregation is RAGEN's effective
    # seq-mean-token-mean: row means (-2 + 1) / 2 = -0.5 and -1 -> -0.75.
    assert float(loss) == pytest.approx(-0.75)
    token_mean, _ = policy_loss(log_probs, log_probs.clone(), advantages, mask, agg="token-mean")
    assert float(token_mean) == pytest.approx((-2 + 1 - 1) / 3)
    assert metrics == {"ppo_clipfrac": 0.0, "dual_clipfrac": 0.0, "approx_kl": 0.0}


def test_policy_loss_empty_mask_and_extreme_ratios_stay_finite():
    log_probs = t([[0.0, 80.0]]).requires_grad_(True)  # log-ratio 80 is clamped to 20
    loss, metrics = policy_loss(log_probs, t([[0.0, 0.0]]), t([[1.0, -1.0]]), torch.tensor([[0, 1]]))
    assert float(loss.detach()) == pytest.approx(3.0)  # dual clip: -A * 3
    loss.backward()
    assert bool(torch.isfinite(log_probs.grad).all())
    loss, metrics = policy_loss(log_probs, t([[0.0, 0.0]]), t([[1.0, -1.0]]), torch.zeros(1, 2))
    assert float(loss.detach()) == 0.0 and all(v == 0.0 for v in metrics.values())


def test_policy_loss_refuses_a_dual_clip_of_at_most_one():
    log_probs, old, advantages, mask = ratios_example()
    with pytest.raises(ValueError, match="dual_clip must be > 1"):
        policy_loss(log_probs, old, advantages, mask, dual_clip=1.0)


# --- entropy, KL, value loss --------------------------------------------------------------


def test_entropy_by_hand_and_with_banned_tokens():
    # logits [0, ln 3] -> p = [1/4, 3/4]; H = -(1/4 ln 1/4 + 3/4 ln 3/4)
    expected = -(0.25 * math.log(0.25) + 0.75 * math.log(0.75))
    uniform = math.log(4)
    logits = t([[[0.0, math.log(3)], [5.0, 5.0]]])
    torch.testing.assert_close(entropy_from_logits(logits), t([[expected, math.log(2)]]))
    banned = t([[0.0, 0.0, 0.0, 0.0, float("-inf")]]).requires_grad_(True)
    entropy = entropy_from_logits(banned)
    assert float(entropy.detach()) == pytest.approx(uniform)
    entropy.sum().backward()
    assert bool(torch.isfinite(banned.grad).all())


def test_kl_estimators_by_hand():
    log_probs, ref = t([[-1.0, -2.0, -0.5]]), t([[-2.0, -1.0, -0.5]])
    # k1 = log p - log q
    torch.testing.assert_close(kl_estimate(log_probs, ref, "k1"), t([[1.0, -1.0, 0.0]]))
    # k3 = e^(q-p) - (q-p) - 1 with q-p = -1, +1, 0
    expected = [math.exp(-1) + 1 - 1, math.exp(1) - 1 - 1, 0.0]
    torch.testing.assert_close(kl_estimate(log_probs, ref, "k3"), t([expected]))
    # A wild token is capped at 10 instead of e^20.
    assert float(kl_estimate(t([[-30.0]]), t([[0.0]]), "k3")) == 10.0
    with pytest.raises(ValueError, match="unknown KL estimator 'k2'"):
        kl_estimate(log_probs, ref, "k2")


@settings(max_examples=60, deadline=None)
@example(pairs=[(-3.908777010177824e-13, 0.0)])  # rounding once gave -1.1e-16
@given(st.lists(st.tuples(st.floats(-30, 0), st.floats(-30, 0)), min_size=1, max_size=10))
def test_k3_is_never_negative(pairs):
    log_probs, ref = t([[p for p, _ in pairs]]), t([[q for _, q in pairs]])
    assert bool((kl_estimate(log_probs, ref, "k3") >= 0).all())


def test_kl_as_reward_penalty_by_hand():
    rewards = t([[0.0, 1.0, 0.0]])
    log_probs, ref = t([[-1.0, -1.0, 0.0]]), t([[-1.5, -1.25, -7.0]])  # k1 = 0.5, 0.25, (7: padding)
    mask = torch.tensor([[1, 1, 0]])
    penalized, metrics = kl_penalized_rewards(rewards, log_probs, ref, mask, coef=0.1)
    torch.testing.assert_close(penalized, t([[-0.05, 1.0 - 0.025, 0.0]]))
    assert metrics["kl"] == pytest.approx(0.75)  # the row's summed KL


def test_value_loss_by_hand():
    values = t([[1.0, 0.0, 2.0, -1.0]]).requires_grad_(True)
    old = t([[0.5, 0.5, 0.5, 0.5]])  # clip 0.5 -> allowed band [0, 1]
    returns = t([[2.0, 0.0, 2.0, 0.5]])
    loss, metrics = value_loss(values, old, returns, torch.ones(1, 4))
    # t0: V 1 in band: (1-2)^2 = 1 both ways            -> 1
    # t1: V 0 in band: 0                                 -> 0
    # t2: V 2 clipped to 1: max((2-2)^2, (1-2)^2) = 1    -> 1 (clipped term wins)
    # t3: V -1 clipped to 0: max(2.25, 0.25) = 2.25      -> 2.25
    assert float(loss.detach()) == pytest.approx(0.5 * (1 + 0 + 1 + 2.25) / 4)
    assert metrics["vf_clipfrac"] == pytest.approx(1 / 4)
    loss.backward()
    # d/dV of 0.5 * (V - R)^2 / 4 = (V - R) / 4, zero where the clipped term (constant in V) wins.
    torch.testing.assert_close(values.grad, t([[(1 - 2) / 4, 0.0, 0.0, (-1 - 0.5) / 4]]))
