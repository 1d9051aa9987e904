"""StarPO / StarPO-S on one machine, read top to bottom.

Each training step (:meth:`Trainer.starpo_step`) has five phases, labelled as in CleanRL's ``ppo.py``:

1. **rollout**: ``groups`` train seeds, ``group_size`` episodes each, played by the
   :class:`~ragen_bench.train.policy_agent.PolicyAgent` through :class:`~ragen_bench.chat.ChatEpisode`
   and :func:`~ragen_bench.chat.run_lockstep` (the eval harness's prompts and parser, byte for byte);
   :func:`build_batch` stacks the sampled ids and log-probs: one row per episode, or one per turn under
   a context window (``chat.history_window``).  The filter (StarPO-S's, or RAGEN-2's with
   ``filter.mode=rollout``) ranks the groups; with ``filter.refill_rounds`` fresh seeds are played
   until ``rollout.groups`` groups survive (DAPO's dynamic sampling).  On schedule the collapse
   diagnostics (:mod:`ragen_bench.train.collapse_probe`) score the first turns' reasoning, before
   the filter as RAGEN-2 does, while the policy is still the one that sampled.
2. **batch**: the kept groups' rows; a step that keeps nothing is skipped.
3. **advantages**: old log-probs, recomputed by the policy when there is more than one optimiser
   step per batch or the sampler runs in another precision (``rollout.dtype``), reference log-probs
   (only with KL), the critic's values (only for an estimator with a critic), then the estimator of
   :data:`ragen_bench.starpo.algorithms.ESTIMATORS`.
4. **update**: PPO epochs over shuffled mini-batches of whole groups, gradients accumulated over
   micro-batches (:mod:`ragen_bench.train.minibatches`), for the actor and the critic.
5. **log**: every metric is named where it is computed and written per step to ``metrics.jsonl``.

Validation runs the real eval harness on a saved checkpoint (:mod:`ragen_bench.train.validation`).
Which train seeds step *k* uses and how it samples depend only on (``seed``, *k*), so a run
resumed from its checkpoint at step *k* redoes exactly the steps an uninterrupted run does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, NamedTuple

import gymnasium
import torch

from ragen_bench.chat import ChatEpisode, run_lockstep
from ragen_bench.starpo.algorithms import compute_advantages
from ragen_bench.starpo.filter import best_groups, filter_metrics, filter_rollouts, loss_scale, trajectory_entropies
from ragen_bench.starpo.filter_spec import ENTROPY_METRICS
from ragen_bench.starpo.losses import aggregate, kl_estimate, kl_penalized_rewards, policy_loss, value_loss
from ragen_bench.starpo.masked import masked_mean
from ragen_bench.starpo.shaping import overlong_rewards
from ragen_bench.train.batch import (RolloutBatch, build_batch, episode_rows, episode_totals, rollout_metrics,
                                    select_rows, trim_rows)
from ragen_bench.train import collapse_probe
from ragen_bench.train.policy_agent import PolicyAgent
from ragen_bench.train.sampler import SamplingCopy, torch_threads
from ragen_bench.train import checkpoint as ckpt
from ragen_bench.train.config import TrainConfig
from ragen_bench.train.minibatches import Averages, clip_grad, micro_weight, minibatch_order
from ragen_bench.train.schedule import derived_seed, out_dir, step_seeds, train_seeds
from ragen_bench.train.logbook import METRICS, Logbook, plot_curves, read_lines
from ragen_bench.train.sft_step import sft_update
from ragen_bench.train import games, validation
from ragen_bench.starpo.forward import token_log_probs
from ragen_bench.starpo.groups import group_index, group_stats
from ragen_bench.train.models import make_critic, reference_of, trainable


@dataclass(frozen=True)
class TrainResult:
    out: Path
    steps: int
    final_checkpoint: Path
    test_run: Path | None


# -- the training run ----------------------------------------------------------------------------


class Trainer:
    """Holds the models and optimisers of one run; :meth:`run` trains, validates and tests."""

    def __init__(self, config: TrainConfig, out: Path, *, progress: Callable[[str], None] | None = None) -> None:
        from ragen_bench.agents.local_models import load_model, resolve_threads
        from ragen_bench.agents.sampling import SamplingSettings

        if config.threads is not None:
            torch.set_num_threads(config.threads)
        self.sampling_threads = resolve_threads(config.sampling_threads)  # "auto" sees only the others' load yet
        self.config = config
        self.out = out
        self.say = progress or (lambda message: None)
        self.chat = config.chat_config
        start = ckpt.latest(out)
        torch.manual_seed(derived_seed(config.seed, "init"))
        # A checkpoint to resume, else the starting model: an alias, a checkpoint or a LoRA adapter folder.
        source = ckpt.model_dir(start) if start else config.model
        self.policy, self.tokenizer = ckpt.load_policy(source, config)
        self.policy.train()
        self.reference = None
        if config.kl.coef > 0 and config.lora.rank == 0:
            self.reference, _ = load_model(config.model, dtype=config.dtype)
            self.reference.eval().requires_grad_(False)
        self.critic = None
        if config.uses_critic:
            self.critic = make_critic(config.model, config.dtype, config.lora, base_name=config.model)
        betas = tuple(config.actor.betas)
        lr = config.sft.lr if config.algo == "sft" else config.actor.lr
        self.actor_optimizer = torch.optim.AdamW(trainable(self.policy), lr=lr, betas=betas,
                                                 weight_decay=config.actor.weight_decay)
        self.critic_optimizer = None
        if self.critic is not None:
            self.critic_optimizer = torch.optim.AdamW(trainable(self.critic), lr=config.critic.lr, betas=betas,
                                                      weight_decay=config.actor.weight_decay)
        self.step = 0
        self.empty_steps = 0  # steps in a row whose filter kept no group (filter.empty_stop_steps)
        if start:
            self.step = ckpt.restore(start, self)
        # The diagnostics' moving averages, continued from the log of the steps this run keeps.
        kept_rows = [row for row in read_lines(out / METRICS) if row["step"] <= self.step]
        self.collapse = collapse_probe.CollapseProbe(config.collapse_detection, config.seed, kept_rows)
        sampling = SamplingSettings(temperature=config.rollout.temperature, top_p=config.rollout.top_p,
                                    max_new_tokens=config.rollout.max_new_tokens)
        # rollout.dtype other than dtype: the sampler decodes its own copy, refreshed after each update.
        self.sampling_copy = SamplingCopy(self.policy, config.sampling_dtype) if config.sampling_dtype != config.dtype else None
        sampler_model = self.sampling_copy.model if self.sampling_copy is not None else self.policy
        self.agent = PolicyAgent(sampler_model, self.tokenizer, sampling=sampling,
                                 stop_strings=config.rollout.stop_strings,
                                 generate_batch=config.rollout.generate_batch,
                                 extend_context=self.chat.history_window is None, name=f"policy:{config.model}")
        single = config.algo == "starpo" and not games.is_game(config.env)  # a game makes its own envs each match
        self.envs = [gymnasium.make(config.env) for _ in range(config.batch_size)] if single else []

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> TrainResult:
        from tqdm import tqdm

        c = self.config
        total = self.total_steps()
        log = Logbook(self.out, tensorboard=c.log.tensorboard, resume_step=self.step)
        try:
            if self.step == 0 and c.val.before_train and c.val.every > 0:
                validation.validate(c, self.out, self.step, None, log, self.say)
            bar = tqdm(total=total, initial=self.step, desc=f"{c.algo} {c.preset}", unit="step",
                       disable=not c.log.progress, dynamic_ncols=True)

            def say(message: str) -> None:  # a line of its own, above the bar, not glued to it
                with tqdm.external_write_mode():
                    self.say(message)

            with bar:
                while self.step < total:
                    metrics = getattr(self, f"{c.algo}_step")()  # each of starpo.algorithms.ALGORITHMS
                    self.step += 1
                    log.step(self.step, metrics)
                    bar.update(1)
                    bar.set_postfix({k.split("/")[-1]: f"{v:.3f}" for k, v in metrics.items() if k in _SHOWN})
                    if c.filter.empty_stop_steps and self.empty_steps >= c.filter.empty_stop_steps:
                        say(f"step {self.step}: the filter kept no group {self.empty_steps} steps in a row; stopping")
                        total = self.step
                    final = self.step == total
                    validate = c.val.every > 0 and (self.step % c.val.every == 0 or final)
                    if validate or final or self.step % c.checkpoint.every == 0:
                        saved = ckpt.save(self.out, self)
                    if validate:
                        validation.validate(c, self.out, self.step, saved, log, say)
            last = ckpt.latest(self.out) or ckpt.save(self.out, self)
            test_run = validation.test(c, self.out, self.step, last, log, self.say)
            plot_curves(self.out)
        finally:
            log.close()
        return TrainResult(out=self.out, steps=self.step, final_checkpoint=last, test_run=test_run)

    def total_steps(self) -> int:
        if self.config.algo == "sft":
            return self.config.sft.epochs * math.ceil(len(self.sft_data()) / self.config.sft.batch)
        return self.config.steps

    # -- one StarPO step -----------------------------------------------------------------------

    def starpo_step(self) -> dict[str, float]:
        """Rollout, batch (the filter's groups), advantages, update; the step's metrics."""
        c = self.config
        metrics: dict[str, float] = {}
        started = time.perf_counter()

        # 1. rollout: episodes played, the filter's choice of groups, and on schedule the collapse probe
        self.policy.eval()
        batch, kept, trajectories, samples, episode_scores = self._rollout(metrics)
        metrics.update(rollout_metrics(trajectories, episode_scores, time.perf_counter() - started))
        if self.collapse.due(self.step + 1):  # before the filter, while the policy is the one that sampled
            self._probe_collapse(trajectories, samples, metrics)

        # 2. batch: the kept groups' rows (a step that keeps none is skipped, as RAGEN-2 does) --------
        metrics.update({f"filter/{name}": value for name, value in filter_metrics(kept).items()})
        if kept.rows.numel() == 0:
            self.empty_steps += 1
            metrics["filter/empty_steps"] = float(self.empty_steps)
            metrics["time/step"] = time.perf_counter() - started
            return metrics
        self.empty_steps = 0
        batch = select_rows(batch, episode_rows(batch, kept.rows))

        # 3. advantages: old and reference log-probs, shaped rewards, the critic's values -------------
        phase = time.perf_counter()
        self.policy.train()
        inputs = self._prepare(batch, metrics)
        advantages, returns = compute_advantages(c.advantage, inputs.rewards, inputs.values, batch.response_mask,
                                                 batch.group_ids, batch.episode_ids)
        if c.actor.filter_loss_scaling != "none":  # RAGEN-2: a hard filter's smaller batch takes a smaller step
            advantages = advantages * loss_scale(kept.groups.numel(), kept.stats.count.numel(),
                                                 c.actor.filter_loss_scaling)
        metrics["adv/mean"] = float(masked_mean(advantages, batch.response_mask))
        metrics["adv/abs_mean"] = float(masked_mean(advantages.abs(), batch.response_mask))
        metrics["time/prepare"] = time.perf_counter() - phase

        # 4. update ------------------------------------------------------------------------------
        phase = time.perf_counter()
        metrics.update(self._update(batch, advantages, returns, inputs.values, inputs.old_log_probs,
                                    inputs.ref_log_probs))
        metrics["time/update"] = time.perf_counter() - phase
        metrics["update/tokens_per_s"] = c.actor.ppo_epochs * float(batch.attention_mask.sum()) / metrics["time/update"]
        if self.sampling_copy is not None:  # the next rollout samples the updated weights
            phase = time.perf_counter()
            self.sampling_copy.refresh()
            metrics["time/sampler_sync"] = time.perf_counter() - phase

        # 5. log ---------------------------------------------------------------------------------
        metrics["time/step"] = time.perf_counter() - started
        self.policy.eval()
        return metrics

    def _rollout(self, metrics: dict[str, float]) -> tuple[RolloutBatch, Any, list[Any], dict[str, Any], torch.Tensor]:
        """One round, or with ``filter.refill_rounds`` (DAPO's dynamic sampling) more rounds of fresh seeds until
        the filter keeps ``rollout.groups`` groups: the batch of every round, the filter's result on it, the
        trajectories, the policy's samples and each episode's score.  Logs ``filter/rounds``."""
        c = self.config
        spec = c.filter.spec
        trajectories, samples = [], {}
        entropies = torch.zeros(0)  # the entropy metrics': each episode's mean token entropy, round by round
        for sampling_round in range(1 + c.filter.refill_rounds):
            # Round 0 samples with the seed a run without refill has.
            labels = ("rollout", self.step, sampling_round) if sampling_round else ("rollout", self.step)
            played, played_samples = self._play(step_seeds(c, self.step, sampling_round), derived_seed(c.seed, *labels))
            trajectories += played
            samples.update(played_samples)
            batch = build_batch(trajectories, samples, pad_id=self.agent.pad_id,
                                groups=[games.group_of(t, c.opponent) for t in trajectories],
                                score_placement=c.advantage.score_placement,
                                per_turn=self.chat.history_window is not None)
            # The filter ranks episodes, however many rows (turns) each one has.
            episode_scores, episode_groups, episode_lengths = episode_totals(batch)
            if spec.metric in ENTROPY_METRICS:  # this round's episodes only: earlier rounds' are kept
                played_rows = [row for row, e in enumerate(batch.episode_ids) if e >= len(trajectories) - len(played)]
                new_rows = select_rows(batch, torch.tensor(played_rows))
                entropies = torch.cat([entropies, self._episode_entropies(new_rows)])
            kept = filter_rollouts(episode_scores, episode_groups, spec, lengths=episode_lengths,
                                   entropies=entropies if spec.metric in ENTROPY_METRICS else None)
            if kept.groups.numel() >= c.rollout.groups:
                break
        if c.filter.refill_rounds:
            metrics["filter/rounds"] = float(sampling_round + 1)
            kept = best_groups(kept, episode_groups, c.rollout.groups)
        return batch, kept, trajectories, samples, episode_scores

    def _probe_collapse(self, trajectories: list[Any], samples: dict[str, Any], metrics: dict[str, float]) -> None:
        """RAGEN-2's collapse diagnostics: does the reasoning depend on its prompt?"""
        c = self.config
        phase = time.perf_counter()
        turn_pairs = collapse_probe.all_turns(trajectories, samples, self.tokenizer, think=self.chat.think,
                                              first_only=self.collapse.first_only)
        score = collapse_probe.model_scorer(self.policy, temperature=c.rollout.temperature,
                                            micro_batch=c.collapse_detection.micro_batch_size, pad_id=self.agent.pad_id)
        metrics.update(self.collapse.measure(turn_pairs, score, self.step))
        metrics["time/collapse"] = time.perf_counter() - phase

    def _prepare(self, batch: RolloutBatch, metrics: dict[str, float]) -> _UpdateInputs:
        """What the advantages and the update need besides the batch: old and reference log-probs (when
        needed), the rewards after DAPO's overlong charge and a KL penalty in the reward, the critic's values."""
        c = self.config
        mask = batch.response_mask
        updates_per_batch = c.actor.ppo_epochs * math.ceil(len(batch.group_ids) / c.actor.mini_batch)
        old_log_probs = None
        # The ratio's reference is the policy's own fp32 log-probs of the sampled ids, never a sampler's
        # of another precision.  With one optimiser step per batch the update's own forward pass is that
        # recomputation (the policy has not moved since sampling; see _micro_step).  A second optimiser
        # step moves the policy, and a KL penalty in the reward needs the reference before the update:
        # then it is computed here, in one pass.
        kl_in_reward = c.kl.coef > 0 and c.kl.placement == "reward"
        if updates_per_batch > 1 or (self.sampling_copy is not None and kl_in_reward):
            old_log_probs = self._no_grad_log_probs(batch)
            metrics["rollout/log_prob_gap"] = float(masked_mean((old_log_probs - batch.old_log_probs).abs(), mask))
        ref_log_probs = None
        if c.kl.coef > 0:
            with reference_of(self.policy):
                ref_log_probs = self._no_grad_log_probs(batch, model=self.reference)
        rewards = batch.rewards
        if c.overlong_buffer.len > 0:  # DAPO: replies that ran into the token limit's last len tokens pay
            penalty = overlong_rewards(mask, c.rollout.max_new_tokens, c.overlong_buffer.len,
                                       c.overlong_buffer.penalty_factor)
            rewards = rewards + penalty
            metrics["reward/overlong_penalty"] = float(penalty.sum(dim=1).mean())
        if ref_log_probs is not None and c.kl.placement == "reward":
            behaviour = old_log_probs if old_log_probs is not None else batch.old_log_probs
            rewards, kl_metrics = kl_penalized_rewards(rewards, behaviour, ref_log_probs, mask, c.kl.coef, _kl(c))
            metrics["actor/reward_kl"] = kl_metrics["kl"]
        values = self._per_token(batch, self.critic) if self.critic is not None else None
        return _UpdateInputs(rewards, values, old_log_probs, ref_log_probs)

    def _play(self, seeds: Sequence[int], sampling_seed: int) -> tuple[list[Any], dict[str, Any]]:
        """``group_size`` episodes of each seed, played in lockstep; their trajectories and the policy's samples."""
        c = self.config
        self.agent.sampling = replace(self.agent.sampling, sampling_seed=sampling_seed)
        with torch.no_grad(), torch_threads(self.sampling_threads):  # a game: ragen_bench.train.games
            played = games.play(c, seeds, self.agent) if games.is_game(c.env) else run_lockstep([
                ChatEpisode(self.envs[g * c.rollout.group_size + j], self.chat, env_id=c.env, seed=seed, sample=j,
                            split="train") for g, seed in enumerate(seeds) for j in range(c.rollout.group_size)
            ], self.agent)
        # Keyed by each trajectory's own key (a self-play seat's conversation was sampled under its seat's key).
        sampled = self.agent.pop_samples([games.samples_key(t, c.opponent) for t in played])
        return played, {t.episode_key: sampled[games.samples_key(t, c.opponent)] for t in played}

    def _update(self, batch: RolloutBatch, advantages: torch.Tensor, returns: torch.Tensor, values: torch.Tensor | None,
                old_log_probs: torch.Tensor | None, ref_log_probs: torch.Tensor | None) -> dict[str, float]:
        c = self.config
        totals = Averages()
        rows = len(batch.group_ids)
        for epoch in range(c.actor.ppo_epochs):
            order = minibatch_order(batch.group_ids, derived_seed(c.seed, "minibatch", self.step, epoch))
            for start in range(0, rows, c.actor.mini_batch):
                mini = order[start : start + c.actor.mini_batch]
                self.actor_optimizer.zero_grad(set_to_none=True)
                if self.critic_optimizer is not None:
                    self.critic_optimizer.zero_grad(set_to_none=True)
                for micro in mini.split(c.actor.micro_batch):
                    weight = micro_weight(c.actor.loss_agg, batch.response_mask[micro], batch.response_mask[mini])
                    part = self._micro_step(batch, micro, advantages, returns, values, old_log_probs, ref_log_probs,
                                            weight)
                    totals.add(part, weight)
                totals.add({"actor/grad_norm": clip_grad(self.policy, c.actor.grad_clip)}, 1.0)
                self.actor_optimizer.step()
                if self.critic is not None and self.critic_optimizer is not None:
                    totals.add({"critic/grad_norm": clip_grad(self.critic, c.actor.grad_clip)}, 1.0)
                    self.critic_optimizer.step()
        return totals.means()

    def _micro_step(self, batch: RolloutBatch, rows: torch.Tensor, advantages: torch.Tensor, returns: torch.Tensor,
                    values: torch.Tensor | None, old_log_probs: torch.Tensor | None,
                    ref_log_probs: torch.Tensor | None, weight: float) -> dict[str, float]:
        """Forward and backward of one micro-batch (losses scaled by its share of the mini-batch)."""
        c = self.config
        ids, attention, mask = trim_rows(batch, rows)
        width = ids.shape[1]
        log_probs, entropy = token_log_probs(self.policy, ids, attention, mask, c.rollout.temperature)
        # One optimiser step per batch: the policy has not moved since sampling, so "old" is now: this
        # fp32 forward pass over the sampled ids, whatever precision sampled them.
        old = old_log_probs[rows, :width] if old_log_probs is not None else log_probs.detach()
        pg_loss, pg_metrics = policy_loss(log_probs, old, advantages[rows, :width], mask, clip_low=c.actor.clip_low,
                                          clip_high=c.actor.clip_high, dual_clip=c.actor.dual_clip,
                                          agg=c.actor.loss_agg)
        entropy_loss = aggregate(entropy, mask, c.actor.loss_agg)
        loss = pg_loss - c.actor.entropy_coef * entropy_loss
        metrics = {"actor/pg_loss": pg_loss.item(), "actor/entropy": entropy_loss.item(),
                   **{f"actor/{k}": v for k, v in pg_metrics.items()}}
        if old_log_probs is None and self.sampling_copy is not None:  # how far the sampler's precision was off
            gap = (old - batch.old_log_probs[rows, :width]).abs()
            metrics["rollout/log_prob_gap"] = float(masked_mean(gap, mask))
        if ref_log_probs is not None:
            kl = aggregate(kl_estimate(log_probs, ref_log_probs[rows, :width], _kl(c)), mask, c.actor.loss_agg)
            metrics["actor/kl"] = kl.item()
            if c.kl.placement == "loss":
                loss = loss + c.kl.coef * kl
        (loss * weight).backward()
        if self.critic is not None and values is not None:
            predicted = self.critic(ids, attention, mask)
            vf_loss, vf_metrics = value_loss(predicted, values[rows, :width], returns[rows, :width], mask,
                                             clip=c.critic.value_clip, agg=c.actor.loss_agg)
            (c.critic.coef * vf_loss * weight).backward()
            metrics.update({"critic/vf_loss": vf_loss.item(), "critic/values_mean": masked_mean(predicted, mask).item(),
                            **{f"critic/{k}": v for k, v in vf_metrics.items()}})
        return metrics

    def _per_token(self, batch: RolloutBatch, compute: Callable[[Any, Any, Any], torch.Tensor]) -> torch.Tensor:
        """``compute(ids, attention, mask)`` over micro-batches without gradient, as one ``[batch, tokens]`` tensor."""
        result = torch.zeros_like(batch.old_log_probs)
        with torch.no_grad():
            for rows in torch.arange(len(batch.group_ids)).split(self.config.actor.micro_batch):
                ids, attention, mask = trim_rows(batch, rows)
                result[rows, : ids.shape[1]] = compute(ids, attention, mask)
        return result

    def _episode_entropies(self, batch: RolloutBatch) -> torch.Tensor:
        """``[episodes]`` (in order of appearance): each episode's mean token entropy under the policy, the
        mean over its rows of each row's (RAGEN-2's entropy filter metrics, turn-level rows aggregated by
        episode as RAGEN-2 does; a no-grad forward, as veRL's ``compute_log_prob`` gives RAGEN-2 its
        ``entropys``)."""
        temperature = self.config.rollout.temperature
        per_token = self._per_token(batch, lambda ids, attention, mask: token_log_probs(
            self.policy, ids, attention, mask, temperature)[1])
        index, episodes = group_index(batch.episode_ids)
        return group_stats(trajectory_entropies(per_token, batch.response_mask).double(), index, episodes).mean

    def _no_grad_log_probs(self, batch: RolloutBatch, model: Any = None) -> torch.Tensor:
        temperature = self.config.rollout.temperature
        return self._per_token(batch, lambda ids, attention, mask: token_log_probs(
            model or self.policy, ids, attention, mask, temperature, with_entropy=False)[0])

    # -- supervised warm start ---------------------------------------------------------------------

    def sft_data(self) -> list[dict[str, Any]]:
        """The warm-start records (built once): ``sft.agent``'s episodes on the first train seeds; the optimal
        agent's only when won, the random agent's (right syntax, uninformed choices) all; a game's: train.games."""
        if not hasattr(self, "_sft_data"):
            from ragen_bench.train.sft_data import sft_records

            c = self.config
            seeds = train_seeds(c.env, c.sft.episodes)
            self._sft_data = games.sft_records(c, seeds) if games.is_game(c.env) else sft_records(
                c.env, seeds, self.chat, agent=c.sft.agent, only_successful=c.sft.agent == "optimal")
        return self._sft_data

    def sft_step(self) -> dict[str, float]:
        return sft_update(self.config, self.policy, self.tokenizer, self.actor_optimizer, self.sft_data(), self.step)


_SHOWN = {"rollout/success", "rollout/reward_mean", "actor/pg_loss", "sft/loss"}


# -- small pure pieces ---------------------------------------------------------------------------


class _UpdateInputs(NamedTuple):
    """What the advantages and the update read besides the batch (:meth:`Trainer._prepare`)."""

    rewards: torch.Tensor  # the env's, after DAPO's overlong charge and a KL penalty in the reward
    values: torch.Tensor | None  # the critic's (estimators with a critic only)
    old_log_probs: torch.Tensor | None  # recomputed by the policy when the update needs them (else None)
    ref_log_probs: torch.Tensor | None  # the reference's (with KL only)


def _kl(config: TrainConfig) -> str:  # veRL's names of the estimators
    return "k3" if config.kl.estimator == "low_var_kl" else "k1"


def train(config: TrainConfig, *, progress: Callable[[str], None] | None = None) -> TrainResult:
    """Train (or resume) the run ``config`` describes in its ``out`` folder."""
    out = out_dir(config)
    # Whatever the settings can make fail (the folder, the model, an adapter, the envs) fails
    # before the folder or its config.json is written, so the corrected command runs.
    ckpt.check_out(out, config)
    trainer = Trainer(config, out, progress=progress)
    ckpt.prepare_out(out, config)
    return trainer.run()
