"""Bi-level GAE (RAGEN's turn-then-token GAE) inside veRL's V1 synchronous trainer.

veRL's registered advantage estimators never see the critic's values, so bi-level GAE cannot
be an estimator.  Instead this module registers a trainer, :class:`BiLevelGAETrainer`
(``trainer.v1.trainer_mode=ragen_bi_level_sync``), that is veRL's ``PPOTrainerSync`` with one
change in its advantage step: where veRL calls its own estimator dispatch, it computes
:func:`ragen_bench.starpo.advantages.compute_bi_level_gae` on the same tensors (rewards after
any KL penalty, the critic's values, the response mask), with ``algorithm.gamma``/``lam`` and
``trainer.v1.ragen_bi_level_sync.high_level_gamma``.  Everything around it (reading the batch
from TransferQueue, the KL penalty, rollout correction, writing advantages and returns back)
stays veRL's.  Turns end at the last token of each reply (the mask's runs), the default of
:func:`~ragen_bench.starpo.advantages.compute_bi_level_gae`.

The module must be imported in veRL's TaskRunner process: the recipe puts it in
``VERL_USE_EXTERNAL_MODULES``, which veRL imports on every ``import verl``.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ragen_bench.integrations.verl.recipe import BI_LEVEL_TRAINER_MODE as TRAINER_MODE
from ragen_bench.starpo.advantages import compute_bi_level_gae
from verl.trainer.ppo.v1 import trainer_base
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync

DEFAULT_HIGH_LEVEL_GAMMA = 0.95


def bi_level_advantages(data: Any, *, gamma: float, lam: float, high_level_gamma: float) -> Any:
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


@contextmanager
def _estimator(high_level_gamma: float) -> Iterator[None]:
    """Route veRL's advantage dispatch in ``trainer_base`` to :func:`bi_level_advantages` for one call."""
    original = trainer_base.compute_advantage_for_multi_trajectories

    def dispatch(data: Any, *, gamma: float = 1.0, lam: float = 1.0, **_: Any) -> Any:
        return bi_level_advantages(data, gamma=gamma, lam=lam, high_level_gamma=high_level_gamma)

    trainer_base.compute_advantage_for_multi_trajectories = dispatch
    try:
        yield
    finally:
        trainer_base.compute_advantage_for_multi_trajectories = original


@register_trainer(TRAINER_MODE)
class BiLevelGAETrainer(PPOTrainerSync):
    """veRL's synchronous V1 trainer with bi-level GAE as its advantage estimator (module docstring)."""

    @property
    def trainer_mode(self) -> str:
        # veRL's base class branches on `trainer_mode == "sync"` (sampler, refills, weight sync);
        # it sets the attribute from the config name, which is ours, so reads must still say sync.
        return "sync"

    @trainer_mode.setter
    def trainer_mode(self, _name: str) -> None:
        pass

    def _compute_advantage(self, batch: Any, metrics: dict) -> Any:
        settings = self.config.trainer.v1.get(TRAINER_MODE, {}) or {}
        with _estimator(float(settings.get("high_level_gamma", DEFAULT_HIGH_LEVEL_GAMMA))):
            return super()._compute_advantage(batch, metrics)
