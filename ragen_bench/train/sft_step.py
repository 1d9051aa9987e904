"""One step of the supervised warm start (``algo=sft``): a batch of records, one optimiser step.

Step *k* of an epoch takes the *k*-th slice of that epoch's shuffled records (the shuffle depends only
on (``seed``, epoch)), so a resumed run takes the same batches as an uninterrupted one.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from ragen_bench.starpo.sft import sft_loss
from ragen_bench.train.config import TrainConfig
from ragen_bench.train.minibatches import Averages, clip_grad
from ragen_bench.train.schedule import derived_seed
from ragen_bench.train.sft_data import tokenize_sft

# SFT records longer than this many tokens are dropped (a Sokoban episode of 5 turns is ~1,500).
SFT_MAX_TOKENS = 4096


def sft_update(config: TrainConfig, policy: Any, tokenizer: Any, optimizer: Any, records: list[dict[str, Any]],
               step: int) -> dict[str, float]:
    """Train ``policy`` on step ``step``'s batch of ``records``; the step's metrics."""
    c = config
    per_epoch = math.ceil(len(records) / c.sft.batch)
    epoch, index = divmod(step, per_epoch)
    order = torch.randperm(len(records), generator=torch.Generator().manual_seed(derived_seed(c.seed, "sft", epoch)))
    chosen = [records[i] for i in order[index * c.sft.batch : (index + 1) * c.sft.batch].tolist()]
    started = time.perf_counter()
    policy.train()
    batch = tokenize_sft(chosen, tokenizer, max_length=SFT_MAX_TOKENS)
    # Rows with equal prompts side by side: a micro-batch encodes their shared prefix once.
    rows = sorted(range(len(batch["input_ids"])), key=lambda row: batch["input_ids"][row].tolist())
    tokens = float(batch["loss_mask"][:, 1:].sum())
    optimizer.zero_grad(set_to_none=True)
    totals = Averages()
    for micro in torch.tensor(rows).split(c.actor.micro_batch):
        part = {key: batch[key][micro] for key in ("input_ids", "attention_mask", "loss_mask")}
        weight = float(part["loss_mask"][:, 1:].sum()) / tokens
        loss, metrics = sft_loss(policy, part)
        (loss * weight).backward()
        totals.add({f"sft/{k}": v for k, v in metrics.items() if k != "tokens"}, weight)
    grad_norm = clip_grad(policy, c.actor.grad_clip)
    optimizer.step()
    policy.eval()
    return {**totals.means(), "sft/tokens": tokens, "sft/dropped": float(batch["dropped"]), "sft/epoch": float(epoch),
            "actor/grad_norm": grad_norm,
            "time/step": time.perf_counter() - started}
