"""Reward shaping before advantages: DAPO's soft overlong punishment.

A reply cut at the token limit is usually unfinished; scoring it like a finished one teaches
the policy that length is free.  DAPO (arXiv 2503.14476, eq. 13) charges a reply that runs into
the last ``buffer`` tokens before ``max_length`` linearly: nothing up to ``max_length - buffer``
tokens, ``-factor`` at ``max_length``.  In a multi-turn episode each reply (turn) is charged on
its own, on its last token, so the charge adds to that turn's reward.
"""

from __future__ import annotations

import torch

from ragen_bench.starpo.advantages import turn_ends_from_mask


def overlong_penalty(lengths: torch.Tensor, max_length: int, buffer: int, factor: float = 1.0) -> torch.Tensor:
    """Each reply's penalty (``<= 0``) for its ``lengths`` in tokens: ``-factor x clip((length - (max_length - buffer)) / buffer, 0, 1)``."""
    if not 0 < buffer <= max_length:
        raise ValueError(f"overlong buffer must be in 1..max_length ({max_length}), got {buffer}")
    if factor < 0:
        raise ValueError(f"overlong penalty factor must be >= 0, got {factor}")
    excess = (lengths.double() - (max_length - buffer)).clamp(min=0) / buffer
    return -factor * excess.clamp(max=1) + 0.0  # + 0.0: no -0.0 where nothing is charged


def overlong_rewards(mask: torch.Tensor, max_length: int, buffer: int, factor: float = 1.0) -> torch.Tensor:
    """``[batch, tokens]`` float: each reply's :func:`overlong_penalty` on its last token (a reply: a run of ``mask``)."""
    selected = mask.bool()
    count = selected.long().cumsum(dim=1)
    starts = selected & ~torch.nn.functional.pad(selected[:, :-1], (1, 0), value=False)
    # The running count where the current reply started (count never falls, so cummax carries it).
    start_count = torch.where(starts, count, torch.zeros_like(count)).cummax(dim=1).values
    lengths = count - start_count + 1
    ends = turn_ends_from_mask(selected)
    return torch.where(ends, overlong_penalty(lengths, max_length, buffer, factor), 0.0).float()
