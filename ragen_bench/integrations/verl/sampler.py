"""The rollout filter as a veRL V1 custom sampler: roll out every group, train on the ones the filter keeps.

veRL loads this file by path (``trainer.v1.sampler.custom_sampler.path``/``.name``); the recipe
sets ``data.train_batch_size`` to the groups a step trains on (std / std_rev: the kept count;
RAGEN-2's filter: ``rollout.groups``) and passes the filter in ``trainer.v1.sampler.sampler_kwargs``:
``groups`` (rolled out per step), ``refill_rounds``, ``empty_stop_steps``, ``collapse_compute_freq``
(on the collapse diagnostics' steps the sampler keeps the whole rollout's rows for them,
:attr:`collapse_rows`, before it clears the dropped groups; 0: never) and the fields of a
:class:`ragen_bench.starpo.filter_spec.FilterSpec` (the train config's ``filter.spec``, StarPO-S's
std preset included).  Each training step the sampler asks the trainer for ``groups -
train_batch_size`` more prompts, waits until every group has finished, and keeps exactly the
groups :func:`ragen_bench.starpo.filter.filter_rollouts` keeps for those scores: a group is one
prompt's ``rollout.n`` trajectories (its veRL uid), a trajectory's score is the sum of its
``rm_scores`` (the episode's total score the agent loop set, less the overlong charge the local
trainer adds only after filtering), its length the tokens of its
replies (the ``length`` metric).  Groups are listed by seed (then uid), so ties go to the
smaller seed.  The other groups are cleared from TransferQueue.  Validation batches pass
through veRL's own sampling unchanged.

As the local trainer: with ``refill_rounds`` (DAPO's dynamic sampling) fresh rounds of
``groups`` prompts are rolled out until the filter keeps ``groups`` groups, and the best
``groups`` are kept.  veRL cannot skip a step, so where the local trainer skips a step that
keeps no group (and stops after ``empty_stop_steps`` in a row), the sampler rolls out fresh
rounds instead, and after ``empty_stop_steps`` of them with nothing kept stops the run.

This reuses :class:`ReplayBuffer`'s helpers (metadata sync, group clearing, batch
materialisation), which are private to veRL: the integration pins ``verl>=0.9,<0.10``.
"""

from __future__ import annotations

import dataclasses
import time
from collections import defaultdict
from typing import Any

import torch
import transfer_queue as tq
from transfer_queue import KVBatchMeta

from ragen_bench.integrations.verl import collapse
from ragen_bench.starpo.filter import best_groups, filter_metrics, filter_rollouts
from ragen_bench.starpo.filter_spec import FilterSpec
from ragen_bench.train.collapse_probe import due
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

METRIC_PREFIX = "training/starpo_s/"
SPEC_FIELDS = tuple(field.name for field in dataclasses.fields(FilterSpec))


class StarPOSFilterSampler(ReplayBuffer):
    """Synchronous sampling with the rollout filter (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = dict(self.sampler_kwargs or {})
        missing = [key for key in ("groups", *SPEC_FIELDS) if key not in settings]
        if missing:
            raise ValueError(f"{type(self).__name__}: trainer.v1.sampler.sampler_kwargs lacks {missing}")
        if self.refill_fn is None:
            raise ValueError(f"{type(self).__name__}: needs the trainer's refill function to over-generate")
        self.groups = int(settings["groups"])
        self.refill_rounds = int(settings.get("refill_rounds", 0))
        self.empty_stop_steps = int(settings.get("empty_stop_steps", 0))
        self.spec = FilterSpec(**{name: settings[name] for name in SPEC_FIELDS})
        self.collapse_compute_freq = int(settings.get("collapse_compute_freq", 0))
        self.collapse_rows: tuple[int, list[collapse.StoredRow]] | None = None  # (step, the rollout's rows)
        self._topped_up_step: int | None = None
        self._step_groups = self.groups

    def sample(self, global_steps: int, partition_id: str, batch_size: int) -> tuple[KVBatchMeta, dict]:
        if partition_id == "val":
            return super().sample(global_steps, partition_id, batch_size)
        if self.groups < batch_size:
            raise ValueError(
                f"{type(self).__name__}: sampler_kwargs.groups ({self.groups}) is below the "
                f"{batch_size} groups a step trains on (data.train_batch_size)"
            )
        if self._topped_up_step != global_steps:
            # The trainer submitted batch_size prompts for this step; the filter needs them all.
            self._step_groups = batch_size + self._refill(self.groups - batch_size)
            self._topped_up_step = global_steps
        rounds = 1
        while True:
            uids = self._wait_for_groups(partition_id)
            group_ids, scores, lengths = self._scored_trajectories(partition_id, uids)
            result = filter_rollouts(torch.tensor(scores, dtype=torch.float64), group_ids, self.spec,
                                     lengths=torch.tensor(lengths, dtype=torch.float64))
            kept = result.groups.numel()
            refill = rounds <= self.refill_rounds and kept < self.groups
            retry = kept == 0 and rounds <= self.refill_rounds + self.empty_stop_steps
            if not (refill or retry):
                break
            added = self._refill(self.groups)
            if added == 0:
                break  # the train data ran out: train on what was kept
            self._step_groups += added
            rounds += 1
        if kept == 0:
            raise RuntimeError(
                f"{type(self).__name__}: the filter kept no group of {len(uids)} in {rounds} rounds of rollouts "
                f"at step {global_steps} (filter.empty_stop_steps={self.empty_stop_steps}); veRL cannot skip a step"
            )
        if self.refill_rounds:
            result = best_groups(result, group_ids, self.groups)
        order = list(dict.fromkeys(group_ids))  # group number -> uid, first appearance first
        kept_uids = [order[number] for number in result.groups.tolist()]
        if due(global_steps, self.collapse_compute_freq):  # the diagnostics read the rollout before the filter
            self.collapse_rows = (global_steps, collapse.read_rows(partition_id, self._trajectory_keys(partition_id, uids)))
        self._clear_groups(partition_id, set(uids) - set(kept_uids))
        batch = self._materialize_batch(partition_id, kept_uids, dict(self.partitions[partition_id]))
        metrics = {METRIC_PREFIX + name: value for name, value in filter_metrics(result).items()}
        metrics[METRIC_PREFIX + "rounds"] = float(rounds)
        return batch, metrics

    def _refill(self, count: int) -> int:
        """Ask the trainer for ``count`` more prompts; how many it could submit (fewer at the end of the data)."""
        if count <= 0:
            return 0
        submitted = self.refill_fn(count)
        return submitted if isinstance(submitted, int) else count

    def _wait_for_groups(self, partition_id: str) -> list[str]:
        """Poll until nothing is pending or running and every group of the step is terminal; their uids."""
        last_debug_time = time.time()
        while True:
            self._sync_metadata_from_transfer_queue()
            in_flight = self.pending_keys[partition_id] | self.running_keys[partition_id]
            terminal = self.finished_keys[partition_id] | self.failure_keys[partition_id]
            if not in_flight and len(terminal) >= self._step_groups:
                return sorted(terminal)
            last_debug_time = self._wait_for_next_poll(partition_id, last_debug_time)

    def _trajectory_keys(self, partition_id: str, uids: list[str]) -> list[str]:
        """The trajectory keys (``{uid}_{session}_{output}``) of the groups ``uids``."""
        wanted = set(uids)
        return [key for key in self.partitions[partition_id] if key.rsplit("_", 2)[0] in wanted]

    def _scored_trajectories(self, partition_id: str, uids: list[str]) -> tuple[list[str], list[float], list[int]]:
        """Each trajectory's group uid, score and reply tokens, ordered by (seed, uid, session).

        A trajectory is a session ``{uid}_{session}``: one row, or one per turn under a context window
        (``{uid}_{session}_{turn}``); its score is its last row's (every row carries the episode's), its
        tokens and overlong charges those of all its rows' turn records.
        """
        keys = self._trajectory_keys(partition_id, uids)
        if not keys:
            raise RuntimeError(f"{type(self).__name__}: the step's {len(uids)} groups produced no trajectory")
        data = tq.kv_batch_get(keys=keys, partition_id=partition_id, select_fields=["rm_scores", "extra_fields"])
        sessions: dict[tuple[str, int], dict[str, Any]] = {}
        for key, rm_scores, extra in zip(keys, data["rm_scores"], data["extra_fields"], strict=True):
            uid, session, output = key.rsplit("_", 2)
            fields = getattr(extra, "data", extra)
            turns = fields.get("turns", ())
            entry = sessions.setdefault((uid, int(session)), {"seed": int(fields["seed"]), "last": -1, "score": 0.0,
                                                              "tokens": 0, "charges": 0.0})
            entry["tokens"] += sum(int(turn["tokens"]) for turn in turns)
            entry["charges"] += sum(float(turn.get("overlong_penalty", 0.0)) for turn in turns)
            if int(output) > entry["last"]:
                entry["last"], entry["score"] = int(output), float(rm_scores.sum())
        # The local trainer filters on the episode scores, before DAPO's overlong charge is added.
        rows = sorted((entry["seed"], uid, session, entry["score"] - entry["charges"], entry["tokens"])
                      for (uid, session), entry in sessions.items())
        return [row[1] for row in rows], [row[3] for row in rows], [row[4] for row in rows]
