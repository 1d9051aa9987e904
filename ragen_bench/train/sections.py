"""The train config's sections (``lora``, ``rollout``, ``advantage``, ...): each key with its default and what it means.

Every field is declared once, with :func:`ragen_bench.values.documented`: its default and its help (TRL's
``metadata={"help": ...}``), which ``ragen-bench train --help`` lists and ``--dry-run`` prints as comments
(:mod:`ragen_bench.train.config_help`).  The checks of the values are :mod:`ragen_bench.train.config`'s.
"""

from __future__ import annotations

from dataclasses import dataclass

from ragen_bench.starpo.algorithms import ESTIMATORS, GRPO_MODES, LOSS_AGGREGATIONS, choices
from ragen_bench.values import documented

DTYPES = ("float32", "bfloat16", "float16")
FILTER_LOSS_SCALINGS = ("none", "linear", "sqrt")


@dataclass(frozen=True)
class LoraConfig:
    rank: int = documented(0, help="the adapter's rank; 0: full fine-tuning, > 0: a LoRA adapter is trained and saved")
    alpha: float = documented(64, help="LoRA's scaling alpha (the update is scaled by alpha / rank)")
    dropout: float = documented(0.0, help="dropout on the adapter's input, in [0, 1)")
    target_modules: str | list[str] = documented(
        "all-linear", help="the modules that get an adapter: all-linear, or a list of module names (peft's)")


@dataclass(frozen=True)
class RolloutConfig:
    groups: int = documented(8, help="env groups per step; a group is group_size episodes of one train seed")
    group_size: int = documented(16, help="episodes per group (same seed, sampled independently)")
    temperature: float = documented(1.0, help="sampling temperature of the rollouts (> 0)")
    top_p: float = documented(1.0, help="nucleus sampling's p of the rollouts, in (0, 1] (1: off)")
    max_new_tokens: int = documented(128, help="the most tokens of one reply (per turn)")
    stop_strings: list[str] = documented(factory=lambda: ["</answer>"],
                                         help="a reply ends right after the first of these strings")
    generate_batch: int = documented(64, help="sequences decoded together (keep whole groups in one batch)")
    dtype: str | None = documented(None, help=f"the sampler's precision: {', '.join(DTYPES)}; null: as dtype "
                                   "(with another one, the update's old log-probs are recomputed in dtype)")


@dataclass(frozen=True)
class AdvantageConfig:
    estimator: str = documented("gae", help=f"{choices(ESTIMATORS)}: gae and bi_level_gae train a critic, "
                                "grpo compares the episodes of a group")
    gamma: float = documented(1.0, help="discount per token, in [0, 1]")
    lam: float = documented(1.0, help="GAE's lambda, in [0, 1]")
    high_level_gamma: float = documented(0.95, help="bi_level_gae only: discount per turn, in [0, 1]")
    grpo_mode: str = documented("mean_std", help=f"grpo only: {choices(GRPO_MODES)} (mean_std divides by the "
                                "group's std, mean does not, rloo leaves each episode out of its baseline)")
    whiten: bool = documented(True, help="gae / bi_level_gae: whiten advantages over the batch's response tokens")
    score_placement: str = documented("last", help="last: the episode's total score on its last token; "
                                      "turn: each turn's reward on its reply")


@dataclass(frozen=True)
class OverlongBufferConfig:
    len: int = documented(0, help="tokens before rollout.max_new_tokens where a reply starts to lose reward, "
                          "linearly up to penalty_factor at the limit; 0: off")
    penalty_factor: float = documented(1.0, help="the most a reply loses at rollout.max_new_tokens (>= 0)")


@dataclass(frozen=True)
class ActorConfig:
    lr: float = documented(1e-6, help="AdamW learning rate of the policy")
    weight_decay: float = documented(0.01, help="AdamW weight decay (>= 0)")
    betas: list[float] = documented(factory=lambda: [0.9, 0.999], help="AdamW's two betas, each in [0, 1)")
    grad_clip: float = documented(1.0, help="the gradients' largest norm (clipped to it)")
    clip_low: float = documented(0.2, help="PPO's ratio clip below: 1 - clip_low, in [0, 1)")
    clip_high: float = documented(0.28, help="PPO's ratio clip above: 1 + clip_high (> clip_low: DAPO's clip-higher)")
    dual_clip: float | None = documented(3.0, help="dual-clip constant c (> 1) bounding the loss of negative "
                                         "advantages; null: off")
    entropy_coef: float = documented(0.001, help="weight of the entropy bonus (>= 0)")
    loss_agg: str = documented("seq-mean-token-mean", help=f"how token losses are averaged: {choices(LOSS_AGGREGATIONS)}")
    filter_loss_scaling: str = documented("none", help=f"{', '.join(FILTER_LOSS_SCALINGS)}: advantages x (kept groups "
                                          "/ groups), or its square root (RAGEN-2)")
    ppo_epochs: int = documented(1, help="passes over each step's batch")
    mini_batch: int = documented(32, help="trajectories per optimiser step")
    micro_batch: int = documented(4, help="trajectories per forward/backward (gradient accumulation inside a "
                                  "mini-batch), at most mini_batch")


@dataclass(frozen=True)
class CriticConfig:
    lr: float = documented(1e-5, help="AdamW learning rate of the critic")
    value_clip: float = documented(0.5, help="how far a new value may move from the old one in the value loss (> 0)")
    coef: float = documented(1.0, help="weight of the value loss (> 0)")


@dataclass(frozen=True)
class KLConfig:
    coef: float = documented(0.0, help="weight of the KL penalty; 0: off, and no reference model is loaded")
    estimator: str = documented("low_var_kl", help="k1 | low_var_kl (k3)")
    placement: str = documented("loss", help="loss: a term of the actor loss | reward: subtracted from the rewards")


@dataclass(frozen=True)
class SFTConfig:
    agent: str = documented("optimal", help="optimal (its won episodes only) | random (a format-only warm start: "
                            "every episode)")
    episodes: int = documented(512, help="episodes played to make the records")
    epochs: int = documented(2, help="passes over the records")
    lr: float = documented(1e-4, help="AdamW learning rate")
    batch: int = documented(8, help="records per optimiser step")


@dataclass(frozen=True)
class ValConfig:
    split: str = documented("val", help="the env's panel played (`ragen-bench envs show ENV` lists them)")
    every: int = documented(10, help="steps between validations; also at the end; 0: never")
    before_train: bool = documented(True, help="validate once before the first step too")
    limit: int | None = documented(None, help="only the panel's first N seeds; null: every seed")
    temperature: float = documented(0.5, help="sampling temperature (0: greedy), as RAGEN validates")
    samples: int = documented(1, help="episodes per seed")


@dataclass(frozen=True)
class TestConfig:
    split: str | None = documented("test", help="the panel the final checkpoint is evaluated on; null: skip")
    limit: int | None = documented(None, help="only the panel's first N seeds; null: every seed")


@dataclass(frozen=True)
class CheckpointConfig:
    every: int = documented(10, help="steps between checkpoints (the final one is always saved)")
    keep: int = documented(2, help="checkpoints kept (the latest ones)")


@dataclass(frozen=True)
class LogConfig:
    tensorboard: bool = documented(False, help="also write TensorBoard events to the run folder's tensorboard/")
    progress: bool = documented(True, help="a progress bar on stderr")


@dataclass(frozen=True)
class CollapseDetectionConfig:
    """RAGEN-2's collapse diagnostics (``ragen_bench.train.collapse_probe``; names as RAGEN-2's)."""

    compute_freq: int = documented(10, help="at step 1, then every N steps; 0: off")
    first_turn_enabled: bool = documented(True, help="collapse_first_turn_sample/*: turn 1 of each trajectory")
    multi_turn_enabled: bool = documented(False, help="collapse_trajectory_sample/*: a trajectory drawn uniformly, "
                                          "then one of its turns")
    num_samples: int | None = documented(64, help="first turns drawn and scored under every prompt among them "
                                         "(>= 2); null: all")
    micro_batch_size: int = documented(16, help="rows per cross-scoring forward pass")
    std_eps: float = documented(1e-3, help="mi_zscore's stability constant (> 0)")
    ema_decay: float = documented(0.9, help="moving average of the marginal's spread (mi_zscore_ema), in [0, 1)")
