"""The trainer's collapse diagnostics: turns of a rollout, scored under each other's prompts.

On a schedule (:func:`due`), the step's first turns are split as RAGEN-2 splits them
(``ctx_manager._build_first_turn_prompt_and_reasoning_ids``): X is turn 1's prompt followed
by ``<think>``, Z the reasoning between ``<think>`` and ``</think>`` (first match, tags
excluded, stripped, the tokenizer's special tokens removed), tokenized on its own.  Replies
without that block carry no Z and only count against ``collapse/first_turn_valid_rate``.
With ``chat.think=false`` there is no reasoning to split out, so Z is the whole reply and X
the prompt (RAGEN-2 computes nothing then).  ``num_samples`` valid rows are drawn (a seeded
draw of this step), every one is scored under every distinct prompt among them by the
current policy (a :data:`Scorer`: locally :func:`cross_log_probs`, one teacher-forced forward
per prompt and micro-batch; under veRL its actor workers, ``integrations/verl/collapse.py``),
and :func:`ragen_bench.starpo.collapse.collapse_metrics` reads the matrix
(``first_turn_enabled``).  :class:`CollapseProbe` runs both samples on schedule for either
trainer and carries their moving averages from one diagnostic step to the next.

Beyond the first turn (``multi_turn_enabled``, RAGEN-2's ``collapse_trajectory_sample``): every
turn t of a trajectory splits the same way, X being the whole context the policy saw at turn t
followed by ``<think>``; :func:`sample_trajectory_turns` draws ``num_samples`` (trajectory,
turn) pairs as RAGEN-2's ``_sample_trajectory_uniform`` does (a trajectory uniformly, then one
of its turns with a Z uniformly, with replacement: each trajectory weighs the same whatever
its length), every pair is its own column, and the metrics go under :data:`TRAJECTORY_PREFIX`
beside ``collapse/valid_thinking_rate`` (the share of all turns that carry a Z).

torch is imported inside the functions that need it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from ragen_bench.chat.parser import THINK_CLOSE, THINK_OPEN
from ragen_bench.chat.trajectory import Trajectory
from ragen_bench.train.sampler import TurnSample
from ragen_bench.train.schedule import derived_seed

# RAGEN-2's W&B namespaces for first-turn and trajectory-uniform samples (docs/starpo.md, "Collapse diagnostics").
PREFIX = "collapse_first_turn_sample/"
TRAJECTORY_PREFIX = "collapse_trajectory_sample/"
# (contexts, reasonings) -> (mean, total), each [len(reasonings), len(contexts)]: log p(z_i | x_j) per token and summed.
Scorer = Callable[[Sequence[Sequence[int]], Sequence[Sequence[int]]], tuple[Any, Any]]
_REASONING = re.compile(re.escape(THINK_OPEN) + r"(.*?)" + re.escape(THINK_CLOSE), re.DOTALL)


@dataclass(frozen=True)
class TurnPair:
    """One turn's X (``context_ids``) and Z (``reasoning_ids``, empty when the reply has none) and its group."""

    context_ids: tuple[int, ...]
    reasoning_ids: tuple[int, ...]
    group: int


def due(step: int, compute_freq: int) -> bool:
    """Whether training step ``step`` (1-based) computes the diagnostics: step 1, then every
    ``compute_freq``-th step (RAGEN-2's ``should_compute``); never when ``compute_freq`` is 0."""
    return compute_freq > 0 and (step == 1 or step % compute_freq == 0)


def reasoning_text(reply: str, *, think: bool, special_tokens: Sequence[str] = ()) -> str:
    """Z's text: the first ``<think>`` block's content, or the whole reply when ``think`` is off ("" if none)."""
    if think:
        match = _REASONING.search(reply)
        reply = match.group(1) if match else ""
    for token in special_tokens:
        reply = reply.replace(token, "")
    return reply.strip()


def turn_pair(context_ids: Sequence[int], reply: str, tokenizer: Any, *, think: bool, group: Hashable) -> TurnPair:
    """One turn split as RAGEN-2 splits it: X = ``context_ids`` (the ids the reply was sampled from) then
    ``<think>``'s ids, Z = :func:`reasoning_text` of ``reply`` tokenized on its own (empty: no Z)."""
    opening = tuple(tokenizer(THINK_OPEN, add_special_tokens=False)["input_ids"]) if think else ()
    special = [token for token in tokenizer.all_special_tokens if token]
    text = reasoning_text(reply, think=think, special_tokens=special)
    reasoning = tuple(tokenizer(text, add_special_tokens=False)["input_ids"]) if text else ()
    return TurnPair(context_ids=(*context_ids, *opening), reasoning_ids=reasoning, group=group)


def all_turns(trajectories: Sequence[Trajectory], samples: Mapping[str, Sequence[TurnSample]], tokenizer: Any, *,
              think: bool, first_only: bool = False) -> list[list[TurnPair]]:
    """Each trajectory's turns as :func:`turn_pair` rows (X: the prompt ids turn t was sampled from; the
    group: the seed), in batch and turn order; ``first_only``: turn 1 alone."""
    return [[turn_pair(sample.prompt_ids, turn.raw_response, tokenizer, think=think, group=trajectory.seed)
             for turn, sample in zip(trajectory.turns[:1] if first_only else trajectory.turns,
                                     samples[trajectory.episode_key])]
            for trajectory in trajectories]


def sample_rows(rows: Sequence[TurnPair], num_samples: int | None, seed: int) -> list[int]:
    """Indices of up to ``num_samples`` rows with a Z (all when None), drawn without replacement, ascending."""
    import torch

    valid = [i for i, row in enumerate(rows) if row.reasoning_ids]
    if num_samples is None or num_samples >= len(valid):
        return valid
    order = torch.randperm(len(valid), generator=torch.Generator().manual_seed(seed))[:num_samples]
    return sorted(valid[i] for i in order.tolist())


def distinct_columns(contexts: Sequence[Sequence[int]]) -> list[int]:
    """For each context, the first column holding the same ids (itself when new): equal contexts are scored once."""
    first: dict[tuple[int, ...], int] = {}
    return [first.setdefault(tuple(context), j) for j, context in enumerate(contexts)]


def cross_log_probs(model: Any, contexts: Sequence[Sequence[int]], reasonings: Sequence[Sequence[int]], *,
                    temperature: float, micro_batch: int, pad_id: int) -> tuple[Any, Any]:
    """``(mean, total)``, each ``[len(reasonings), len(contexts)]``: the per-token mean and the sum of
    log p(z_i | x_j) under ``softmax(logits / temperature)``, teacher-forced, without gradient.

    Equal contexts (two seeds rendering the same prompt) are scored once: their columns are equal.
    """
    import torch

    from ragen_bench.starpo.forward import token_log_probs

    device = next(model.parameters()).device
    total = torch.zeros(len(reasonings), len(contexts))
    lengths = torch.tensor([len(z) for z in reasonings], dtype=torch.float32)
    columns = distinct_columns(contexts)
    with torch.no_grad():
        for j, context in enumerate(contexts):
            if columns[j] != j:
                total[:, j] = total[:, columns[j]]
                continue
            for start in range(0, len(reasonings), micro_batch):
                chunk = reasonings[start : start + micro_batch]
                width = len(context) + max(len(z) for z in chunk)
                ids = torch.full((len(chunk), width), pad_id, dtype=torch.long)
                attention = torch.zeros_like(ids)
                response = torch.zeros_like(ids, dtype=torch.bool)
                for b, z in enumerate(chunk):
                    end = len(context) + len(z)
                    ids[b, :end] = torch.tensor([*context, *z], dtype=torch.long)
                    attention[b, :end] = 1
                    response[b, len(context) : end] = True
                log_probs, _ = token_log_probs(model, ids.to(device), attention.to(device), response.to(device),
                                               temperature, with_entropy=False)
                total[start : start + len(chunk), j] = log_probs.sum(dim=1).float().cpu()
    return total / lengths[:, None], total


def model_scorer(model: Any, *, temperature: float, micro_batch: int, pad_id: int) -> Scorer:
    """The :data:`Scorer` of a local policy: :func:`cross_log_probs` with these settings."""
    return partial(cross_log_probs, model, temperature=temperature, micro_batch=micro_batch, pad_id=pad_id)


def sample_trajectory_turns(turns: Sequence[Sequence[TurnPair]], num_samples: int | None, seed: int) -> list[tuple[int, int]]:
    """``(trajectory, turn)`` pairs, as RAGEN-2's ``_sample_trajectory_uniform`` draws them: as many draws as
    there are turns with a Z (at most ``num_samples``), each a trajectory uniformly and then one of its
    turns with a Z uniformly, with replacement; a draw that lands on a trajectory without one gives no pair."""
    import torch

    valid = [[t for t, row in enumerate(rows) if row.reasoning_ids] for rows in turns]
    total = sum(len(ts) for ts in valid)
    draws = total if num_samples is None else min(num_samples, total)
    generator = torch.Generator().manual_seed(seed)
    pairs = []
    for _ in range(draws):
        m = int(torch.randint(len(valid), (), generator=generator))
        if valid[m]:
            pairs.append((m, valid[m][int(torch.randint(len(valid[m]), (), generator=generator))]))
    return pairs


def first_turn_diagnostics(score: Scorer, rows: Sequence[TurnPair], picked: Sequence[int], *, std_eps: float,
                           ema_decay: float, ema_std: tuple[float, float] | None) -> dict[str, float]:
    """The logged metrics of one diagnostic step: coverage counts, then RAGEN-2's suffixes under :data:`PREFIX`
    (the picked rows of one group share its prompt: one column per group)."""
    valid = sum(bool(row.reasoning_ids) for row in rows)
    metrics = {"collapse/first_turn_num_total": float(len(rows)), "collapse/first_turn_num_valid": float(valid),
               "collapse/first_turn_valid_rate": valid / len(rows) if rows else 0.0}
    chosen = [rows[i] for i in picked]
    metrics.update(_scored(score, chosen, [row.group for row in chosen], PREFIX, std_eps=std_eps,
                           ema_decay=ema_decay, ema_std=ema_std))
    return metrics


def trajectory_diagnostics(score: Scorer, turns: Sequence[Sequence[TurnPair]], pairs: Sequence[tuple[int, int]], *,
                           std_eps: float, ema_decay: float, ema_std: tuple[float, float] | None) -> dict[str, float]:
    """RAGEN-2's multi-turn metrics: ``collapse/valid_thinking_rate``, then its suffixes under
    :data:`TRAJECTORY_PREFIX` for the drawn ``pairs`` (each pair its own column, as RAGEN-2 numbers them)."""
    total = sum(len(rows) for rows in turns)
    valid = sum(bool(row.reasoning_ids) for rows in turns for row in rows)
    metrics = {"collapse/valid_thinking_rate": valid / total if total else 0.0}
    chosen = [turns[m][t] for m, t in pairs]
    metrics.update(_scored(score, chosen, range(len(chosen)), TRAJECTORY_PREFIX, std_eps=std_eps,
                           ema_decay=ema_decay, ema_std=ema_std))
    return metrics


def _scored(score: Scorer, chosen: Sequence[TurnPair], keys: Sequence[Hashable], prefix: str, *, std_eps: float,
            ema_decay: float, ema_std: tuple[float, float] | None) -> dict[str, float]:
    """RAGEN-2's suffixes under ``prefix`` for ``chosen``, row i's prompt column the first row with its ``keys[i]``
    (empty with fewer than two columns)."""
    import torch

    from ragen_bench.starpo.collapse import collapse_metrics

    column_of: dict[Hashable, int] = {}
    contexts: list[tuple[int, ...]] = []
    for key, row in zip(keys, chosen, strict=True):
        if key not in column_of:
            column_of[key] = len(contexts)
            contexts.append(row.context_ids)
    if len(contexts) < 2:
        return {}
    mean, total = score(contexts, [row.reasoning_ids for row in chosen])
    columns = torch.tensor([column_of[key] for key in keys])
    found = collapse_metrics(mean, total, columns, contexts, std_eps=std_eps, ema_decay=ema_decay, ema_std=ema_std)
    return {prefix + name: value for name, value in found.items()}


def last_ema_std(logged: Sequence[Mapping[str, Any]], prefix: str = PREFIX) -> tuple[float, float] | None:
    """The moving averages of the marginal's spread under ``prefix`` at the last diagnostic step of ``logged``
    (``metrics.jsonl`` rows), so a resumed run continues them; None before any."""
    for row in reversed(logged):
        if prefix + "marginal_std_ema" in row:
            return row[prefix + "marginal_std_ema"], row[prefix + "marginal_std_ema_seq"]
    return None


class CollapseProbe:
    """Both samples of a diagnostic step, on schedule, with their moving averages carried between steps.

    ``settings`` is a :class:`ragen_bench.train.config.CollapseDetectionConfig` (or anything with its
    fields); ``seed`` seeds each step's draws (``derived_seed(seed, "collapse", step)`` and
    ``"collapse_trajectory"``, ``step`` 0-based); ``logged`` are earlier ``metrics.jsonl`` rows, so
    that a resumed run continues the moving averages.
    """

    def __init__(self, settings: Any, seed: int, logged: Sequence[Mapping[str, Any]] = ()) -> None:
        self.settings, self.seed = settings, seed
        self.first_ema = last_ema_std(logged)
        self.trajectory_ema = last_ema_std(logged, TRAJECTORY_PREFIX)

    def due(self, step: int) -> bool:
        """Whether training step ``step`` (1-based) computes anything."""
        d = self.settings
        return due(step, d.compute_freq) and bool(d.first_turn_enabled or d.multi_turn_enabled)

    @property
    def first_only(self) -> bool:
        """Whether the step needs turn 1 of each trajectory only (no trajectory sample)."""
        return not self.settings.multi_turn_enabled

    def measure(self, turns: Sequence[Sequence[TurnPair]], score: Scorer, step: int) -> dict[str, float]:
        """The logged metrics of 0-based step ``step`` from each trajectory's :class:`TurnPair` rows (turn 1
        first; all turns when the trajectory sample is on), every drawn row scored by ``score``."""
        d = self.settings
        metrics: dict[str, float] = {}
        if d.first_turn_enabled:  # turn 1 of each trajectory, one prompt per group
            rows = [row[0] for row in turns]
            picked = sample_rows(rows, d.num_samples, derived_seed(self.seed, "collapse", step))
            metrics.update(first_turn_diagnostics(score, rows, picked, std_eps=d.std_eps, ema_decay=d.ema_decay,
                                                  ema_std=self.first_ema))
            self.first_ema = last_ema_std([metrics]) or self.first_ema
        if d.multi_turn_enabled:  # any turn: a trajectory uniformly, then one of its turns
            pairs = sample_trajectory_turns(turns, d.num_samples, derived_seed(self.seed, "collapse_trajectory", step))
            metrics.update(trajectory_diagnostics(score, turns, pairs, std_eps=d.std_eps, ema_decay=d.ema_decay,
                                                  ema_std=self.trajectory_ema))
            self.trajectory_ema = last_ema_std([metrics], TRAJECTORY_PREFIX) or self.trajectory_ema
        return metrics
