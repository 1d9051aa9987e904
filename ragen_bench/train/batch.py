"""The training batch: finished episodes and the policy's samples as padded tensors, and rows of it.

A row is a whole episode when every turn's prompt extends the previous turn's context (the
full history), and one turn when a context window cut the history (``per_turn``: RAGEN-2's
``limited_multi_turn`` and ``single_turn``, its ``ctx_manager._build_*_samples``): the prompt
the policy saw at that turn, then that turn's reply.  The filter and GRPO look at episodes
either way (:func:`episode_totals`, ``episode_ids``), so an episode of many turns counts once.

torch is imported inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from ragen_bench.chat.trajectory import Trajectory
from ragen_bench.train.sampler import TurnSample

if TYPE_CHECKING:
    # Types only: torch is imported inside the functions that use it (module docstring).
    import torch


@dataclass(frozen=True)
class RolloutBatch:
    """Right-padded training tensors, one row per trajectory or per turn (``[batch, tokens]``).

    ``input_ids`` is the episode's whole token context: turn 1's prompt, then each reply's
    sampled ids and the template text between replies, ending with the last reply; per turn,
    that turn's prompt and reply.
    ``response_mask`` is true exactly on sampled ids (each reply, and its end-of-turn token
    when it is part of the reply); position *t* is predicted by the logits at *t* - 1.
    ``old_log_probs`` holds the sampling log-probs there (0 elsewhere); ``rewards`` the
    scores (see :func:`build_batch`); ``group_ids`` the seed of each row (GRPO groups and
    the StarPO-S filter); ``scores`` the total reward of each row's trajectory;
    ``prompt_lengths`` the length of the row's first prompt; ``episode_ids`` the index of
    each row's trajectory in the trajectories the batch was built from (rows of one episode
    are adjacent).
    """

    input_ids: Any
    attention_mask: Any
    response_mask: Any
    old_log_probs: Any
    rewards: Any
    scores: Any
    group_ids: list[int]
    prompt_lengths: list[int]
    episode_ids: list[int]


def build_batch(
    trajectories: Sequence[Trajectory],
    samples: Mapping[str, Sequence[TurnSample]],
    *,
    pad_id: int,
    score_placement: str = "last",
    per_turn: bool = False,
    groups: Sequence[int] | None = None,
) -> RolloutBatch:
    """Stack finished episodes and their :class:`TurnSample` records into a :class:`RolloutBatch`.

    ``samples`` maps each trajectory's ``episode_key`` to its turns (:meth:`ragen_bench.train.policy_agent.PolicyAgent.pop_samples`).
    ``score_placement="last"``: the trajectory's ``total_reward`` (format penalties included) on
    its last response token; ``"turn"``: each turn's reward (env rewards + penalty) on that
    turn's last response token.  Samples that do not belong to the trajectory (another
    number of turns or tokens) or whose turns do not extend one another raise ``ValueError``.

    ``per_turn`` (a context window): one row per turn, its sample's prompt and response ids
    as sampled, each row scored as RAGEN-2 scores windowed samples: the trajectory's
    ``total_reward`` on the row's last token (``score_placement`` must be ``"last"``).

    ``groups``: each trajectory's group id (default: its seed; self-play's are per seed and seat).
    """
    import torch

    if score_placement not in ("last", "turn"):
        raise ValueError(f"score_placement must be 'last' or 'turn', got {score_placement!r}")
    if per_turn and score_placement != "last":
        raise ValueError("build_batch: per-turn rows carry their episode's score (score_placement='last')")
    if not trajectories:
        raise ValueError("build_batch needs at least one trajectory")
    if groups is not None and len(groups) != len(trajectories):
        raise ValueError(f"build_batch: {len(groups)} group ids for {len(trajectories)} trajectories")
    # (trajectory index, row) pairs: one row per trajectory, or one per turn.
    rows = [
        (episode, row)
        for episode, trajectory in enumerate(trajectories)
        for row in (_turn_rows(trajectory, samples) if per_turn else [_row(trajectory, samples, score_placement)])
    ]
    episode_ids = [episode for episode, _ in rows]
    rows = [row for _, row in rows]
    width = max(len(ids) for ids, _, _, _ in rows)
    shape = (len(rows), width)
    batch = {
        "input_ids": torch.full(shape, pad_id, dtype=torch.long),
        "attention_mask": torch.zeros(shape, dtype=torch.long),
        "response_mask": torch.zeros(shape, dtype=torch.bool),
        "old_log_probs": torch.zeros(shape, dtype=torch.float32),
        "rewards": torch.zeros(shape, dtype=torch.float32),
    }
    for b, (ids, mask, log_probs, rewards) in enumerate(rows):
        n = len(ids)
        batch["input_ids"][b, :n] = torch.tensor(ids, dtype=torch.long)
        batch["attention_mask"][b, :n] = 1
        batch["response_mask"][b, :n] = torch.tensor(mask, dtype=torch.bool)
        batch["old_log_probs"][b, :n] = torch.tensor(log_probs, dtype=torch.float32)
        batch["rewards"][b, :n] = torch.tensor(rewards, dtype=torch.float32)
    return RolloutBatch(
        **batch,
        scores=torch.tensor([trajectories[e].total_reward for e in episode_ids], dtype=torch.float32),
        group_ids=[trajectories[e].seed if groups is None else groups[e] for e in episode_ids],
        prompt_lengths=[len(ids) - sum(mask) for ids, mask, _, _ in rows] if per_turn
        else [len(samples[t.episode_key][0].prompt_ids) for t in trajectories],
        episode_ids=episode_ids,
    )


def _turns(trajectory: Trajectory, samples: Mapping[str, Sequence[TurnSample]]) -> Sequence[TurnSample]:
    """The trajectory's samples, checked to be one per turn with the turn's number of completion tokens."""
    key = trajectory.episode_key
    turns = samples.get(key)
    if turns is None:
        raise ValueError(f"build_batch: no samples for episode {key!r}")
    if len(turns) != len(trajectory.turns) or not turns:
        raise ValueError(f"build_batch: episode {key!r} has {len(trajectory.turns)} turns but {len(turns)} samples")
    for number, (sample, record) in enumerate(zip(turns, trajectory.turns, strict=True), start=1):
        if record.completion_tokens != len(sample.response_ids):
            raise ValueError(
                f"build_batch: episode {key!r} turn {number}: the record has {record.completion_tokens} "
                f"completion tokens, the sample {len(sample.response_ids)}"
            )
    return turns


def _turn_rows(
    trajectory: Trajectory, samples: Mapping[str, Sequence[TurnSample]]
) -> list[tuple[list[int], list[bool], list[float], list[float]]]:
    """One row per turn: the prompt the policy saw, its reply, the trajectory's total reward on the reply's last token."""
    rows = []
    for sample in _turns(trajectory, samples):
        ids = [*sample.prompt_ids, *sample.response_ids]
        start = len(sample.prompt_ids)
        rewards = [0.0] * len(ids)
        rewards[-1] = trajectory.total_reward
        rows.append((ids, [False] * start + [True] * len(sample.response_ids),
                     [0.0] * start + list(sample.log_probs), rewards))
    return rows


def _row(
    trajectory: Trajectory, samples: Mapping[str, Sequence[TurnSample]], score_placement: str
) -> tuple[list[int], list[bool], list[float], list[float]]:
    """One trajectory's ids, response mask, old log-probs and rewards (checked against its samples)."""
    key = trajectory.episode_key
    turns = _turns(trajectory, samples)
    ids = [*turns[-1].prompt_ids, *turns[-1].response_ids]
    mask = [False] * len(ids)
    log_probs = [0.0] * len(ids)
    rewards = [0.0] * len(ids)
    for number, (sample, record) in enumerate(zip(turns, trajectory.turns, strict=True), start=1):
        start, end = len(sample.prompt_ids), len(sample.prompt_ids) + len(sample.response_ids)
        if tuple(ids[:start]) != sample.prompt_ids or tuple(ids[start:end]) != sample.response_ids:
            raise ValueError(f"build_batch: episode {key!r} turn {number} is not a prefix of its last turn's context")
        mask[start:end] = [True] * (end - start)
        log_probs[start:end] = sample.log_probs
        if score_placement == "turn":
            rewards[end - 1] += record.reward
    if score_placement == "last":
        rewards[len(ids) - 1] = trajectory.total_reward
    return ids, mask, log_probs, rewards


def select_rows(batch: RolloutBatch, rows: Any) -> RolloutBatch:
    """The rows ``rows`` of a batch (the filter's survivors), in order."""
    picked = rows.tolist()
    return replace(
        batch,
        input_ids=batch.input_ids[rows], attention_mask=batch.attention_mask[rows],
        response_mask=batch.response_mask[rows], old_log_probs=batch.old_log_probs[rows],
        rewards=batch.rewards[rows], scores=batch.scores[rows],
        group_ids=[batch.group_ids[i] for i in picked], prompt_lengths=[batch.prompt_lengths[i] for i in picked],
        episode_ids=[batch.episode_ids[i] for i in picked],
    )


def episode_totals(batch: RolloutBatch) -> tuple[Any, list[int], Any]:
    """Per episode, in order of appearance: its total score, its group and its response tokens over all its rows.

    What the filter ranks (RAGEN-2 aggregates turn-level samples by episode the same way); with
    one row per trajectory these are ``scores``, ``group_ids`` and the rows' response lengths.
    """
    import torch

    numbers = _episode_numbers(batch)
    first: dict[int, int] = {}
    for row, number in enumerate(numbers):
        first.setdefault(number, row)
    rows = list(first.values())
    lengths = torch.zeros(len(first), dtype=torch.long).index_add_(
        0, torch.tensor(numbers, dtype=torch.long), batch.response_mask.sum(dim=1))
    return batch.scores[rows], [batch.group_ids[r] for r in rows], lengths


def episode_rows(batch: RolloutBatch, episodes: torch.Tensor) -> torch.Tensor:
    """The rows of the given episodes (numbered as :func:`episode_totals` lists them), in row order."""
    import torch

    wanted = set(episodes.tolist())
    return torch.tensor([row for row, n in enumerate(_episode_numbers(batch)) if n in wanted], dtype=torch.long)


def _episode_numbers(batch: RolloutBatch) -> list[int]:
    """Each row's episode as 0, 1, ... in order of first appearance."""
    number = {episode: n for n, episode in enumerate(dict.fromkeys(batch.episode_ids))}
    return [number[episode] for episode in batch.episode_ids]


def trim_rows(batch: RolloutBatch, rows: Any) -> tuple[Any, Any, Any]:
    """Rows' ids, attention and response masks without the padding columns they all share."""
    attention = batch.attention_mask[rows]
    width = int(attention.sum(dim=1).max())
    return batch.input_ids[rows, :width], attention[:, :width], batch.response_mask[rows, :width]


def rollout_metrics(trajectories: list[Trajectory], episode_scores: Any, seconds: float) -> dict[str, float]:
    """The rollout's numbers: success, reward, turns and reply lengths, validity, truncation, speed."""
    new_tokens = sum(turn.completion_tokens for t in trajectories for turn in t.turns)
    turns = [turn for t in trajectories for turn in t.turns]
    return {
        "rollout/success": sum(t.success for t in trajectories) / len(trajectories),
        "rollout/reward_mean": float(episode_scores.mean()),  # per episode, however many rows
        "rollout/turns": sum(t.num_turns for t in trajectories) / len(trajectories),
        "rollout/response_length": new_tokens / sum(t.num_turns for t in trajectories),
        "rollout/valid_turn_rate": sum(turn.valid for turn in turns) / len(turns),
        "rollout/truncated_rate": sum(turn.finish_reason == "length" for turn in turns) / len(turns),
        "rollout/tokens_per_s": new_tokens / seconds,
        "time/rollout": seconds,
    }
