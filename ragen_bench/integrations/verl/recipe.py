"""From a ``ragen-bench train`` config to the ``verl.trainer.main_ppo`` overrides that train it.

:func:`verl_overrides` maps the train config's keys (configs/train/base.yaml) onto veRL's Hydra
keys, refusing with one :class:`RecipeError` what veRL cannot express; :mod:`.job` composes
them with veRL's own config, checks them (the dry run), writes the run folder and runs
``python -m verl.trainer.main_ppo <overrides>`` exactly as a veRL user would.
docs/scale-out.md, "Training with veRL", lists what maps where and what differs.

Keys the train config does not have (GPUs, rollout engine, lengths) start from
:data:`HARDWARE_DEFAULTS`; any ``key=value`` in ``extra`` replaces the override of the same key
or adds a new one, as on veRL's own command line.

A train config is a checked :class:`~ragen_bench.train.config.TrainConfig`
(:func:`~ragen_bench.train.config.from_preset`): every value is in range and every choice is one
the algorithm table knows, so this module reads the typed fields as they are.  The ``chat``
settings are read as the typed :class:`~ragen_bench.chat.ChatConfig`
(:attr:`TrainConfig.chat_config`), so their defaults are ChatConfig's and no other copy of them
lives here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragen_bench.integrations.verl.data import AGENT_NAME
from ragen_bench.starpo.algorithms import ALGORITHMS, ESTIMATORS, GRPO_MODES, LOSS_AGGREGATIONS
from ragen_bench.starpo.filter_spec import ENTROPY_METRICS
from ragen_bench.train.config import TrainConfig

TRAINER_MODULE = "ragen_bench.integrations.verl.trainer"
TRAINER_MODE = "ragen_sync"  # the name the trainer module registers its trainer under
SAMPLER_FILE = Path(__file__).with_name("sampler.py")
SAMPLER_CLASS = "StarPOSFilterSampler"
# A dual-clip bound no ratio reaches: veRL clamps the log-ratio to 20 (ratio < 4.9e8).
NO_DUAL_CLIP = 1.0e9
# Template and observation tokens between two replies (Sokoban's 6x6 board and the turn text
# take about 120 with Qwen2.5's tokenizer); the response holds every turn.
BRIDGE_TOKENS = 256
HARDWARE_DEFAULTS: dict[str, Any] = {
    "trainer.n_gpus_per_node": 1,
    "trainer.nnodes": 1,
    "actor_rollout_ref.rollout.name": "vllm",
    "actor_rollout_ref.rollout.tensor_model_parallel_size": 1,
    "actor_rollout_ref.rollout.gpu_memory_utilization": 0.5,
    "actor_rollout_ref.rollout.agent.num_workers": 8,
    "data.max_prompt_length": 1024,
    "reward.num_workers": 1,  # idle: the agent loop sets every trajectory's score itself
    "trainer.logger": "[console]",
}
KL_NAMES = {"k1": "kl", "low_var_kl": "low_var_kl"}


class RecipeError(ValueError):
    """A train config that the veRL recipe cannot express, or that breaks a batch-size invariant."""


def _value(value: Any) -> str:
    """A Hydra override value: lists in brackets, booleans lowercase, None as null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(item) for item in value) + "]"
    return str(value)


def _run_name(config: TrainConfig) -> str:
    """``<preset>-<env>`` with the env id's slashes as dashes: the experiment's name and its default folder's."""
    return f"{config.preset}-{config.env.replace('/', '-')}"


def run_folder(config: TrainConfig) -> Path:
    """Where the run's data, agent-loop file and checkpoints go (``out``, else runs/train/verl-<preset>-<env>)."""
    if config.out:
        return Path(config.out).resolve()
    return Path("runs", "train", f"verl-{_run_name(config)}").resolve()


def model_path(model: str) -> str:
    """Aliases of this package become their local directories; anything else goes to veRL as given (a hub id or path)."""
    from ragen_bench.agents import smollm2, tiny_model
    from ragen_bench.agents.sampling import resolve_model_path

    return str(resolve_model_path(model)) if model in (smollm2.ALIAS, tiny_model.ALIAS) else model


def _lengths(config: TrainConfig) -> dict[str, int]:
    """veRL's prompt and response budgets.  The full history (``chat.history_window`` None, one row per
    episode): turn 1's prompt, then every reply and the template ids between them.  A window of k turns
    (one row per turn): each row is one reply after a prompt that holds up to k - 1 earlier replies and
    their observations, so the prompt grows by one reply and one bridge per earlier turn."""
    chat = config.chat_config
    turns, window = chat.max_turns, chat.history_window
    per_turn = config.rollout.max_new_tokens
    prompt = HARDWARE_DEFAULTS["data.max_prompt_length"]
    if window is None:
        return {"data.max_prompt_length": prompt,
                "data.max_response_length": turns * per_turn + (turns - 1) * BRIDGE_TOKENS}
    earlier = min(window, turns) - 1
    # A reply: max_new_tokens sampled ids, then the end-of-turn id a stop string adds.
    return {"data.max_prompt_length": prompt + earlier * (per_turn + BRIDGE_TOKENS),
            "data.max_response_length": per_turn + 1}


def _refuse_unsupported(config: TrainConfig) -> None:
    """Train-config settings with no veRL counterpart: one error naming the key."""
    on_verl = [name for name, algorithm in ALGORITHMS.items() if algorithm.verl]
    local_only = [name for name in ALGORITHMS if name not in on_verl]
    advantage, window = config.advantage, config.chat_config.history_window
    checks = [
        ("algo", config.algo in on_verl,
         f"the veRL backend trains algo={'/'.join(on_verl)} only (run {', '.join(local_only)} locally)"),
        ("advantage.score_placement", advantage.score_placement == "last",
         "veRL puts the agent loop's score on the last response token only; use 'last'"),
        ("advantage.whiten", advantage.whiten or advantage.estimator == "grpo",
         "veRL's GAE always whitens the advantages; use true"),
        ("critic.coef", config.critic.coef == 1.0,
         "veRL trains the critic with its own optimiser, so a loss weight has no meaning there; use 1.0"),
        ("lora.dropout", config.lora.dropout == 0.0, "veRL's LoRA has no dropout setting; use 0.0"),
        ("overlong_buffer.len", not (config.overlong_buffer.len and window is not None),
         "with chat.history_window each turn is a row and veRL gives every row its episode's last score, so a "
         "reply's own overlong charge has no place; use 0 or the full history"),
        ("filter.metric", config.filter.mode != "rollout" or config.filter.metric not in ENTROPY_METRICS,
         "the sampler filters before veRL computes any entropy (its old-log-prob step); use a reward or length "
         "metric, or the local backend"),
    ]
    for key, ok, why in checks:
        if not ok:
            raise RecipeError(f"backend=verl: {key}: {why}")


def collapse_settings(config: TrainConfig) -> dict[str, Any]:
    """The trainer's collapse-diagnostic settings (``collapse_detection.<key>``, ``think``, ``seed``), empty
    when no step computes any (``compute_freq`` 0, or neither sample enabled)."""
    block = config.collapse_detection
    if not block.compute_freq or not (block.first_turn_enabled or block.multi_turn_enabled):
        return {}
    settings = {f"collapse_detection.{name}": value for name, value in dataclasses.asdict(block).items()}
    settings["think"] = config.chat_config.think
    settings["seed"] = config.seed
    return settings


def _advantage(config: TrainConfig) -> dict[str, Any]:
    """veRL's estimator for ``advantage.*`` (GRPO's mode picks its variant) and whether it trains a critic."""
    advantage = config.advantage
    estimator = ESTIMATORS[advantage.estimator]
    if estimator.verl is None:
        raise RecipeError(f"backend=verl: advantage.estimator: veRL has no estimator for {estimator.name!r}; use "
                          f"one of {', '.join(name for name, e in ESTIMATORS.items() if e.verl)}, or the local backend")
    overrides: dict[str, Any] = {
        "algorithm.gamma": advantage.gamma,
        "algorithm.lam": advantage.lam,
        "algorithm.adv_estimator": estimator.verl,
    }
    if estimator.reads_grpo_mode:  # the mode picks veRL's variant: RLOO is its own estimator there
        mode = GRPO_MODES[advantage.grpo_mode]
        overrides["algorithm.adv_estimator"] = mode.verl or estimator.verl
        overrides["algorithm.norm_adv_by_std_in_grpo"] = mode.divides_by_std
    # bi-level GAE: veRL's GAE and critic, then our trainer (.trainer) replaces the advantages.
    overrides["critic.enable"] = estimator.critic
    return overrides


def _trainer_hooks(config: TrainConfig) -> dict[str, Any]:
    """Our trainer (.trainer) in place of veRL's when a step needs its hooks (bi-level GAE, the filter's loss
    scaling, the collapse diagnostics); empty otherwise, leaving veRL's own trainer."""
    bi_level = ESTIMATORS[config.advantage.estimator].verl_bi_level
    scaling = config.actor.filter_loss_scaling
    probe = collapse_settings(config)
    if not (bi_level or scaling != "none" or probe):
        return {}
    settings = {"bi_level": bi_level, "high_level_gamma": config.advantage.high_level_gamma,
                "filter_loss_scaling": scaling, **probe}
    return {
        "trainer.v1.trainer_mode": TRAINER_MODE,
        **{f"+trainer.v1.{TRAINER_MODE}.{name}": value for name, value in settings.items()},
        # The trainer class must be registered in veRL's TaskRunner actor: veRL imports the
        # modules named here on every `import verl`, in every process of the job.
        "+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES": TRAINER_MODULE,
    }


def _kl(config: TrainConfig) -> dict[str, Any]:
    """``kl.*``: a penalty in the reward (``placement=reward``) or a term of the actor's loss, none at ``coef`` 0."""
    kl = config.kl
    in_reward = kl.coef > 0 and kl.placement == "reward"
    in_loss = kl.coef > 0 and not in_reward
    kl_name = KL_NAMES[kl.estimator]
    return {
        "algorithm.use_kl_in_reward": in_reward,
        "algorithm.kl_penalty": kl_name,
        "algorithm.kl_ctrl.kl_coef": kl.coef if in_reward else 0.0,
        "actor_rollout_ref.actor.use_kl_loss": in_loss,
        "actor_rollout_ref.actor.kl_loss_coef": kl.coef if in_loss else 0.0,
        "actor_rollout_ref.actor.kl_loss_type": kl_name,
    }


def fixed_kept_groups(config: TrainConfig) -> int | None:
    """Groups trained on per step when the filter keeps a fixed number (std / std_rev), else None (RAGEN-2's filter)."""
    return None if config.filter.mode == "rollout" else config.kept_groups


def _batches(config: TrainConfig) -> dict[str, Any]:
    """Sizes in veRL's units: prompts (groups) for the batch and mini-batch, trajectories per GPU for micro-batches.

    ``data.train_batch_size`` is the groups a step trains on: std / std_rev keep a fixed number; RAGEN-2's
    filter keeps a varying number of the ``rollout.groups`` (veRL pads a batch to whole mini-batches with
    no-op rows, ``PPOTrainer._balance_batch``), and with ``filter.refill_rounds`` the sampler rolls out
    fresh seeds until ``rollout.groups`` groups are kept, as the local trainer does.
    """
    rollout, actor, filter_ = config.rollout, config.actor, config.filter
    spec = filter_.spec
    fixed = fixed_kept_groups(config)
    kept = fixed or rollout.groups
    overrides: dict[str, Any] = {
        "data.train_batch_size": kept,
        "actor_rollout_ref.rollout.n": rollout.group_size,
        "actor_rollout_ref.actor.ppo_mini_batch_size": actor.mini_batch // rollout.group_size,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": actor.micro_batch,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": actor.micro_batch,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": actor.micro_batch,
        "critic.ppo_micro_batch_size_per_gpu": actor.micro_batch,
    }
    if (kept < rollout.groups) if fixed else (not spec.keeps_all or filter_.refill_rounds):
        # Roll out every group, train on the kept ones: the sampler (.sampler) filters.
        settings = {
            "groups": rollout.groups, "refill_rounds": filter_.refill_rounds,
            "empty_stop_steps": filter_.empty_stop_steps,
            "collapse_compute_freq": collapse_settings(config).get("collapse_detection.compute_freq", 0),
            **dataclasses.asdict(spec),
        }
        overrides.update(
            {
                "trainer.v1.sampler.custom_sampler.path": str(SAMPLER_FILE),
                "trainer.v1.sampler.custom_sampler.name": SAMPLER_CLASS,
                **{f"+trainer.v1.sampler.sampler_kwargs.{key}": value for key, value in settings.items()},
            }
        )
    return overrides


def _training(config: TrainConfig) -> dict[str, Any]:
    """The run's files, model, optimiser, clipping, LoRA, sampling, validation and checkpoint schedule."""
    out = run_folder(config)
    model = model_path(config.model)
    actor, critic, lora, rollout, val = config.actor, config.critic, config.lora, config.rollout, config.val
    return {
        "data.train_files": out / "train.parquet",
        "data.val_files": out / "val.parquet",
        "data.shuffle": False,  # the Parquet file already holds the seeds in training order
        "actor_rollout_ref.model.path": model,
        "critic.model.path": model,
        "actor_rollout_ref.actor.optim.lr": actor.lr,
        "actor_rollout_ref.actor.optim.weight_decay": actor.weight_decay,
        "actor_rollout_ref.actor.optim.betas": actor.betas,
        "actor_rollout_ref.actor.optim.clip_grad": actor.grad_clip,
        "actor_rollout_ref.actor.clip_ratio_low": actor.clip_low,
        "actor_rollout_ref.actor.clip_ratio_high": actor.clip_high,
        "actor_rollout_ref.actor.clip_ratio_c": actor.dual_clip or NO_DUAL_CLIP,
        "actor_rollout_ref.actor.entropy_coeff": actor.entropy_coef,
        "actor_rollout_ref.actor.loss_agg_mode": LOSS_AGGREGATIONS[actor.loss_agg].verl,
        "actor_rollout_ref.actor.ppo_epochs": actor.ppo_epochs,
        "critic.optim.lr": critic.lr,
        "critic.cliprange_value": critic.value_clip,
        "actor_rollout_ref.model.lora_rank": lora.rank,
        "actor_rollout_ref.model.lora_alpha": lora.alpha,
        "actor_rollout_ref.model.target_modules": lora.target_modules,
        "actor_rollout_ref.rollout.temperature": rollout.temperature,
        "actor_rollout_ref.rollout.top_p": rollout.top_p,
        "actor_rollout_ref.rollout.val_kwargs.temperature": val.temperature,
        "actor_rollout_ref.rollout.val_kwargs.n": val.samples,
        "actor_rollout_ref.rollout.val_kwargs.do_sample": val.temperature > 0,
        "actor_rollout_ref.rollout.agent.agent_loop_config_path": out / "agent_loops.yaml",
        "actor_rollout_ref.rollout.agent.default_agent_loop": AGENT_NAME,
        "trainer.total_training_steps": config.steps,
        "trainer.total_epochs": 1,
        "trainer.test_freq": val.every or -1,
        "trainer.val_before_train": val.before_train,
        "trainer.save_freq": config.checkpoint.every or -1,
        "trainer.max_actor_ckpt_to_keep": config.checkpoint.keep,
        "trainer.max_critic_ckpt_to_keep": config.checkpoint.keep,
        "trainer.default_local_dir": out / "checkpoints",
        "trainer.project_name": "ragen-bench",
        "trainer.experiment_name": _run_name(config),
        "data.seed": config.seed,
    }


def _with_extra(overrides: dict[str, Any], extra: Sequence[str]) -> dict[str, Any]:
    """``overrides`` with each ``key=value`` of ``extra`` in place of the same key (with or without veRL's
    ``+``), or added at the end."""
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RecipeError(f"veRL override {item!r}: expected key=value")
        overrides.pop(key.lstrip("+"), None)
        overrides.pop("+" + key.lstrip("+"), None)
        overrides[key] = value
    return overrides


def verl_overrides(config: TrainConfig, extra: Sequence[str] = ()) -> list[str]:
    """The ``key=value`` overrides of ``verl.trainer.main_ppo`` that train ``config`` (a checked train config)."""
    _refuse_unsupported(config)
    overrides: dict[str, Any] = {**HARDWARE_DEFAULTS, **_lengths(config), **_training(config)}
    if config.log.tensorboard:
        overrides["trainer.logger"] = "[console,tensorboard]"
    overrides.update({**_advantage(config), **_trainer_hooks(config), **_kl(config)})
    overrides.update(_batches(config))
    overrides = _with_extra(overrides, extra)
    prompt = int(overrides["data.max_prompt_length"])
    overrides.setdefault("actor_rollout_ref.rollout.max_model_len", prompt + int(overrides["data.max_response_length"]))
    return [f"{key}={_value(value)}" for key, value in overrides.items()]
