"""RAGEN-2's collapse diagnostics under veRL: veRL's rows split into turns, scored on its actor workers.

The local trainer's probe (:class:`ragen_bench.train.collapse_probe.CollapseProbe`: the X/Z split,
the seeded draws, RAGEN-2's estimates, the moving averages) runs here unchanged; two things differ.

* **The turns come from veRL's rows.**  A trajectory is one TransferQueue row: turn 1's prompt
  (``prompts``), then every reply and the template/observation ids between them (``responses``,
  ``response_mask`` 1 on the replies), and the agent loop's per-turn records
  (``extra_fields["turns"]``, each reply's token count).  :func:`reply_spans` cuts the masked ids
  into the replies by those counts (an empty reply has no ids and no Z); turn t's X is the row's
  ids before its reply, then ``<think>`` (:func:`row_turns`).  Under a context window a
  trajectory is one row per turn (its windowed prompt, then its reply), read the same way; an
  empty reply has no row (its record rides with the next one), so its X is not stored, which
  does not matter: it has no Z and is never scored.  Rows are taken in (seed, session)
  order and grouped by seed, as the local trainer lists and groups its trajectories, so the same
  episodes give the same draw.  As in the local trainer, the rows are the whole rollout, before
  the filter: our sampler (:mod:`.sampler`) reads them (:func:`read_rows`) on a due step before it
  clears the groups the filter drops; without it (nothing filtered) the step's batch is the rollout.
* **The policy is on veRL's actor workers** (:class:`WorkerScorer`).  Every (x_j, z_i) pair becomes
  a row of its own TransferQueue partition (:data:`PARTITION`, so veRL's replay buffer never sees
  it) in the layout the agent loop writes, padded by repeating a row to a multiple of the actor's
  data-parallel size (and of ``log_prob_micro_batch_size_per_gpu`` when the batch size is fixed).
  One ``actor_rollout_wg.compute_log_prob`` call scores them all at the rollout temperature, as
  veRL computes old log-probs; the summed log-probs of z_i's tokens are read back and the rows are
  cleared.  ``collapse_detection.micro_batch_size`` is the local forward's; veRL's own log-prob
  micro-batching applies here.

The trainer (:mod:`.trainer`) runs this after veRL's old-log-prob step, before the update, so the
policy scored is the one that sampled the step, as in the local trainer.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import torch
import transfer_queue as tq
from tensordict import TensorDict
from transfer_queue import KVBatchMeta

from ragen_bench.train.collapse_probe import TurnPair, distinct_columns, turn_pair

PARTITION = "ragen_collapse"  # TransferQueue partition of the scoring rows (never "train" or "val")


def reply_spans(mask: Sequence[int], tokens: Sequence[int]) -> list[tuple[int, int]]:
    """``(start, end)`` of each turn's reply in a veRL response: its masked positions taken in order,
    ``tokens[t]`` of them for turn t (an empty reply: an empty span where the previous one ended)."""
    positions = [i for i, bit in enumerate(mask) if bit]
    if sum(tokens) != len(positions):
        raise ValueError(f"collapse diagnostics: the row's replies have {len(positions)} masked ids but its "
                         f"turns record {sum(tokens)} tokens ({list(tokens)})")
    spans, taken, end = [], 0, 0
    for count in tokens:
        if count:
            start, end = positions[taken], positions[taken + count - 1] + 1
            if end - start != count:
                raise ValueError(f"collapse diagnostics: a reply of {count} tokens is split by unmasked ids")
            spans.append((start, end))
            taken += count
        else:
            spans.append((end, end))
    return spans


def row_turns(prompt_ids: Sequence[int], response_ids: Sequence[int], response_mask: Sequence[int],
              tokens: Sequence[int], tokenizer: Any, *, think: bool, group: int, first_only: bool) -> list[TurnPair]:
    """One veRL row's turns as :class:`TurnPair` rows (X: everything before the reply, then ``<think>``'s
    ids; Z: the reply's reasoning, split as the local trainer splits it); ``first_only``: turn 1 alone."""
    spans = reply_spans(response_mask, tokens)
    if first_only:
        spans = spans[:1]
    pairs = []
    for start, end in spans:
        reply = tokenizer.decode(list(response_ids[start:end]), skip_special_tokens=True,
                                 clean_up_tokenization_spaces=False)  # the text the agent loop scored
        pairs.append(turn_pair((*prompt_ids, *response_ids[:start]), reply, tokenizer, think=think, group=group))
    return pairs


@dataclass(frozen=True)
class StoredRow:
    """What the diagnostics read of one trajectory's TransferQueue row."""

    seed: int
    uid: str
    session: int
    output: int  # the row's number in its session: 0, or the turn's under a context window (one row per turn)
    prompt_ids: list[int]
    response_ids: list[int]
    response_mask: list[int]
    tokens: list[int]  # each turn's reply tokens (the agent loop's turn records)


def trajectory_keys(batch: KVBatchMeta) -> list[str]:
    """The batch's trajectory keys, veRL's padding rows left out."""
    return [key for key, tag in zip(batch.keys, batch.tags, strict=True) if not tag.get("is_padding", False)]


def read_rows(partition_id: str, keys: Sequence[str]) -> list[StoredRow]:
    """The rows of ``keys`` in (seed, uid, session, output) order, as the local trainer lists its trajectories."""
    data = tq.kv_batch_get(keys=list(keys), partition_id=partition_id,
                           select_fields=["prompts", "responses", "response_mask", "extra_fields"])
    columns = [data[name].unbind() for name in ("prompts", "responses", "response_mask")]  # jagged or not
    rows = []
    for key, prompts, responses, mask, extra in zip(keys, *columns, data["extra_fields"], strict=True):
        fields = getattr(extra, "data", extra)
        uid, session, output = key.rsplit("_", 2)  # veRL's key: {uid}_{session}_{output}
        row = StoredRow(int(fields["seed"]), uid, int(session), int(output), prompts.tolist(), responses.tolist(),
                        mask.tolist(), [int(turn["tokens"]) for turn in fields["turns"]])
        rows.append(((row.seed, uid, row.session, row.output), row))
    return [row for _, row in sorted(rows, key=lambda item: item[0])]


def rows_turns(rows: Sequence[StoredRow], tokenizer: Any, *, think: bool, first_only: bool) -> list[list[TurnPair]]:
    """Each trajectory's turns (its rows' :func:`row_turns` in order: one row, or one per turn), grouped by seed."""
    trajectories: dict[tuple[str, int], list[TurnPair]] = {}
    for row in rows:
        turns = trajectories.setdefault((row.uid, row.session), [])
        if not (first_only and turns):
            turns += row_turns(row.prompt_ids, row.response_ids, row.response_mask, row.tokens, tokenizer,
                               think=think, group=row.seed, first_only=first_only)
    return list(trajectories.values())


def actor_batch_multiple(worker_group: Any, rollout_config: Mapping[str, Any]) -> int:
    """How many rows a ``compute_log_prob`` batch must be a multiple of: the actor's data-parallel size (read
    as veRL's ``_balance_batch`` reads it), times the log-prob micro-batch when that is fixed."""
    if "actor" not in worker_group._dispatch_info:
        worker_group._dispatch_info["actor"] = worker_group._query_dispatch_info("actor")
    dp_size = max(worker_group._dispatch_info["actor"]) + 1
    if rollout_config.get("log_prob_use_dynamic_bsz", False):
        return dp_size
    return dp_size * int(rollout_config.get("log_prob_micro_batch_size_per_gpu") or 1)


def scoring_row(context: Sequence[int], reasoning: Sequence[int]) -> dict[str, torch.Tensor]:
    """The fields of one (x, z) row, in the layout veRL's agent-loop worker writes: z is the response, all of it
    masked; positions count from 0 (a text-only model)."""
    prompts = torch.tensor(list(context), dtype=torch.int64)
    responses = torch.tensor(list(reasoning), dtype=torch.int64)
    input_ids = torch.cat([prompts, responses])
    mask = torch.ones_like(responses)
    return {"prompts": prompts, "responses": responses, "response_mask": mask, "loss_mask": mask,
            "input_ids": input_ids, "attention_mask": torch.ones_like(input_ids),
            "position_ids": torch.arange(len(input_ids), dtype=torch.int64)}


class WorkerScorer:
    """A :data:`ragen_bench.train.collapse_probe.Scorer` on veRL's actor workers (module docstring)."""

    def __init__(self, worker_group: Any, *, temperature: float, multiple: int, step: int) -> None:
        self.worker_group, self.temperature, self.multiple, self.step = worker_group, temperature, multiple, step

    def __call__(self, contexts: Sequence[Sequence[int]],
                 reasonings: Sequence[Sequence[int]]) -> tuple[torch.Tensor, torch.Tensor]:
        columns = distinct_columns(contexts)
        cells = [(i, j) for j in sorted(set(columns)) for i in range(len(reasonings))]
        fields = [scoring_row(contexts[j], reasonings[i]) for i, j in cells]
        fields += [fields[-1]] * (-len(fields) % self.multiple)  # repeated rows, read back and ignored
        keys = [f"collapse{self.step}_{n}_0" for n in range(len(fields))]
        tags = [{"status": "success", "prompt_len": len(f["prompts"]), "response_len": len(f["responses"]),
                 "seq_len": len(f["input_ids"])} for f in fields]
        stacked = TensorDict({name: torch.nested.as_nested_tensor([f[name] for f in fields], layout=torch.jagged)
                              for name in fields[0]}, batch_size=[len(fields)])
        tq.kv_batch_put(keys=keys, partition_id=PARTITION, fields=stacked, tags=tags)
        try:
            meta = KVBatchMeta(partition_id=PARTITION, keys=keys, tags=tags,
                               extra_info={"calculate_entropy": False, "compute_loss": False,
                                           "temperature": self.temperature})
            self.worker_group.compute_log_prob(meta)
            log_probs = tq.kv_batch_get(keys=keys, partition_id=PARTITION, select_fields=["log_probs"])["log_probs"]
        finally:
            tq.kv_clear(keys=keys, partition_id=PARTITION)
        total = torch.zeros(len(reasonings), len(contexts))
        for (i, j), row, field in zip(cells, log_probs.unbind(), fields, strict=False):
            # veRL's log_probs[t] is log p(input_ids[t + 1]): z's tokens are read from the prompt's last position on.
            p, n = len(field["prompts"]), len(field["responses"])
            total[i, j] = row[p - 1 : p + n - 1].float().sum()
        total = total[:, columns]  # equal contexts: the first one's column
        lengths = torch.tensor([len(z) for z in reasonings], dtype=torch.float32)
        return total / lengths[:, None], total
