"""StarPO / StarPO-S on one machine, read top to bottom.

Each training step has four phases, labelled below as in CleanRL's ``ppo.py``:

1. **rollout**: ``groups`` train seeds, ``group_size`` episodes each, played by the
   :class:`~ragen_bench.train.policy_agent.PolicyAgent` through :class:`~ragen_bench.chat.ChatEpisode`
   and :func:`~ragen_bench.chat.run_lockstep` (the eval harness's prompts and parser, byte for
   byte); the agent keeps the sampled ids and log-probs, :func:`build_batch` stacks them:
   one row per episode, or one per turn under a context window (``chat.history_window``,
   RAGEN-2's ``limited_multi_turn`` / ``single_turn``), each turn's row the prompt it saw.
   On step 1 and every ``collapse_detection.compute_freq``-th step the collapse diagnostics
   then score a sample of the first turns' reasoning under every prompt of the sample
   (RAGEN-2's mutual-information proxies, :mod:`ragen_bench.train.collapse_probe`), before
   the filter as RAGEN-2 does, while the policy is still the one that sampled.
2. **filter** (StarPO-S): keep the groups whose total scores vary most, or RAGEN-2's rollout
   filter (``filter.mode=rollout``); with ``filter.refill_rounds`` the rollout repeats on fresh
   seeds until ``rollout.groups`` groups survive (DAPO's dynamic sampling).  A step that keeps
   nothing is skipped.
3. **prepare**: old log-probs, recomputed by the policy from the sampled ids when there is
   more than one optimiser step per batch or the sampler runs in another precision
   (``rollout.dtype``; otherwise the policy is still the sampling one and the ratio is 1), reference log-probs
   (only with KL), the critic's values (only for GAE), then advantages.
4. **update**: PPO epochs over shuffled mini-batches with gradient accumulation over
   micro-batches, for the actor and, with GAE, the critic.

Every metric is named where it is computed and written per step to ``metrics.jsonl``.
Validation runs the real eval harness on a saved checkpoint into a normal run directory.
Which train seeds step *k* uses and how it samples depend only on (``seed``, *k*), so a run
resumed from its checkpoint at step *k* redoes exactly the steps an uninterrupted run does.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import gymnasium
import torch

from ragen_bench.chat import ChatEpisode, run_lockstep
from ragen_bench.starpo import advantages as adv
from ragen_bench.starpo.filter import best_groups, filter_metrics, filter_rollouts, loss_scale, trajectory_entropies
from ragen_bench.starpo.filter_spec import ENTROPY_METRICS
from ragen_bench.starpo.losses import aggregate, kl_estimate, kl_penalized_rewards, policy_loss, value_loss
from ragen_bench.starpo.masked import masked_mean
from ragen_bench.starpo.shaping import overlong_rewards
from ragen_bench.train.batch import RolloutBatch, build_batch, episode_rows, episode_totals, select_rows, trim_rows
from ragen_bench.train import collapse_probe
from ragen_bench.train.policy_agent import PolicyAgent
from ragen_bench.train.sampler import SamplingCopy, torch_threads
from ragen_bench.train import checkpoint as ckpt
from ragen_bench.train.config import TrainConfig
from ragen_bench.train.schedule import derived_seed, out_dir, panel_seeds, step_seeds, train_seeds
from ragen_bench.train.logbook import METRICS, Logbook, plot_curves, read_lines
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
        from ragen_bench.agents.local_models import load_model
        from ragen_bench.agents.sampling import SamplingSettings

        if config.threads is not None:
            torch.set_num_threads(config.threads)
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
        self.envs = [gymnasium.make(config.env) for _ in range(config.batch_size)] if config.algo == "starpo" else []

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> TrainResult:
        from tqdm import tqdm

        c = self.config
        total = self.total_steps()
        log = Logbook(self.out, tensorboard=c.log.tensorboard, resume_step=self.step)
        try:
            if self.step == 0 and c.val.before_train and c.val.every > 0:
                self.validate(None, log)
            bar = tqdm(total=total, initial=self.step, desc=f"{c.algo} {c.preset}", unit="step",
                       disable=not c.log.progress, dynamic_ncols=True)
            with bar:
                while self.step < total:
                    metrics = self.sft_step() if c.algo == "sft" else self.starpo_step()
                    self.step += 1
                    log.step(self.step, metrics)
                    bar.update(1)
                    bar.set_postfix({k.split("/")[-1]: f"{v:.3f}" for k, v in metrics.items() if k in _SHOWN})
                    if c.filter.empty_stop_steps and self.empty_steps >= c.filter.empty_stop_steps:
                        self.say(f"step {self.step}: the filter kept no group {self.empty_steps} steps in a row; stopping")
                        total = self.step
                    final = self.step == total
                    validate = c.val.every > 0 and (self.step % c.val.every == 0 or final)
                    if validate or final or self.step % c.checkpoint.every == 0:
                        saved = ckpt.save(self.out, self)
                    if validate:
                        self.validate(saved, log)
            last = ckpt.latest(self.out) or ckpt.save(self.out, self)
            test_run = self.test(last, log)
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
        c = self.config
        metrics: dict[str, float] = {}
        started = time.perf_counter()

        # 1. rollout: one round, or with filter.refill_rounds (DAPO's dynamic sampling) more rounds
        #    of fresh seeds until the filter keeps rollout.groups groups ---------------------------
        self.policy.eval()
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
        rollout_seconds = time.perf_counter() - started
        new_tokens = sum(turn.completion_tokens for t in trajectories for turn in t.turns)
        metrics["rollout/success"] = sum(t.success for t in trajectories) / len(trajectories)
        metrics["rollout/reward_mean"] = float(episode_scores.mean())  # per episode, however many rows
        metrics["rollout/turns"] = sum(t.num_turns for t in trajectories) / len(trajectories)
        metrics["rollout/response_length"] = new_tokens / sum(t.num_turns for t in trajectories)

        turns = [turn for t in trajectories for turn in t.turns]
        metrics["rollout/valid_turn_rate"] = sum(turn.valid for turn in turns) / len(turns)
        metrics["rollout/truncated_rate"] = sum(turn.finish_reason == "length" for turn in turns) / len(turns)
        metrics["rollout/tokens_per_s"] = new_tokens / rollout_seconds
        metrics["time/rollout"] = rollout_seconds

        # 1b. collapse diagnostics (on schedule): does the reasoning depend on its prompt? -----------
        if self.collapse.due(self.step + 1):
            phase = time.perf_counter()
            turn_pairs = collapse_probe.all_turns(trajectories, samples, self.tokenizer, think=self.chat.think,
                                                  first_only=self.collapse.first_only)
            score = collapse_probe.model_scorer(self.policy, temperature=c.rollout.temperature,
                                                micro_batch=c.collapse_detection.micro_batch_size,
                                                pad_id=self.agent.pad_id)
            metrics.update(self.collapse.measure(turn_pairs, score, self.step))
            metrics["time/collapse"] = time.perf_counter() - phase

        # 2. filter (StarPO-S's std, or RAGEN-2's rollout filter; run on the rollout above) ------------
        metrics.update({f"filter/{name}": value for name, value in filter_metrics(kept).items()})
        if kept.rows.numel() == 0:  # nothing to learn from (RAGEN-2 skips such a step too)
            self.empty_steps += 1
            metrics["filter/empty_steps"] = float(self.empty_steps)
            metrics["time/step"] = time.perf_counter() - started
            return metrics
        self.empty_steps = 0
        batch = select_rows(batch, episode_rows(batch, kept.rows))

        # 3. prepare: old/reference log-probs, values, advantages --------------------------------------
        phase = time.perf_counter()
        self.policy.train()
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
        advantages, returns = compute_advantages(c, rewards, values, mask, batch.group_ids, batch.episode_ids)
        if c.actor.filter_loss_scaling != "none":  # RAGEN-2: a hard filter's smaller batch takes a smaller step
            advantages = advantages * loss_scale(kept.groups.numel(), kept.stats.count.numel(),
                                                 c.actor.filter_loss_scaling)
        metrics["adv/mean"] = float(masked_mean(advantages, mask))
        metrics["adv/abs_mean"] = float(masked_mean(advantages.abs(), mask))
        metrics["time/prepare"] = time.perf_counter() - phase

        # 4. update ------------------------------------------------------------------------
        phase = time.perf_counter()
        update = self._update(batch, advantages, returns, values, old_log_probs, ref_log_probs)
        metrics.update(update)
        metrics["time/update"] = time.perf_counter() - phase
        metrics["update/tokens_per_s"] = c.actor.ppo_epochs * float(batch.attention_mask.sum()) / metrics["time/update"]
        if self.sampling_copy is not None:  # the next rollout samples the updated weights
            phase = time.perf_counter()
            self.sampling_copy.refresh()
            metrics["time/sampler_sync"] = time.perf_counter() - phase
        metrics["time/step"] = time.perf_counter() - started
        self.policy.eval()
        return metrics

    def _play(self, seeds: Sequence[int], sampling_seed: int) -> tuple[list[Any], dict[str, Any]]:
        """``group_size`` episodes of each seed, played in lockstep; their trajectories and the policy's samples."""
        c = self.config
        self.agent.sampling = replace(self.agent.sampling, sampling_seed=sampling_seed)
        episodes = [
            ChatEpisode(self.envs[g * c.rollout.group_size + j], self.chat, env_id=c.env, seed=seed, sample=j,
                        split="train")
            for g, seed in enumerate(seeds)
            for j in range(c.rollout.group_size)
        ]
        with torch.no_grad(), torch_threads(c.sampling_threads):
            played = run_lockstep(episodes, self.agent)
        return played, self.agent.pop_samples([t.episode_key for t in played])

    def _update(self, batch: RolloutBatch, advantages: torch.Tensor, returns: torch.Tensor, values: torch.Tensor | None,
                old_log_probs: torch.Tensor | None, ref_log_probs: torch.Tensor | None) -> dict[str, float]:
        c = self.config
        totals = _Averages()
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
                totals.add({"actor/grad_norm": _clip(self.policy, c.actor.grad_clip)}, 1.0)
                self.actor_optimizer.step()
                if self.critic is not None and self.critic_optimizer is not None:
                    totals.add({"critic/grad_norm": _clip(self.critic, c.actor.grad_clip)}, 1.0)
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
        """The warm-start records (built once): ``sft.agent``'s episodes on the first train seeds.

        The optimal agent's are kept only when won; the random agent's (a format-only warm
        start: right syntax, uninformed choices) are all kept.
        """
        if not hasattr(self, "_sft_data"):
            from ragen_bench.train.sft_data import sft_records

            c = self.config
            seeds = train_seeds(c.env, c.sft.episodes)
            self._sft_data = sft_records(c.env, seeds, self.chat, agent=c.sft.agent,
                                         only_successful=c.sft.agent == "optimal")
        return self._sft_data

    def sft_step(self) -> dict[str, float]:
        from ragen_bench.starpo.sft import sft_loss
        from ragen_bench.train.sft_data import tokenize_sft

        c = self.config
        records = self.sft_data()
        per_epoch = math.ceil(len(records) / c.sft.batch)
        epoch, index = divmod(self.step, per_epoch)
        order = torch.randperm(len(records), generator=torch.Generator().manual_seed(derived_seed(c.seed, "sft", epoch)))
        chosen = [records[i] for i in order[index * c.sft.batch : (index + 1) * c.sft.batch].tolist()]
        started = time.perf_counter()
        self.policy.train()
        batch = tokenize_sft(chosen, self.tokenizer, max_length=SFT_MAX_TOKENS)
        # Rows with equal prompts side by side: a micro-batch encodes their shared prefix once.
        rows = sorted(range(len(batch["input_ids"])), key=lambda row: batch["input_ids"][row].tolist())
        tokens = float(batch["loss_mask"][:, 1:].sum())
        self.actor_optimizer.zero_grad(set_to_none=True)
        totals = _Averages()
        for micro in torch.tensor(rows).split(c.actor.micro_batch):
            part = {key: batch[key][micro] for key in ("input_ids", "attention_mask", "loss_mask")}
            weight = float(part["loss_mask"][:, 1:].sum()) / tokens
            loss, metrics = sft_loss(self.policy, part)
            (loss * weight).backward()
            totals.add({f"sft/{k}": v for k, v in metrics.items() if k != "tokens"}, weight)
        grad_norm = _clip(self.policy, c.actor.grad_clip)
        self.actor_optimizer.step()
        self.policy.eval()
        return {**totals.means(), "sft/tokens": tokens, "sft/dropped": float(batch["dropped"]), "sft/epoch": float(epoch),
                "actor/grad_norm": grad_norm,
                "time/step": time.perf_counter() - started}

    # -- evaluation with the real harness -------------------------------------------------------------

    def validate(self, checkpoint: Path | None, log: Logbook) -> Path:
        c = self.config
        model = str(ckpt.model_dir(checkpoint)) if checkpoint else c.model
        run = evaluate(c, model, c.val.split, limit=c.val.limit, temperature=c.val.temperature, samples=c.val.samples,
                       out=self.out / "val" / f"step-{self.step:06d}")
        log.validation(self.step, c.val.split, run.summary, run.out, seeds=panel_seeds(c.val.limit))
        plot_curves(self.out)
        self.say(f"step {self.step}: {c.val.split} success {run.summary['groups'][0]['success_rate']:.3f} "
                 f"({panel_seeds(c.val.limit)})")
        return run.out

    def test(self, checkpoint: Path, log: Logbook) -> Path | None:
        c = self.config
        if c.test.split is None:
            return None
        run = evaluate(c, str(ckpt.model_dir(checkpoint)), c.test.split, limit=c.test.limit, temperature=c.val.temperature,
                       samples=c.val.samples, out=self.out / "test" / f"step-{self.step:06d}")
        log.validation(self.step, c.test.split, run.summary, run.out, seeds=panel_seeds(c.test.limit))
        self.say(f"final checkpoint: {c.test.split} success {run.summary['groups'][0]['success_rate']:.3f} "
                 f"({panel_seeds(c.test.limit)}; {run.out})")
        return run.out


# SFT records longer than this many tokens are dropped (a Sokoban episode of 5 turns is ~1,500).
SFT_MAX_TOKENS = 4096
_SHOWN = {"rollout/success", "rollout/reward_mean", "actor/pg_loss", "sft/loss"}


def evaluate(config: TrainConfig, model: str, split: str, *, limit: int | None, temperature: float, samples: int,
             out: Path) -> Any:
    """``ragen-bench eval env=... split=... agent=hf agent.model=MODEL`` with the trainer's chat settings."""
    from ragen_bench.eval.compose import compose_config
    from ragen_bench.eval.run import run_eval

    eval_config = compose_config("eval", [f"env={config.env}", f"split={split}", "agent=hf"])
    eval_config["agent"].update(model=model, temperature=temperature, max_new_tokens=config.rollout.max_new_tokens,
                                dtype=config.dtype)
    if "stop_strings" in eval_config["agent"]:
        eval_config["agent"]["stop_strings"] = list(config.rollout.stop_strings)
    eval_config.update(chat=dict(config.chat), limit=limit, samples=samples, out=str(out), progress=False,
                       sampling_seed=derived_seed(config.seed, "eval"))
    return run_eval(eval_config)


# -- small pure pieces ---------------------------------------------------------------------------


def compute_advantages(config: TrainConfig, rewards: torch.Tensor, values: torch.Tensor | None, mask: torch.Tensor,
                       group_ids: Sequence[int], episode_ids: Sequence[int] | None = None,
                       ) -> tuple[torch.Tensor, torch.Tensor]:
    """The estimator's advantages and returns; ``episode_ids``: each row's episode (GRPO counts an episode once).

    Per-turn rows (a context window) are scored as RAGEN-2 scores them: every row holds its
    episode's total on its last token, so GRPO gives each turn its episode's group-relative
    advantage, and GAE treats each turn's reply as its own sequence ending in that total.
    """
    a = config.advantage
    if a.estimator == "grpo":
        return adv.compute_grpo(rewards, mask, group_ids, mode=a.grpo_mode, episode_ids=episode_ids)
    assert values is not None
    if a.estimator == "gae":
        return adv.compute_gae(rewards, values, mask, gamma=a.gamma, lam=a.lam, whiten=a.whiten)
    return adv.compute_bi_level_gae(rewards, values, mask, gamma=a.gamma, lam=a.lam,
                                    high_level_gamma=a.high_level_gamma, whiten=a.whiten)


def minibatch_order(group_ids: Sequence[int], seed: int) -> torch.Tensor:
    """Row indices for the mini-batches: groups in a random order, each group's rows together.

    Keeping a group contiguous lets a micro-batch of whole groups encode their shared first
    prompt once (:func:`ragen_bench.train.models.last_hidden`).
    """
    rows_of: dict[int, list[int]] = {}
    for row, group in enumerate(group_ids):
        rows_of.setdefault(group, []).append(row)
    groups = list(rows_of.values())
    shuffled = torch.randperm(len(groups), generator=torch.Generator().manual_seed(seed)).tolist()
    return torch.tensor([row for g in shuffled for row in groups[g]], dtype=torch.long)


def micro_weight(agg: str, micro_mask: torch.Tensor, mini_mask: torch.Tensor) -> float:
    """The share of a micro-batch in its mini-batch's aggregate, so accumulated gradients equal the whole's.

    Sequence means weigh rows (with a response token) equally; the token mean weighs tokens.
    """
    if agg == "token-mean":
        return float(micro_mask.sum()) / max(1.0, float(mini_mask.sum()))
    return float(micro_mask.any(dim=1).sum()) / max(1.0, float(mini_mask.any(dim=1).sum()))


def _kl(config: TrainConfig) -> str:
    return "k3" if config.kl.estimator == "low_var_kl" else "k1"


def _clip(module: Any, max_norm: float) -> float:
    return float(torch.nn.utils.clip_grad_norm_(trainable(module), max_norm))


class _Averages:
    """Weighted means of metrics over micro-batches (each weighted by its share of its mini-batch)."""

    def __init__(self) -> None:
        self.sums: dict[str, float] = {}
        self.weights: dict[str, float] = {}

    def add(self, metrics: dict[str, float], weight: float) -> None:
        for name, value in metrics.items():
            self.sums[name] = self.sums.get(name, 0.0) + weight * value
            self.weights[name] = self.weights.get(name, 0.0) + weight

    def means(self) -> dict[str, float]:
        return {name: self.sums[name] / self.weights[name] for name in self.sums if self.weights[name] > 0}


def train(config: TrainConfig, *, progress: Callable[[str], None] | None = None) -> TrainResult:
    """Train (or resume) the run ``config`` describes in its ``out`` folder."""
    out = out_dir(config)
    # Whatever the settings can make fail (the folder, the model, an adapter, the envs) fails
    # before the folder or its config.json is written, so the corrected command runs.
    ckpt.check_out(out, config)
    trainer = Trainer(config, out, progress=progress)
    ckpt.prepare_out(out, config)
    return trainer.run()
