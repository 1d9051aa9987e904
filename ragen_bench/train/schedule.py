"""What a training run will do, computed without torch: data order, seeds, the run folder, ``--dry-run``.

Which train seeds step *k* uses and how it samples depend only on (``seed``, *k*), so a run
resumed at step *k* redoes exactly the steps an uninterrupted run does.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Iterator
from itertools import islice
from pathlib import Path

from ragen_bench import panels
# Re-exported: the trainer's modules take their seeds from here; eval's test streams need it too, below train.
from ragen_bench.agents.sampling import derived_seed as derived_seed
from ragen_bench.eval.streams import stream_seed
from ragen_bench.starpo.algorithms import describe_estimator
from ragen_bench.train.config import TrainConfig


def step_seeds(config: TrainConfig, step: int, round: int = 0) -> list[int]:
    """The train seeds of step ``step``'s rollout round ``round``: the next ``groups`` decontaminated train seeds.

    Each step owns ``1 + filter.refill_rounds`` slices of ``groups`` seeds of
    :func:`ragen_bench.panels.decontaminated_train_seeds` (never a val or test panel seed):
    without refill, step *k* takes seeds number ``k * groups`` .. ``(k + 1) * groups - 1``;
    dynamic sampling's further rounds take the step's next slices, so no two rounds share a seed.
    """
    start = (step * (1 + config.filter.refill_rounds) + round) * config.rollout.groups
    return list(train_seeds(config.env, start + config.rollout.groups)[start:])


@functools.lru_cache(maxsize=8)
def train_seeds(env_id: str, count: int) -> tuple[int, ...]:
    """The first ``count`` decontaminated train seeds of ``env_id`` (generating levels is not free)."""
    return tuple(islice(panels.decontaminated_train_seeds(env_id), count))


def out_dir(config: TrainConfig) -> Path:
    return Path(config.out or Path("runs") / "train" / f"{config.preset}-{config.env.split('/')[-1]}")


def describe(config: TrainConfig) -> Iterator[str]:
    """What a run would do, without loading a model (``--dry-run``)."""
    c = config
    kept = c.kept_groups * c.rollout.group_size
    updates = c.actor.ppo_epochs * math.ceil(kept / c.actor.mini_batch)
    yield f"preset {c.preset}: algo={c.algo}, env {c.env}, model {c.model} ({'LoRA rank ' + str(c.lora.rank) if c.lora.rank else 'full fine-tuning'})"
    from ragen_bench.train import games

    if games.is_game(c.env):
        yield games.describe(c)
    if c.algo == "sft":
        yield f"sft: {c.sft.episodes} optimal episodes on train seeds, {c.sft.epochs} epochs, batch {c.sft.batch}, lr {c.sft.lr}"
    else:
        f = c.filter
        rule = (f"{f.mode} {f.ratio} keeps {c.kept_groups}" if f.mode != "rollout" else
                f"{f.strategy} {f.value} ({f.type} {f.metric}, include_zero {f.include_zero}) keeps at most {c.kept_groups}")
        refill = f", up to {f.refill_rounds} refill rounds" if f.refill_rounds else ""
        yield (f"per step: {c.rollout.groups} groups x {c.rollout.group_size} = {c.batch_size} episodes{refill}, "
               f"filter {rule} groups = {kept} trajectories, "
               f"{updates} optimiser step(s) of {c.actor.mini_batch} (micro-batches of {c.actor.micro_batch})")
        yield (f"advantage {describe_estimator(c.advantage)}, "
               f"critic {'on' if c.uses_critic else 'off'}, KL {'off' if c.kl.coef == 0 else f'{c.kl.coef} ({c.kl.estimator}, {c.kl.placement})'}, "
               f"clip {c.actor.clip_low}/{c.actor.clip_high}, dual clip {c.actor.dual_clip}, entropy {c.actor.entropy_coef}, "
               f"loss {c.actor.loss_agg}, actor lr {c.actor.lr}" + (f", critic lr {c.critic.lr}" if c.uses_critic else ""))
        yield f"{c.steps} steps; old log-prob pass {'on' if updates > 1 else 'skipped (one optimiser step per batch)'}"
    window = c.chat_config.history_window
    if window is not None and c.algo == "starpo":
        yield f"context window of {window} turn(s): one training row per turn (RAGEN-2's turn-level samples)"
    validation = (f"validation on {c.env} {c.val.split} ({panel_seeds(c.val.limit)}) every {c.val.every} steps "
                  f"(T = {c.val.temperature})" if c.val.every else "no validation")
    test = f"final test on {c.test.split} ({panel_seeds(c.test.limit)})" if c.test.split else "no final test"
    yield f"{validation}; {test}; out {out_dir(c)}"
    streams = ", ".join(str(stream_seed(c.seed, k)) for k in (1, 2, 3))
    yield (f"a gain is claimed on the test panel's streams ${{test_stream:{c.seed},K}} = {streams} (K = 1, 2, 3) "
           "plus greedy, with `compare --paired` (docs/train.md, 'Claiming a gain')")
    first = step_seeds(c, 0)[: min(4, c.rollout.groups)] if c.algo == "starpo" else []
    if first:
        yield f"first train seeds: {first} ..."


def panel_seeds(limit: int | None) -> str:
    """Which seeds of a panel an evaluation with ``limit`` (``val.limit``, ``test.limit``) plays, in words."""
    return "every seed" if limit is None else f"first {limit} seeds"
