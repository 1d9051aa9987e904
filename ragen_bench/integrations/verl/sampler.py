"""The StarPO-S filter as a veRL V1 custom sampler: over-generate, keep the groups whose scores vary most.

veRL loads this file by path (``trainer.v1.sampler.custom_sampler.path``/``.name``); the recipe
sets ``data.train_batch_size`` to the number of groups kept per step and passes the filter's
settings in ``trainer.v1.sampler.sampler_kwargs``: ``groups`` (rolled out per step), ``ratio``
and ``mode``.  Each training step the sampler asks the trainer for ``groups - train_batch_size``
more prompts, waits until every group has finished, and keeps exactly the groups
:func:`ragen_bench.starpo.filter.filter_groups` keeps for those scores: a group is one prompt's
``rollout.n`` trajectories (its veRL uid), a trajectory's score is the sum of its ``rm_scores``
(the episode's total score the agent loop set).  Groups are listed by seed (then uid), so ties
go to the smaller seed.  The other groups are cleared from TransferQueue.  Validation batches
pass through veRL's own sampling unchanged.

This reuses :class:`ReplayBuffer`'s helpers (metadata sync, group clearing, batch
materialisation), which are private to veRL: the integration pins ``verl>=0.9,<0.10``.
"""

from __future__ import annotations

import time
from collections import defaultdict
from typing import Any

import torch
import transfer_queue as tq
from transfer_queue import KVBatchMeta

from ragen_bench.starpo.filter import filter_groups, filter_metrics
from verl.trainer.ppo.v1.replay_buffer import ReplayBuffer

METRIC_PREFIX = "training/starpo_s/"


class StarPOSFilterSampler(ReplayBuffer):
    """Synchronous sampling with the StarPO-S group filter (module docstring)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        settings = dict(self.sampler_kwargs or {})
        missing = [key for key in ("groups", "ratio") if key not in settings]
        if missing:
            raise ValueError(f"{type(self).__name__}: trainer.v1.sampler.sampler_kwargs lacks {missing}")
        if self.refill_fn is None:
            raise ValueError(f"{type(self).__name__}: needs the trainer's refill function to over-generate")
        self.groups = int(settings["groups"])
        self.ratio = float(settings["ratio"])
        self.mode = str(settings.get("mode", "std"))
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
            # The refill says how many it could submit (fewer at the end of the data).
            submitted = self.refill_fn(self.groups - batch_size)
            self._step_groups = batch_size + (submitted if isinstance(submitted, int) else self.groups - batch_size)
            self._topped_up_step = global_steps
        uids = self._wait_for_groups(partition_id)
        group_ids, scores = self._scored_trajectories(partition_id, uids)
        result = filter_groups(torch.tensor(scores, dtype=torch.float64), group_ids, ratio=self.ratio, mode=self.mode)
        order = list(dict.fromkeys(group_ids))  # group number -> uid, first appearance first
        kept = [order[number] for number in result.groups.tolist()]
        self._clear_groups(partition_id, set(uids) - set(kept))
        batch = self._materialize_batch(partition_id, kept, dict(self.partitions[partition_id]))
        metrics = {METRIC_PREFIX + name: value for name, value in filter_metrics(result).items()}
        return batch, metrics

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

    def _scored_trajectories(self, partition_id: str, uids: list[str]) -> tuple[list[str], list[float]]:
        """Each trajectory's group uid and score, ordered by (seed, uid, key)."""
        wanted = set(uids)
        keys = [key for key in self.partitions[partition_id] if key.split("_")[0] in wanted]
        if not keys:
            raise RuntimeError(f"{type(self).__name__}: the step's {len(uids)} groups produced no trajectory")
        data = tq.kv_batch_get(keys=keys, partition_id=partition_id, select_fields=["rm_scores", "extra_fields"])
        seeds: dict[str, int] = defaultdict(int)
        rows = []
        for key, rm_scores, extra in zip(keys, data["rm_scores"], data["extra_fields"], strict=True):
            uid = key.split("_")[0]
            seeds[uid] = int(getattr(extra, "data", extra)["seed"])
            rows.append((key, uid, float(rm_scores.sum())))
        rows.sort(key=lambda row: (seeds[row[1]], row[1], row[0]))
        return [row[1] for row in rows], [row[2] for row in rows]
