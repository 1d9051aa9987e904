"""Bi-level GAE (RAGEN's turn-then-token GAE) as the advantage step of veRL's V1 trainer.

veRL's registered advantage estimators never see the critic's values, so bi-level GAE cannot
be an estimator.  :func:`bi_level_advantages` computes
:func:`ragen_bench.starpo.advantages.compute_bi_level_gae` on the tensors veRL's advantage step
holds (rewards after any KL penalty, the critic's values, the response mask), with
``algorithm.gamma``/``lam`` and the trainer's ``high_level_gamma``; the trainer of
:mod:`.trainer` calls it where veRL calls its own estimator dispatch.  Turns end at the last
token of each reply (the mask's runs), the default of
:func:`~ragen_bench.starpo.advantages.compute_bi_level_gae`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ragen_bench.starpo.advantages import compute_bi_level_gae

if TYPE_CHECKING:
    from verl import DataProto

DEFAULT_HIGH_LEVEL_GAMMA = 0.95


def bi_level_advantages(data: DataProto, *, gamma: float, lam: float, high_level_gamma: float) -> DataProto:
    """Fill ``data.batch["advantages"]``/``["returns"]`` (a veRL ``DataProto``) with bi-level GAE."""
    batch = data.batch
    advantages, returns = compute_bi_level_gae(
        batch["token_level_rewards"],
        batch["values"],
        batch["response_mask"].bool(),
        gamma=gamma,
        lam=lam,
        high_level_gamma=high_level_gamma,
    )
    batch["advantages"] = advantages
    batch["returns"] = returns
    return data
