"""DAPO's soft overlong punishment against hand-computed charges."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from ragen_bench.starpo.shaping import overlong_penalty, overlong_rewards  # noqa: E402


def test_the_charge_is_zero_then_linear_then_the_whole_factor():
    # max_length 8, buffer 4: free up to 4 tokens, -1/4 per token after, -1 from 8 on.
    lengths = torch.tensor([0, 4, 5, 6, 8, 9])
    assert overlong_penalty(lengths, 8, 4).tolist() == [0.0, 0.0, -0.25, -0.5, -1.0, -1.0]
    assert overlong_penalty(lengths, 8, 4, factor=0.5).tolist() == [0.0, 0.0, -0.125, -0.25, -0.5, -0.5]


def test_each_reply_is_charged_on_its_last_token():
    mask = torch.tensor([
        [0, 1, 1, 1, 0, 0, 1, 1, 1, 1, 1, 1, 0],  # replies of 3 and 6 tokens
        [1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0],  # one reply of 8
    ], dtype=torch.bool)
    expected = torch.zeros(2, 13)
    expected[0, 11] = -0.5  # 6 tokens: 2 into the buffer of 4
    expected[1, 7] = -1.0
    assert torch.equal(overlong_rewards(mask, 8, 4), expected)
    assert not torch.signbit(overlong_rewards(mask, 8, 4)[0, 3])  # an uncharged reply adds +0.0, not -0.0


@pytest.mark.parametrize(("buffer", "factor", "message"), [(0, 1.0, "buffer must be in 1..max_length"),
                                                             (9, 1.0, "buffer must be in 1..max_length"),
                                                             (4, -1.0, "factor must be >= 0")])
def test_bad_settings_are_refused(buffer, factor, message):
    with pytest.raises(ValueError, match=message):
        overlong_penalty(torch.tensor([1]), 8, buffer, factor)
