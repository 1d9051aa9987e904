"""From a ``ragen-bench train`` config to the ``verl.trainer.main_ppo`` command that trains it.

:func:`verl_overrides` maps the train config's keys (configs/train/base.yaml) onto veRL's
Hydra keys; :func:`dry_run` composes them with veRL's own ``ppo_trainer`` config, checks
RAGEN's batch-size invariants and veRL's own config checks, and returns the resolved config
as YAML; :func:`launch` writes the run folder (train/val Parquet files, the agent-loop file,
``command.sh``) and runs ``python -m verl.trainer.main_ppo <overrides>`` exactly as a veRL user
would.  docs/scale-out.md, "Training with veRL", lists what maps where and what differs.

Keys the train config does not have (GPUs, rollout engine, lengths) start from
:data:`HARDWARE_DEFAULTS`; any ``key=value`` in ``extra`` replaces the override of the same key
or adds a new one, as on veRL's own command line.

A train config is a checked :class:`~ragen_bench.train.config.TrainConfig` or its composed
mapping (``TrainConfig.to_dict()``, or configs/train composed as the veRL-side tests do); both
read the same.  The ``chat`` settings are always read as the typed
:class:`~ragen_bench.chat.ChatConfig` (:func:`chat_config`), so their defaults are ChatConfig's
and no other copy of them lives here.
"""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_bench.agents.sampling import check_temperature
from ragen_bench.chat.config import ChatConfig, check_chat
from ragen_bench.integrations.verl.data import AGENT_NAME
from ragen_bench.starpo.algorithms import ALGORITHMS, ESTIMATORS, GRPO_MODES, LOSS_AGGREGATIONS
from ragen_bench.starpo.filter_spec import ENTROPY_METRICS, FilterSpec, groups_to_keep
from ragen_bench.train.config import TrainConfig
from ragen_bench.train.filter_config import FilterConfig

# A train config as the recipe takes it: typed, or the mapping it composes to (see the module docstring).
Config = TrainConfig | Mapping[str, Any]

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


def _get(config: Config, dotted: str) -> Any:
    """The value at ``dotted`` (``"rollout.groups"``) of a TrainConfig or its mapping."""
    node: Any = config
    for part in dotted.split("."):
        if dataclasses.is_dataclass(node) and not isinstance(node, type) and hasattr(node, part):
            node = getattr(node, part)
        elif isinstance(node, Mapping) and part in node:
            node = node[part]
        else:
            raise RecipeError(f"train config: missing key {dotted!r}")
    return node


def _section(config: Config, name: str) -> dict[str, Any]:
    """A whole section (``filter``, ``collapse_detection``) as a plain dict, whichever form the config has."""
    node = _get(config, name)
    return dataclasses.asdict(node) if dataclasses.is_dataclass(node) else dict(node or {})


def chat_config(config: Config) -> ChatConfig:
    """The ``chat`` settings as a checked ChatConfig: :attr:`TrainConfig.chat_config`, or the same
    :func:`~ragen_bench.chat.config.check_chat` on a mapping's ``chat`` (a bad value is a RecipeError)."""
    if isinstance(config, TrainConfig):
        return config.chat_config
    return check_chat(_get(config, "chat") or {}, RecipeError)


def _value(value: Any) -> str:
    """A Hydra override value: lists in brackets, booleans lowercase, None as null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_value(item) for item in value) + "]"
    return str(value)


def run_folder(config: Config) -> Path:
    """Where the run's data, agent-loop file and checkpoints go (``out``, else runs/train/verl-<preset>-<env>)."""
    out = _get(config, "out")
    if out:
        return Path(out).resolve()
    env = str(_get(config, "env")).replace("/", "-")
    return Path("runs", "train", f"verl-{_get(config, 'preset')}-{env}").resolve()


def model_path(model: str) -> str:
    """Aliases of this package become their local directories; anything else goes to veRL as given (a hub id or path)."""
    from ragen_bench.agents import smollm2, tiny_model
    from ragen_bench.agents.sampling import resolve_model_path

    return str(resolve_model_path(model)) if model in (smollm2.ALIAS, tiny_model.ALIAS) else model


def _window(config: Config) -> int | None:
    """``chat.history_window``: None for the full history (one row per episode), else one row per turn."""
    return chat_config(config).history_window


def _lengths(config: Config) -> dict[str, int]:
    """veRL's prompt and response budgets.  The full history: turn 1's prompt, then every reply and
    the template ids between them.  A window of k turns: each row is one reply after a prompt that
    holds up to k - 1 earlier replies and their observations, so the prompt grows by one reply and one
    bridge per earlier turn."""
    turns = chat_config(config).max_turns
    per_turn = _get(config, "rollout.max_new_tokens")
    prompt = HARDWARE_DEFAULTS["data.max_prompt_length"]
    window = _window(config)
    if window is None:
        return {"data.max_prompt_length": prompt,
                "data.max_response_length": turns * per_turn + (turns - 1) * BRIDGE_TOKENS}
    earlier = min(window, turns) - 1
    # A reply: max_new_tokens sampled ids, then the end-of-turn id a stop string adds.
    return {"data.max_prompt_length": prompt + earlier * (per_turn + BRIDGE_TOKENS),
            "data.max_response_length": per_turn + 1}


def _refuse_unsupported(config: Config) -> None:
    """Train-config settings with no veRL counterpart: one error naming the key."""
    on_verl = [name for name, algorithm in ALGORITHMS.items() if algorithm.verl]
    local_only = [name for name in ALGORITHMS if name not in on_verl]
    checks = [
        ("algo", _get(config, "algo") in on_verl,
         f"the veRL backend trains algo={'/'.join(on_verl)} only (run {', '.join(local_only)} locally)"),
        ("advantage.score_placement", _get(config, "advantage.score_placement") == "last",
         "veRL puts the agent loop's score on the last response token only; use 'last'"),
        ("advantage.whiten", _get(config, "advantage.whiten") or _get(config, "advantage.estimator") == "grpo",
         "veRL's GAE always whitens the advantages; use true"),
        ("critic.coef", _get(config, "critic.coef") == 1.0,
         "veRL trains the critic with its own optimiser, so a loss weight has no meaning there; use 1.0"),
        ("lora.dropout", _get(config, "lora.dropout") == 0.0, "veRL's LoRA has no dropout setting; use 0.0"),
        ("overlong_buffer.len", not (_get(config, "overlong_buffer.len") and _window(config) is not None),
         "with chat.history_window each turn is a row and veRL gives every row its episode's last score, so a "
         "reply's own overlong charge has no place; use 0 or the full history"),
        ("filter.metric",
         _get(config, "filter.mode") != "rollout" or _get(config, "filter.metric") not in ENTROPY_METRICS,
         "the sampler filters before veRL computes any entropy (its old-log-prob step); use a reward or length "
         "metric, or the local backend"),
    ]
    for key, ok, why in checks:
        if not ok:
            raise RecipeError(f"backend=verl: {key}: {why}")
    _check_temperatures(config)


def _check_temperatures(config: Config) -> None:
    """The trainer's temperature rules (a mapping from the veRL-side tests has not been through them)."""
    for key, greedy in (("rollout.temperature", False), ("val.temperature", True)):
        try:
            check_temperature(_get(config, key), greedy=greedy)
        except ValueError as refused:
            raise RecipeError(f"train config: {key}: {str(refused).removeprefix('temperature ')}") from None


def _choice(config: Config, dotted: str, allowed: Sequence[str]) -> Any:
    value = _get(config, dotted)
    if value not in allowed:
        raise RecipeError(f"train config: {dotted}: {value!r} is not one of {', '.join(allowed)}")
    return value


def collapse_settings(config: Config) -> dict[str, Any]:
    """The trainer's collapse-diagnostic settings (``collapse_detection.<key>``, ``think``, ``seed``), empty
    when no step computes any (``compute_freq`` 0, or neither sample enabled)."""
    block = _section(config, "collapse_detection")
    if not block.get("compute_freq") or not (block.get("first_turn_enabled") or block.get("multi_turn_enabled")):
        return {}
    settings = {f"collapse_detection.{name}": value for name, value in block.items()}
    settings["think"] = chat_config(config).think
    settings["seed"] = _get(config, "seed")
    return settings


def _algorithm(config: Config) -> dict[str, Any]:
    estimator = ESTIMATORS[_choice(config, "advantage.estimator", tuple(ESTIMATORS))]
    mode = GRPO_MODES[_choice(config, "advantage.grpo_mode", tuple(GRPO_MODES))]
    if estimator.verl is None:
        raise RecipeError(f"backend=verl: advantage.estimator: veRL has no estimator for {estimator.name!r}; use "
                          f"one of {', '.join(name for name, e in ESTIMATORS.items() if e.verl)}, or the local backend")
    overrides: dict[str, Any] = {
        "algorithm.gamma": _get(config, "advantage.gamma"),
        "algorithm.lam": _get(config, "advantage.lam"),
        "algorithm.adv_estimator": estimator.verl,
    }
    if estimator.reads_grpo_mode:  # the mode picks veRL's variant: RLOO is its own estimator there
        overrides["algorithm.adv_estimator"] = mode.verl or estimator.verl
        overrides["algorithm.norm_adv_by_std_in_grpo"] = mode.divides_by_std
    # bi-level GAE: veRL's GAE and critic, then our trainer (.trainer) replaces the advantages.
    overrides["critic.enable"] = estimator.critic
    scaling = _choice(config, "actor.filter_loss_scaling", ("none", "linear", "sqrt"))
    probe = collapse_settings(config)
    if estimator.verl_bi_level or scaling != "none" or probe:  # our trainer's hooks (.trainer)
        overrides["trainer.v1.trainer_mode"] = TRAINER_MODE
        overrides[f"+trainer.v1.{TRAINER_MODE}.bi_level"] = estimator.verl_bi_level
        overrides[f"+trainer.v1.{TRAINER_MODE}.high_level_gamma"] = _get(config, "advantage.high_level_gamma")
        overrides[f"+trainer.v1.{TRAINER_MODE}.filter_loss_scaling"] = scaling
        for name, value in probe.items():
            overrides[f"+trainer.v1.{TRAINER_MODE}.{name}"] = value
        # The trainer class must be registered in veRL's TaskRunner actor: veRL imports the
        # modules named here on every `import verl`, in every process of the job.
        overrides["+ray_kwargs.ray_init.runtime_env.env_vars.VERL_USE_EXTERNAL_MODULES"] = TRAINER_MODULE
    coef = _get(config, "kl.coef")
    in_reward = coef > 0 and _choice(config, "kl.placement", ("loss", "reward")) == "reward"
    in_loss = coef > 0 and not in_reward
    kl_name = KL_NAMES[_choice(config, "kl.estimator", tuple(KL_NAMES))]
    overrides.update(
        {
            "algorithm.use_kl_in_reward": in_reward,
            "algorithm.kl_penalty": kl_name,
            "algorithm.kl_ctrl.kl_coef": coef if in_reward else 0.0,
            "actor_rollout_ref.actor.use_kl_loss": in_loss,
            "actor_rollout_ref.actor.kl_loss_coef": coef if in_loss else 0.0,
            "actor_rollout_ref.actor.kl_loss_type": kl_name,
        }
    )
    return overrides


def filter_spec(config: Config) -> FilterSpec:
    """The train config's rollout filter (StarPO-S's std preset or RAGEN-2's filter), as the local trainer builds it."""
    try:
        return FilterConfig(**_section(config, "filter")).spec
    except (TypeError, ValueError) as error:
        raise RecipeError(f"train config: filter: {error}") from error


def fixed_kept_groups(config: Config) -> int | None:
    """Groups trained on per step when the filter keeps a fixed number (std / std_rev), else None (RAGEN-2's filter)."""
    if _get(config, "filter.mode") == "rollout":
        return None
    return groups_to_keep(_get(config, "rollout.groups"), filter_spec(config))


def _batches(config: Config) -> dict[str, Any]:
    """Sizes in veRL's units: prompts (groups) for the batch and mini-batch, trajectories per GPU for micro-batches.

    ``data.train_batch_size`` is the groups a step trains on: std / std_rev keep a fixed number; RAGEN-2's
    filter keeps a varying number of the ``rollout.groups`` (veRL pads a batch to whole mini-batches with
    no-op rows, ``PPOTrainer._balance_batch``), and with ``filter.refill_rounds`` the sampler rolls out
    fresh seeds until ``rollout.groups`` groups are kept, as the local trainer does.
    """
    groups = _get(config, "rollout.groups")
    group_size = _get(config, "rollout.group_size")
    spec = filter_spec(config)
    fixed = fixed_kept_groups(config)
    kept = fixed or groups
    refill = _get(config, "filter.refill_rounds")
    micro = _get(config, "actor.micro_batch")
    overrides: dict[str, Any] = {
        "data.train_batch_size": kept,
        "actor_rollout_ref.rollout.n": group_size,
        "actor_rollout_ref.actor.ppo_mini_batch_size": _get(config, "actor.mini_batch") // group_size,
        "actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu": micro,
        "actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu": micro,
        "actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu": micro,
        "critic.ppo_micro_batch_size_per_gpu": micro,
    }
    if (kept < groups) if fixed else (not spec.keeps_all or refill):  # roll out every group, train on the kept ones
        settings = {
            "groups": groups, "refill_rounds": refill, "empty_stop_steps": _get(config, "filter.empty_stop_steps"),
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


def verl_overrides(config: Config, extra: Sequence[str] = ()) -> list[str]:
    """The ``key=value`` overrides of ``verl.trainer.main_ppo`` that train ``config`` (a composed train config)."""
    _refuse_unsupported(config)
    out = run_folder(config)
    model = model_path(str(_get(config, "model")))
    overrides: dict[str, Any] = dict(HARDWARE_DEFAULTS)
    overrides.update(_lengths(config))
    overrides.update(
        {
            "data.train_files": out / "train.parquet",
            "data.val_files": out / "val.parquet",
            "data.shuffle": False,  # the Parquet file already holds the seeds in training order
            "actor_rollout_ref.model.path": model,
            "critic.model.path": model,
            "actor_rollout_ref.actor.optim.lr": _get(config, "actor.lr"),
            "actor_rollout_ref.actor.optim.weight_decay": _get(config, "actor.weight_decay"),
            "actor_rollout_ref.actor.optim.betas": _get(config, "actor.betas"),
            "actor_rollout_ref.actor.optim.clip_grad": _get(config, "actor.grad_clip"),
            "actor_rollout_ref.actor.clip_ratio_low": _get(config, "actor.clip_low"),
            "actor_rollout_ref.actor.clip_ratio_high": _get(config, "actor.clip_high"),
            "actor_rollout_ref.actor.clip_ratio_c": _get(config, "actor.dual_clip") or NO_DUAL_CLIP,
            "actor_rollout_ref.actor.entropy_coeff": _get(config, "actor.entropy_coef"),
            "actor_rollout_ref.actor.loss_agg_mode":
                LOSS_AGGREGATIONS[_choice(config, "actor.loss_agg", tuple(LOSS_AGGREGATIONS))].verl,
            "actor_rollout_ref.actor.ppo_epochs": _get(config, "actor.ppo_epochs"),
            "critic.optim.lr": _get(config, "critic.lr"),
            "critic.cliprange_value": _get(config, "critic.value_clip"),
            "actor_rollout_ref.model.lora_rank": _get(config, "lora.rank"),
            "actor_rollout_ref.model.lora_alpha": _get(config, "lora.alpha"),
            "actor_rollout_ref.model.target_modules": _get(config, "lora.target_modules"),
            "actor_rollout_ref.rollout.temperature": _get(config, "rollout.temperature"),
            "actor_rollout_ref.rollout.top_p": _get(config, "rollout.top_p"),
            "actor_rollout_ref.rollout.val_kwargs.temperature": _get(config, "val.temperature"),
            "actor_rollout_ref.rollout.val_kwargs.n": _get(config, "val.samples"),
            "actor_rollout_ref.rollout.val_kwargs.do_sample": _get(config, "val.temperature") > 0,
            "actor_rollout_ref.rollout.agent.agent_loop_config_path": out / "agent_loops.yaml",
            "actor_rollout_ref.rollout.agent.default_agent_loop": AGENT_NAME,
            "trainer.total_training_steps": _get(config, "steps"),
            "trainer.total_epochs": 1,
            "trainer.test_freq": _get(config, "val.every") or -1,
            "trainer.val_before_train": _get(config, "val.before_train"),
            "trainer.save_freq": _get(config, "checkpoint.every") or -1,
            "trainer.max_actor_ckpt_to_keep": _get(config, "checkpoint.keep"),
            "trainer.max_critic_ckpt_to_keep": _get(config, "checkpoint.keep"),
            "trainer.default_local_dir": out / "checkpoints",
            "trainer.project_name": "ragen-bench",
            "trainer.experiment_name": f"{_get(config, 'preset')}-{str(_get(config, 'env')).replace('/', '-')}",
            "data.seed": _get(config, "seed"),
        }
    )
    if _get(config, "log.tensorboard"):
        overrides["trainer.logger"] = "[console,tensorboard]"
    overrides.update(_algorithm(config))
    overrides.update(_batches(config))
    for item in extra:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise RecipeError(f"veRL override {item!r}: expected key=value")
        overrides.pop(key.lstrip("+"), None)
        overrides.pop("+" + key.lstrip("+"), None)
        overrides[key] = value
    prompt = int(overrides["data.max_prompt_length"])
    overrides.setdefault("actor_rollout_ref.rollout.max_model_len", prompt + int(overrides["data.max_response_length"]))
    return [f"{key}={_value(value)}" for key, value in overrides.items()]


def compose_verl(overrides: Sequence[str]) -> Any:
    """veRL's own ``ppo_trainer`` config with ``overrides`` (an OmegaConf DictConfig)."""
    from hydra import compose, initialize_config_module

    with initialize_config_module("verl.trainer.config", version_base=None):
        return compose("ppo_trainer", overrides=list(overrides))


def check_invariants(config: Config, verl_config: Any) -> None:
    """RAGEN's batch-size rules, in the train config's words (one :class:`RecipeError` each)."""
    groups = _get(config, "rollout.groups")
    group_size = _get(config, "rollout.group_size")
    mini = _get(config, "actor.mini_batch")
    micro = _get(config, "actor.micro_batch")
    # RAGEN-2's filter keeps a varying number of groups, which veRL pads to whole mini-batches.
    kept = (fixed_kept_groups(config) or groups) * group_size
    gpus = int(verl_config.trainer.n_gpus_per_node) * int(verl_config.trainer.nnodes)
    tp = int(verl_config.actor_rollout_ref.rollout.tensor_model_parallel_size)
    rollout = verl_config.actor_rollout_ref.rollout
    rules = [
        (mini % group_size == 0,
         f"actor.mini_batch ({mini}) must be a multiple of rollout.group_size ({group_size}): "
         "veRL's mini-batches hold whole groups"),
        (kept >= mini,
         f"the filter keeps {kept} trajectories per step (groups x group_size x filter.ratio), fewer than "
         f"actor.mini_batch ({mini})"),
        (kept % mini == 0 or fixed_kept_groups(config) is None,
         f"the {kept} kept trajectories do not split into mini-batches of {mini}"),
        (micro * gpus <= mini and mini % (micro * gpus) == 0,
         f"actor.mini_batch ({mini}) must be a multiple of actor.micro_batch x GPUs ({micro} x {gpus})"),
        (gpus % tp == 0, f"tensor_model_parallel_size ({tp}) must divide the {gpus} GPUs"),
        (int(rollout.max_model_len) >= int(rollout.prompt_length) + int(rollout.response_length),
         f"rollout.max_model_len ({rollout.max_model_len}) is below prompt + response length "
         f"({rollout.prompt_length} + {rollout.response_length})"),
    ]
    for ok, message in rules:
        if not ok:
            raise RecipeError(f"backend=verl: {message}")


def verl_checks(verl_config: Any) -> str:
    """veRL's own config checks (``validate_config``, as ``main_ppo`` runs them); needs the model on disk.

    Returns a line for the dry-run report; a failed check is a :class:`RecipeError`.
    """
    from hydra.errors import HydraException
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    model = Path(str(verl_config.actor_rollout_ref.model.path)).expanduser()
    if not (model / "config.json").is_file():
        return f"# veRL's own config checks skipped: {model} is not a local model directory"
    try:
        validate_config(
            verl_config, use_reference_policy=need_reference_policy(verl_config), use_critic=need_critic(verl_config)
        )
    except (AssertionError, ValueError, HydraException) as error:
        # veRL's dataclasses assert inside Hydra's instantiate: one line, whatever the nesting.
        raise RecipeError(f"backend=verl: veRL's config check failed: {' '.join(str(error).split())}") from error
    return "# veRL's own config checks passed"


def resolve(config: Config, extra: Sequence[str] = ()) -> tuple[list[str], Any]:
    """The overrides and veRL's config they compose to, after RAGEN's invariants are checked."""
    overrides = verl_overrides(config, extra)
    try:
        verl_config = compose_verl(overrides)
    except Exception as error:  # Hydra's errors name the override it could not apply
        raise RecipeError(f"backend=verl: veRL's config refused an override: {str(error).splitlines()[0]}") from error
    check_invariants(config, verl_config)
    return overrides, verl_config


def dry_run(config: Config, extra: Sequence[str] = ()) -> str:
    """The command and veRL's resolved config for ``config``, after every check (nothing is written or run)."""
    from omegaconf import OmegaConf

    overrides, verl_config = resolve(config, extra)
    checked = verl_checks(verl_config)
    return f"{command_line(overrides)}\n\n{checked}\n{OmegaConf.to_yaml(verl_config, resolve=True)}"


def command_line(overrides: Sequence[str]) -> str:
    """The shell command a veRL user would type."""
    return shlex.join(["python", "-m", "verl.trainer.main_ppo", *overrides])


def write_run_folder(config: Config) -> Path:
    """The Parquet files of train and validation seeds and the agent-loop file (returns the folder)."""
    from ragen_bench.integrations.verl.data import agent_loop_file, seed_rows, write_parquet

    out = run_folder(config)
    out.mkdir(parents=True, exist_ok=True)
    env_id = str(_get(config, "env"))
    chat = dict(_get(config, "chat") or {})  # the keys as given, as config.json records them
    # Dynamic sampling's refill rounds draw fresh seeds from the same file.
    train_count = _get(config, "steps") * _get(config, "rollout.groups") * (1 + _get(config, "filter.refill_rounds"))
    write_parquet(out / "train.parquet", seed_rows(env_id, "train", train_count, chat))
    write_parquet(out / "val.parquet", seed_rows(env_id, _get(config, "val.split"), _get(config, "val.limit"), chat))
    agent_loop_file(
        out / "agent_loops.yaml",
        chat=chat,
        max_new_tokens=_get(config, "rollout.max_new_tokens"),
        stop_strings=list(_get(config, "rollout.stop_strings")),
        overlong_buffer=_section(config, "overlong_buffer"),
    )
    return out


def launch(config: Config, extra: Sequence[str] = ()) -> int:
    """Write the run folder and run ``python -m verl.trainer.main_ppo`` with the overrides; its exit code."""
    overrides, verl_config = resolve(config, extra)
    verl_checks(verl_config)
    out = write_run_folder(config)
    command = command_line(overrides)
    (out / "command.sh").write_text(f"#!/usr/bin/env bash\n{command}\n", encoding="utf-8")
    print(command, flush=True)
    return subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides]).returncode
