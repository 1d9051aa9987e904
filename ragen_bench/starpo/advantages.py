"""Advantage estimators on ``[batch, tokens]`` tensors.

Layout shared by every function here: row ``b`` is one trajectory's response tokens; the
``mask`` selects the tokens the policy produced (every assistant reply with its end-of-turn
token); positions outside it are the prompt's observation tokens between replies, and
padding.  Rewards sit on masked tokens (normally the last token of a reply, or only the last
token of the trajectory).  Every function returns ``(advantages, returns)`` of the same
shape, zero outside the mask, and computes without gradient.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from typing import Literal

import torch

from ragen_bench.starpo.groups import check_scores, group_index, group_stats
from ragen_bench.starpo.masked import masked_whiten

GrpoMode = Literal["mean_std", "mean", "rloo"]


def _as_float(tensor: torch.Tensor) -> torch.Tensor:
    return tensor if tensor.is_floating_point() else tensor.float()


def _check_token_tensors(mask: torch.Tensor, **tensors: torch.Tensor) -> None:
    """Raise ``ValueError`` unless every tensor is ``[batch, tokens]`` like ``mask``."""
    if mask.dim() != 2:
        raise ValueError(f"mask must be [batch, tokens], got shape {tuple(mask.shape)}")
    for name, tensor in tensors.items():
        if tensor.shape != mask.shape:
            raise ValueError(f"{name} has shape {tuple(tensor.shape)} but mask has shape {tuple(mask.shape)}")


def _check_rewards_and_values(rewards: torch.Tensor, values: torch.Tensor, mask: torch.Tensor) -> None:
    """Rewards only on masked tokens; finite rewards and values there (padding may hold anything)."""
    selected = mask.bool()
    # A reward on an unmasked position would silently vanish from every return (veRL drops it too).
    stray = (rewards != 0) & ~selected
    if bool(stray.any()):
        rows = torch.nonzero(stray.any(dim=1)).flatten().tolist()
        raise ValueError(f"nonzero rewards outside the response mask (rows {rows}); put each reward on a masked token")
    for name, tensor in (("rewards", rewards), ("values", values)):
        bad = selected & ~torch.isfinite(tensor)
        if bool(bad.any()):
            rows = torch.nonzero(bad.any(dim=1)).flatten().tolist()
            raise ValueError(f"{name} are not finite on masked tokens (rows {rows})")


def _gae_scan(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float,
    lam: float,
    resets: torch.Tensor | None = None,
) -> torch.Tensor:
    """GAE over the masked positions of each row, walking backwards.

    Unmasked positions are skipped: the masked position before a gap bootstraps from the
    value of the masked position after it, one ``gamma`` step away.  A position flagged in
    ``resets`` is terminal: nothing after it is bootstrapped from or carried back into it.
    """
    batch, length = rewards.shape
    selected = mask.bool()
    advantages = torch.zeros_like(rewards)
    next_value = torch.zeros(batch, dtype=rewards.dtype, device=rewards.device)
    running = torch.zeros_like(next_value)
    for t in reversed(range(length)):
        if resets is not None:
            next_value = torch.where(resets[:, t], 0.0, next_value)
            running = torch.where(resets[:, t], 0.0, running)
        delta = rewards[:, t] + gamma * next_value - values[:, t]
        candidate = delta + gamma * lam * running
        running = torch.where(selected[:, t], candidate, running)
        next_value = torch.where(selected[:, t], values[:, t], next_value)
        advantages[:, t] = torch.where(selected[:, t], candidate, 0.0)
    return advantages


def _finish(advantages: torch.Tensor, values: torch.Tensor, mask: torch.Tensor, whiten: bool):
    """Returns are taken before whitening (they are the critic's targets)."""
    returns = torch.where(mask.bool(), advantages + values, 0.0)
    return (masked_whiten(advantages, mask) if whiten else advantages), returns


@torch.no_grad()
def compute_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
    whiten: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Token-level GAE with a critic.

    ``delta_t = r_t + gamma * V_next(t) - V_t`` and ``A_t = delta_t + gamma * lam * A_next(t)``,
    where ``next(t)`` is the next *masked* position of the row (none after the last: value 0).
    So observation tokens between replies neither receive nor pass on value; the last token of
    a reply bootstraps from the first token of the next reply, as veRL's multi-turn GAE does.
    ``returns = A + V`` (before whitening); ``whiten`` normalises the advantages over all masked
    positions of the batch (RAGEN's and veRL's default).

    Args: ``rewards``, ``values``, ``mask``: ``[batch, tokens]``.
    Returns: ``(advantages, returns)``, ``[batch, tokens]``, 0 outside the mask.
    """
    _check_token_tensors(mask, rewards=rewards, values=values)
    rewards = _as_float(rewards)
    values = _as_float(values).to(rewards.dtype)
    _check_rewards_and_values(rewards, values, mask)
    return _finish(_gae_scan(rewards, values, mask, gamma, lam), values, mask, whiten)


def grpo_scores(
    scores: torch.Tensor,
    group_ids: Sequence[Hashable] | torch.Tensor,
    mode: GrpoMode = "mean_std",
    epsilon: float = 1e-6,
) -> torch.Tensor:
    """Group-relative advantage of each trajectory's total score, ``[batch] -> [batch]``.

    - ``mean_std`` (GRPO): ``(s - mean_g) / (std_g + epsilon)``, ``std_g`` unbiased;
    - ``mean`` (Dr. GRPO): ``s - mean_g``;
    - ``rloo``: ``s - mean of the other members = n / (n - 1) * (s - mean_g)``.

    A group of one, or a group whose scores are all equal, gets 0 (no baseline can tell its
    members apart).  veRL instead passes a lone sample's raw score through.
    """
    check_scores(scores, group_ids)
    scores = _as_float(scores)
    index, num_groups = group_index(group_ids)
    index = index.to(scores.device)
    stats = group_stats(scores, index, num_groups)
    # Exactly 0 for groups without spread (the mean of equal floats can round off by 1 ulp).
    centered = torch.where(stats.std[index] > 0, scores - stats.mean[index], 0.0)
    count = stats.count[index]
    if mode == "mean_std":
        return centered / (stats.std[index] + epsilon)
    if mode == "mean":
        return centered
    if mode == "rloo":
        return torch.where(count > 1, centered * count / (count - 1).clamp(min=1), 0.0)
    raise ValueError(f"unknown GRPO mode {mode!r}; expected 'mean_std', 'mean' or 'rloo'")


@torch.no_grad()
def compute_grpo(
    rewards: torch.Tensor,
    mask: torch.Tensor,
    group_ids: Sequence[Hashable] | torch.Tensor,
    mode: GrpoMode = "mean_std",
    epsilon: float = 1e-6,
    episode_ids: Sequence[Hashable] | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Outcome advantages: every masked token of a row gets :func:`grpo_scores` of its total reward.

    The total is the row's sum of ``rewards`` (wherever they sit).  ``group_ids`` names each
    row's group (the seed its episode was reset with).  Returns equal advantages, as in veRL.
    ``episode_ids`` (several rows per episode, each holding the episode's total: RAGEN-2's
    turn-level samples): each episode counts once in its group's mean and std, as RAGEN-2's
    ``compute_grpo_outcome_advantage`` deduplicates ``(uid, episode_id)``, so an episode of
    many turns does not outweigh a short one; its first row's total stands for it.
    """
    _check_token_tensors(mask, rewards=rewards)
    totals = _as_float(rewards).sum(dim=1)
    if episode_ids is None:
        scores = grpo_scores(totals, group_ids, mode, epsilon)
    else:
        if len(episode_ids) != totals.shape[0]:
            raise ValueError(f"episode_ids has {len(episode_ids)} entries but rewards has {totals.shape[0]} rows")
        first: dict[Hashable, int] = {}  # each episode's first row, in order of appearance
        for row, episode in enumerate(episode_ids):
            first.setdefault(episode, row)
        rows = list(first.values())
        groups = group_ids.tolist() if hasattr(group_ids, "tolist") else list(group_ids)
        per_episode = grpo_scores(totals[rows], [groups[row] for row in rows], mode, epsilon)
        number = {episode: n for n, episode in enumerate(first)}
        scores = per_episode[torch.tensor([number[episode] for episode in episode_ids], device=totals.device)]
    advantages = scores[:, None] * mask.bool()
    return advantages, advantages.clone()


def turn_ends_from_mask(mask: torch.Tensor) -> torch.Tensor:
    """``[batch, tokens]`` bool: the last position of every contiguous run of the mask (each reply's last token)."""
    selected = mask.bool()
    following = torch.nn.functional.pad(selected[:, 1:], (0, 1), value=False)
    return selected & ~following


def _last_masked(mask: torch.Tensor) -> torch.Tensor:
    """``[batch, tokens]`` bool: the last masked position of each row (none in an empty row)."""
    selected = mask.bool()
    later = selected.flip(1).cumsum(1).flip(1) - selected.long()  # masked positions after t
    return selected & (later == 0)


@torch.no_grad()
def compute_bi_level_gae(
    rewards: torch.Tensor,
    values: torch.Tensor,
    mask: torch.Tensor,
    gamma: float = 1.0,
    lam: float = 1.0,
    high_level_gamma: float = 0.95,
    turn_ends: torch.Tensor | None = None,
    whiten: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Bi-level GAE: GAE over turns with ``high_level_gamma``, then GAE over tokens inside each turn.

    Turn ``k`` ends at position ``e_k``: by default the last token of each contiguous run of
    the mask (each reply); ``turn_ends`` overrides that (RAGEN uses the positions holding a
    nonzero reward).  The last masked token of a row always ends a turn, so a row with no
    reward, or with tokens after its last given end, is still well defined.

    1. Turn level: ``R_k`` = sum of the rewards of turn ``k``'s tokens;
       ``delta_k = R_k + high_level_gamma * V(e_{k+1}) - V(e_k)`` (0 after the last turn),
       ``A_k = delta_k + high_level_gamma * lam * A_{k+1}``, turn return ``G_k = A_k + V(e_k)``.
    2. Token level: ordinary GAE with ``gamma, lam`` over the masked tokens of each turn, where
       the turn's last token is terminal with reward ``G_k`` (so its advantage is ``A_k``) and
       the other tokens have reward 0 (their rewards are already in ``R_k``).

    ``returns = A + V`` (before whitening); ``whiten`` as in :func:`compute_gae`.
    Returns ``(advantages, returns)``, ``[batch, tokens]``, 0 outside the mask.
    """
    _check_token_tensors(mask, rewards=rewards, values=values)
    rewards = _as_float(rewards)
    values = _as_float(values).to(rewards.dtype)
    _check_rewards_and_values(rewards, values, mask)
    selected = mask.bool()
    if turn_ends is None:
        ends = turn_ends_from_mask(selected)
    else:
        _check_token_tensors(mask, turn_ends=turn_ends)
        if bool((turn_ends.bool() & ~selected).any()):
            raise ValueError("turn_ends marks positions outside the mask; a turn must end on a masked token")
        ends = turn_ends.bool() | _last_masked(selected)

    # Turn number of each position (turn k spans the positions after end k-1 up to end k).
    turn = ends.long().cumsum(1) - ends.long()
    num_turns = int(turn.max()) + 1 if turn.numel() else 1
    turn_rewards = rewards.new_zeros(rewards.shape[0], num_turns).scatter_add(1, turn, rewards)
    rewards_at_ends = torch.where(ends, turn_rewards.gather(1, turn), 0.0)

    turn_advantages = _gae_scan(rewards_at_ends, values, ends, high_level_gamma, lam)
    turn_returns = torch.where(ends, turn_advantages + values, 0.0)
    advantages = _gae_scan(turn_returns, values, selected, gamma, lam, resets=ends)
    return _finish(advantages, values, mask, whiten)
