"""From the recipe's overrides to a veRL job: veRL's composed config, its checks, the run folder, the launch.

:func:`dry_run` composes :func:`~.recipe.verl_overrides` with veRL's own ``ppo_trainer`` config,
checks RAGEN's batch-size invariants and veRL's own config checks, and returns the resolved config
as YAML; :func:`launch` writes the run folder (train/val Parquet files, the agent-loop file,
``command.sh``) and runs ``python -m verl.trainer.main_ppo <overrides>`` exactly as a veRL user
would.  Every function takes a checked :class:`~ragen_bench.train.config.TrainConfig`, as
:mod:`.recipe` does.
"""

from __future__ import annotations

import dataclasses
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragen_bench.integrations.verl.recipe import RecipeError, fixed_kept_groups, run_folder, verl_overrides
from ragen_bench.train.config import TrainConfig

if TYPE_CHECKING:
    from omegaconf import DictConfig


def compose_verl(overrides: Sequence[str]) -> DictConfig:
    """veRL's own ``ppo_trainer`` config with ``overrides`` (an OmegaConf DictConfig)."""
    from hydra import compose, initialize_config_module

    with initialize_config_module("verl.trainer.config", version_base=None):
        return compose("ppo_trainer", overrides=list(overrides))


def check_invariants(config: TrainConfig, verl_config: Any) -> None:
    """RAGEN's batch-size rules, in the train config's words (one :class:`RecipeError` each)."""
    groups, group_size = config.rollout.groups, config.rollout.group_size
    mini, micro = config.actor.mini_batch, config.actor.micro_batch
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


def resolve(config: TrainConfig, extra: Sequence[str] = ()) -> tuple[list[str], Any]:
    """The overrides and veRL's config they compose to, after RAGEN's invariants are checked."""
    overrides = verl_overrides(config, extra)
    try:
        verl_config = compose_verl(overrides)
    except Exception as error:  # Hydra's errors name the override it could not apply
        raise RecipeError(f"backend=verl: veRL's config refused an override: {str(error).splitlines()[0]}") from error
    check_invariants(config, verl_config)
    return overrides, verl_config


def dry_run(config: TrainConfig, extra: Sequence[str] = ()) -> str:
    """The command and veRL's resolved config for ``config``, after every check (nothing is written or run)."""
    from omegaconf import OmegaConf

    overrides, verl_config = resolve(config, extra)
    checked = verl_checks(verl_config)
    return f"{command_line(overrides)}\n\n{checked}\n{OmegaConf.to_yaml(verl_config, resolve=True)}"


def command_line(overrides: Sequence[str]) -> str:
    """The shell command a veRL user would type."""
    return shlex.join(["python", "-m", "verl.trainer.main_ppo", *overrides])


def write_run_folder(config: TrainConfig) -> Path:
    """The Parquet files of train and validation seeds and the agent-loop file (returns the folder)."""
    from ragen_bench.integrations.verl.data import agent_loop_file, seed_rows, write_parquet

    out = run_folder(config)
    out.mkdir(parents=True, exist_ok=True)
    chat = dict(config.chat)  # the keys as given, as config.json records them
    # Dynamic sampling's refill rounds draw fresh seeds from the same file.
    train_count = config.steps * config.rollout.groups * (1 + config.filter.refill_rounds)
    write_parquet(out / "train.parquet", seed_rows(config.env, "train", train_count, chat))
    write_parquet(out / "val.parquet", seed_rows(config.env, config.val.split, config.val.limit, chat))
    agent_loop_file(
        out / "agent_loops.yaml",
        chat=chat,
        max_new_tokens=config.rollout.max_new_tokens,
        stop_strings=list(config.rollout.stop_strings),
        overlong_buffer=dataclasses.asdict(config.overlong_buffer),
    )
    return out


def launch(config: TrainConfig, extra: Sequence[str] = ()) -> int:
    """Write the run folder and run ``python -m verl.trainer.main_ppo`` with the overrides; its exit code."""
    overrides, verl_config = resolve(config, extra)
    verl_checks(verl_config)
    out = write_run_folder(config)
    command = command_line(overrides)
    (out / "command.sh").write_text(f"#!/usr/bin/env bash\n{command}\n", encoding="utf-8")
    print(command, flush=True)
    return subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", *overrides]).returncode
