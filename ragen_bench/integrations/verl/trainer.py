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

and, after veRL's old-log-prob step, on the schedule of ``trainer.v1.ragen_sync.collapse_detection``
(the train config's block; ``think`` and ``seed`` beside it), RAGEN-2's collapse diagnostics
(:mod:`.collapse`): the rollout's first turns (and any turn, with ``multi_turn_enabled``; before the
filter, as our sampler kept them) scored under each other's prompts on the actor workers, logged with the step's metrics and timed as
``timing_s/collapse``.  Their moving averages live in the trainer: a resumed run starts them again.

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

from ragen_bench.integrations.verl import collapse
from ragen_bench.integrations.verl.bi_level import DEFAULT_HIGH_LEVEL_GAMMA, bi_level_advantages
from ragen_bench.integrations.verl.recipe import TRAINER_MODE
from ragen_bench.integrations.verl.sampler import METRIC_PREFIX
from ragen_bench.starpo.filter import loss_scale
from ragen_bench.train.collapse_probe import CollapseProbe
from verl.trainer.ppo.v1 import trainer_base
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl import DataProto
from verl.utils.debug import marked_timer


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

    def dispatch(data: DataProto, *, gamma: float = 1.0, lam: float = 1.0, **kwargs: Any) -> DataProto:
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

    def _compute_advantage(self, batch: DataProto, metrics: dict) -> DataProto:
        settings = self.config.trainer.v1.get(TRAINER_MODE, {}) or {}
        with advantage_hooks(settings, metrics):
            return super()._compute_advantage(batch, metrics)

    def _compute_old_log_prob(self, batch: DataProto, metrics: dict) -> DataProto:
        batch = super()._compute_old_log_prob(batch, metrics)
        probe = self._collapse_probe()
        if probe is not None and probe.due(self.global_steps):
            with marked_timer("collapse", self.timing_raw, color="purple"):
                metrics.update(self._collapse_metrics(probe, batch))
        return batch

    def _collapse_probe(self) -> CollapseProbe | None:
        """The run's probe (built on first use, so its moving averages persist), None when not configured."""
        if not hasattr(self, "_probe"):
            settings = self.config.trainer.v1.get(TRAINER_MODE, {}) or {}
            block = settings.get("collapse_detection")
            self._probe = None if block is None else CollapseProbe(block, int(settings.get("seed", 0)))
        return self._probe

    def _collapse_metrics(self, probe: CollapseProbe, batch: Any) -> dict[str, float]:
        settings = self.config.trainer.v1[TRAINER_MODE]
        rollout = self.config.actor_rollout_ref.rollout
        # The whole rollout, as our sampler read it before filtering; without it, the batch is the rollout.
        stashed = getattr(self.replay_buffer, "collapse_rows", None)
        if stashed is not None:
            self.replay_buffer.collapse_rows = None  # read once: the token lists are not kept past their step
        if stashed is not None and stashed[0] == self.global_steps:
            rows = stashed[1]
        else:
            rows = collapse.read_rows(batch.partition_id, collapse.trajectory_keys(batch))
        turns = collapse.rows_turns(rows, self.tokenizer, think=bool(settings.get("think", True)),
                                    first_only=probe.first_only)
        score = collapse.WorkerScorer(self.actor_rollout_wg, temperature=float(rollout.temperature),
                                      multiple=collapse.actor_batch_multiple(self.actor_rollout_wg, rollout),
                                      step=self.global_steps)
        return probe.measure(turns, score, self.global_steps - 1)  # 0-based, as the local trainer seeds its draw
