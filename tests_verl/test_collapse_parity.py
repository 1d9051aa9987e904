"""Parity of ``ragen_bench.starpo.collapse`` with RAGEN-2's own ``CollapseDetector``.

RAGEN-2's ``ragen/trainer/collapse_metrics.py`` imports veRL's ``DataProto``, so this test lives
with veRL.  RAGEN-2's module comes from a checkout named by ``RAGEN2_CHECKOUT`` (skipped with a
how-to otherwise), loaded by the main tests' ``tests/benchmarks/peer_checkout.py``, read by
its file path: this folder never imports the ``tests`` package (veRL's wheel ships one).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from verl import DataProto

from ragen_bench.starpo.collapse import collapse_metrics

PEER_CHECKOUT = Path(__file__).resolve().parents[1] / "tests" / "benchmarks" / "peer_checkout.py"


def _peer_checkout():
    name = "ragen_bench_peer_checkout"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, PEER_CHECKOUT)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up while the file runs
        spec.loader.exec_module(module)
    return sys.modules[name]


# -- parity with RAGEN-2 -------------------------------------------------------------------------------

# ragen/trainer/collapse_metrics.py at 20daedc (it imports torch, numpy and veRL's DataProto; ragen/trainer
# has no __init__.py).
RAGEN2_COLLAPSE = {"ragen/trainer/collapse_metrics.py": "b4eef028b5374b6a2d660b3de7bba999388df4d5"}


def test_parity_with_ragen2_collapse_detector_on_random_log_probs():
    """RAGEN-2's whole ``_compute_metrics_for_pairs`` (its own cross-scoring loop fed random per-token
    log-probs through a stand-in actor) against ours on the same tokens, over two diagnostic steps
    (the moving averages)."""
    checkout = _peer_checkout()
    peer = checkout.load(checkout.RAGEN2, "ragen.trainer.collapse_metrics", RAGEN2_COLLAPSE)

    generator = torch.Generator().manual_seed(0)
    n_prompts, k, width = 5, 3, 7
    detector = peer.CollapseDetector(micro_batch_size=4, std_eps=1e-3, ema_decay=0.8)
    previous = None
    for step in range(2):
        # Prompts of two tokens: column j is [100 + j, 200 + j]; prompt 4 repeats prompt 3's text.
        group_ids = np.repeat(np.arange(n_prompts), k)
        prompt_of = [[100 + min(g, 3), 200 + min(g, 3)] for g in group_ids]
        lengths = torch.randint(1, width + 1, (n_prompts * k,), generator=generator)
        lengths[0] = width  # RAGEN-2 pads the reasoning to the longest one
        reasonings = [torch.randint(5, 50, (int(n),), generator=generator).tolist() for n in lengths]
        table = -5 * torch.rand(n_prompts, n_prompts * k, width, generator=generator)  # log p per token under x_j

        columns = iter(table)  # RAGEN-2 scores every row under prompt 0, then 1, ... (one call each)

        def actor(cross_batch):
            return DataProto.from_dict(tensors={"old_log_probs": next(columns)})

        batch = DataProto.from_dict(tensors={"input_ids": torch.zeros(2, 3, dtype=torch.long),
                                             "attention_mask": torch.ones(2, 3, dtype=torch.long)})
        theirs = detector._compute_metrics_for_pairs(batch, actor, prompt_of, reasonings, group_ids, ema_key="x")

        mask = torch.arange(width)[None, :] < lengths[:, None]
        total = (table * mask).sum(dim=2).T  # [rows, prompts]
        mean = total / lengths[:, None]
        signatures = [tuple(prompt_of[j * k]) for j in range(n_prompts)]
        ours = collapse_metrics(mean, total, torch.from_numpy(group_ids), signatures, std_eps=1e-3, ema_decay=0.8,
                                ema_std=previous)
        previous = (ours["marginal_std_ema"], ours["marginal_std_ema_seq"])
        assert {f"collapse/{name}" for name in ours} == set(theirs)
        for name, value in ours.items():
            assert value == pytest.approx(theirs[f"collapse/{name}"], rel=1e-5, abs=1e-6), (step, name)
