"""StarPO's changes to veRL's V1 synchronous trainer: one registered trainer, veRL's everywhere else.

:class:`StarPOTrainer` (``trainer.v1.trainer_mode=ragen_sync``) is veRL's ``PPOTrainerSync``
with its advantage step hooked: where veRL calls its estimator dispatch
(``trainer_base.compute_advantage_for_multi_trajectories``), :func:`advantage_hooks` routes the
call, for that one step, to

* bi-level GAE (:func:`.bi_level.bi_level_advantages`) instead of veRL's estimator, when
  ``trainer.v1.ragen_sync.bi_level`` is true (``high_level_gamma`` beside it);
* then RAGEN-2's ``filter_loss_scaling`` (``trainer.v1.ragen_sync.filter_loss_scaling``): the
  advantages times :func:`ragen_bench.starpo.filter.loss_scale` of the step's kept share, the
  ``kept_groups`` / ``groups`` our sampler (:mod:`.sampler`) logged into the step's metrics
  (factor 1 when the step ran without it: nothing was filtered).

Everything around it (reading the batch from TransferQueue, the KL penalty, rollout
correction, writing advantages and returns back) stays veRL's.  The recipe uses this trainer
only when a run needs one of the hooks.  The module must be imported in veRL's TaskRunner
process: the recipe puts it in ``VERL_USE_EXTERNAL_MODULES``, which veRL imports on every
``import verl``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from ragen_bench.integrations.verl.bi_level import DEFAULT_HIGH_LEVEL_GAMMA, bi_level_advantages
from ragen_bench.integrations.verl.recipe import TRAINER_MODE
from ragen_bench.integrations.verl.sampler import METRIC_PREFIX
from ragen_bench.starpo.filter import loss_scale
from verl.trainer.ppo.v1 import trainer_base
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync


def kept_share_scale(settings: Mapping[str, Any], metrics: Mapping[str, Any]) -> float:
    """The factor ``filter_loss_scaling`` puts on this step's advantages, from the sampler's metrics."""
    groups = metrics.get(METRIC_PREFIX + "groups")
    if not groups:
        return 1.0
    return loss_scale(int(metrics[METRIC_PREFIX + "kept_groups"]), int(groups),
                      str(settings.get("filter_loss_scaling", "none")))


@contextmanager
def advantage_hooks(settings: Mapping[str, Any], metrics: dict) -> Iterator[None]:
    """Route veRL's advantage dispatch in ``trainer_base`` through the hooks (module docstring) for one call."""
    original = trainer_base.compute_advantage_for_multi_trajectories
    bi_level = bool(settings.get("bi_level", False))
    high_level_gamma = float(settings.get("high_level_gamma", DEFAULT_HIGH_LEVEL_GAMMA))
    scale = kept_share_scale(settings, metrics)

    def dispatch(data: Any, *, gamma: float = 1.0, lam: float = 1.0, **kwargs: Any) -> Any:
        if bi_level:
            data = bi_level_advantages(data, gamma=gamma, lam=lam, high_level_gamma=high_level_gamma)
        else:
            data = original(data, gamma=gamma, lam=lam, **kwargs)
        if scale != 1.0:
            data.batch["advantages"] = data.batch["advantages"] * scale
        return data

    trainer_base.compute_advantage_for_multi_trajectories = dispatch
    try:
        yield
    finally:
        trainer_base.compute_advantage_for_multi_trajectories = original


@register_trainer(TRAINER_MODE)
class StarPOTrainer(PPOTrainerSync):
    """veRL's synchronous V1 trainer with StarPO's advantage hooks (module docstring)."""

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
        with advantage_hooks(settings, metrics):
            return super()._compute_advantage(batch, metrics)
