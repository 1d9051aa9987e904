"""The table of algorithm choices: one record per advantage estimator, GRPO mode, loss aggregation,
training algorithm and preset.

Everything that offers or reads one of these choices reads it here: the train config (the allowed
values of ``advantage.estimator``, ``advantage.grpo_mode``, ``actor.loss_agg``, ``algo``, ``preset``
and whether a critic is trained), the local trainer (which function computes the advantages, how a
micro-batch is weighted), ``--dry-run`` (the estimator's words) and the veRL recipe (the name veRL
knows each one by, or a clear refusal where veRL has none).  Adding an estimator is one
:class:`Estimator` in :data:`ESTIMATORS` (and its tests).

This module imports no torch: checking a config and ``--dry-run`` read it, and they load no torch.
The estimators' functions import :mod:`ragen_bench.starpo.advantages` when they are called.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

# ``compute(settings, rewards, values, mask, group_ids, episode_ids) -> (advantages, returns)``;
# ``settings`` is the ``advantage`` config section (anything with its attributes).
AdvantageFunction = Callable[..., tuple[Any, Any]]


@dataclass(frozen=True)
class Estimator:
    """An advantage estimator (``advantage.estimator``)."""

    name: str
    critic: bool  # trains a value model, whose per-token values ``compute`` receives
    compute: AdvantageFunction
    verl: str | None  # veRL's ``algorithm.adv_estimator`` for it; None: veRL has none (the recipe refuses)
    dry_run: str  # the words after "advantage NAME" in ``--dry-run``, formatted with the advantage settings
    reads_grpo_mode: bool = False  # ``advantage.grpo_mode`` picks the variant (and veRL's name: GrpoMode)
    verl_bi_level: bool = False  # under veRL, ragen's trainer (integrations/verl/trainer.py) replaces the advantages


@dataclass(frozen=True)
class GrpoMode:
    """How a group-relative estimator normalises (``advantage.grpo_mode``)."""

    name: str
    divides_by_std: bool  # veRL's ``algorithm.norm_adv_by_std_in_grpo``
    verl: str | None = None  # veRL's estimator name when it is not the estimator's own (RLOO)


@dataclass(frozen=True)
class LossAggregation:
    """How a per-token loss becomes a scalar (``actor.loss_agg``; :func:`ragen_bench.starpo.losses.aggregate`)."""

    name: str
    weighs_tokens: bool  # True: every token counts the same; False: every row (trajectory) does
    verl: str  # veRL's ``actor.loss_agg_mode``


@dataclass(frozen=True)
class Algorithm:
    """What a training step does (``algo``): the trainer calls its ``Trainer.<name>_step``."""

    name: str
    verl: bool  # the veRL backend trains it
    description: str


@dataclass(frozen=True)
class Preset:
    """A preset, ``configs/train/<name>.yaml`` (``base.yaml`` plus a few changed keys)."""

    name: str
    description: str


# -- the estimators' functions (torch is imported only when one is called) -----------------------


def _gae(settings: Any, rewards: Any, values: Any, mask: Any, group_ids: Any, episode_ids: Any) -> tuple[Any, Any]:
    from ragen_bench.starpo.advantages import compute_gae

    return compute_gae(rewards, values, mask, gamma=settings.gamma, lam=settings.lam, whiten=settings.whiten)


def _grpo(settings: Any, rewards: Any, values: Any, mask: Any, group_ids: Any, episode_ids: Any) -> tuple[Any, Any]:
    from ragen_bench.starpo.advantages import compute_grpo

    return compute_grpo(rewards, mask, group_ids, mode=settings.grpo_mode, episode_ids=episode_ids)


def _bi_level_gae(settings: Any, rewards: Any, values: Any, mask: Any, group_ids: Any,
                  episode_ids: Any) -> tuple[Any, Any]:
    from ragen_bench.starpo.advantages import compute_bi_level_gae

    return compute_bi_level_gae(rewards, values, mask, gamma=settings.gamma, lam=settings.lam,
                                high_level_gamma=settings.high_level_gamma, whiten=settings.whiten)


# -- the tables ------------------------------------------------------------------------------------

# Every estimator says "gamma, lambda" in --dry-run, as it always has (GRPO reads neither).
_GAMMA_LAMBDA = "gamma {gamma}, lambda {lam}"

T = TypeVar("T")


def _by_name(*records: T) -> dict[str, T]:
    return {record.name: record for record in records}  # type: ignore[attr-defined]


ESTIMATORS: dict[str, Estimator] = _by_name(
    Estimator("gae", critic=True, compute=_gae, verl="gae", dry_run=_GAMMA_LAMBDA),
    Estimator("grpo", critic=False, compute=_grpo, verl="grpo", dry_run=_GAMMA_LAMBDA, reads_grpo_mode=True),
    # veRL computes GAE's inputs (the critic's values); ragen's veRL trainer swaps in the bi-level advantages.
    Estimator("bi_level_gae", critic=True, compute=_bi_level_gae, verl="gae", dry_run=_GAMMA_LAMBDA,
              verl_bi_level=True),
)

GRPO_MODES: dict[str, GrpoMode] = _by_name(
    GrpoMode("mean_std", divides_by_std=True),
    GrpoMode("mean", divides_by_std=False),  # Dr. GRPO
    GrpoMode("rloo", divides_by_std=False, verl="rloo"),
)

LOSS_AGGREGATIONS: dict[str, LossAggregation] = _by_name(
    LossAggregation("token-mean", weighs_tokens=True, verl="token-mean"),
    LossAggregation("seq-mean-token-sum", weighs_tokens=False, verl="seq-mean-token-sum"),
    LossAggregation("seq-mean-token-mean", weighs_tokens=False, verl="seq-mean-token-mean"),
)

ALGORITHMS: dict[str, Algorithm] = _by_name(
    Algorithm("starpo", verl=True, description="PPO or GRPO on whole multi-turn trajectories (StarPO / StarPO-S)"),
    Algorithm("sft", verl=False, description="supervised warm start on a scripted agent's episodes"),
)

PRESETS: dict[str, Preset] = _by_name(
    Preset("starpo-s", "StarPO-S: GAE with a critic, the std filter keeping 0.25 of groups, clip-higher"),
    Preset("starpo", "StarPO: GAE with a critic, no filter, KL as a loss"),
    Preset("ppo", "PPO: GAE with a critic, no filter, no dual clip, token-mean loss"),
    Preset("grpo", "GRPO: group-relative advantages, no critic, KL as a loss"),
    Preset("dapo", "DAPO: GRPO with clip-higher, dynamic sampling, token-mean loss, overlong shaping"),
    Preset("drgrpo", "Dr. GRPO: GRPO without the std division, seq-mean-token-sum loss"),
    Preset("ragen-sokoban", "RAGEN's Sokoban run: starpo-s on Qwen2.5-0.5B-Instruct with RAGEN's numbers"),
)
DEFAULT_PRESET = "starpo-s"


def choices(table: Mapping[str, Any]) -> str:
    """A table's names for an error message: ``gae, grpo, bi_level_gae``."""
    return ", ".join(table)


def compute_advantages(settings: Any, rewards: Any, values: Any, mask: Any, group_ids: Any,
                       episode_ids: Any = None) -> tuple[Any, Any]:
    """``settings.estimator``'s advantages and returns; ``episode_ids``: each row's episode (GRPO counts an
    episode once).  ``values`` is the critic's, None for an estimator without one.

    Per-turn rows (a context window) are scored as RAGEN-2 scores them: every row holds its
    episode's total on its last token, so GRPO gives each turn its episode's group-relative
    advantage, and GAE treats each turn's reply as its own sequence ending in that total.
    """
    estimator = ESTIMATORS[settings.estimator]
    assert values is not None or not estimator.critic, f"{estimator.name} needs the critic's values"
    return estimator.compute(settings, rewards, values, mask, group_ids, episode_ids)


def describe_estimator(settings: Any) -> str:
    """The ``--dry-run`` words for the advantage settings: ``gae (gamma 1.0, lambda 1.0)``."""
    words = ESTIMATORS[settings.estimator].dry_run.format(**vars(settings))
    return f"{settings.estimator} ({words})"
