"""Validating the eval config: every key, type and range checked before a run starts.

:func:`validate` checks every key, type and range of a composed config
(:mod:`ragen_bench.eval.compose`), that exactly one of ``env`` and ``suite`` is given, and
that the env ids and splits exist (:func:`ragen_bench.eval.targets.eval_targets`, which
returns them).  A mistake raises :class:`~ragen_bench.eval.schema.ConfigError` naming the
key and the bad value before anything is written, instead of failing half-way through a
run or running with a setting that means nothing (a positive format penalty, ``samples=2.5``).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragen_bench import values
from ragen_bench.agents.sampling import SAMPLING_SEED_LIMIT
from ragen_bench.eval.derive import game_chat_config, game_config, scripted_opponents
from ragen_bench.eval.schema import (
    GAME_DEFAULTS,
    GAME_KEYS,
    KEYS,
    LAUNCH_DEFAULTS,
    LAUNCH_KEYS,
    LAUNCHERS,
    MAX_GPUS_PER_WORKER,
    MAX_SAMPLES,
    MAX_WORKERS,
    ConfigError,
    data_files,
    parse_shard,
    require_int,
    require_type,
)
from ragen_bench.eval.targets import eval_targets

if TYPE_CHECKING:
    from ragen_bench.chat.config import ChatConfig

__all__ = ["ConfigError", "validate", "validate_chat", "validate_env_kwargs", "validate_launch", "validate_out"]


def validate(config: Mapping[str, Any]) -> None:
    """Check the whole eval config; its ``(env_id, split)`` targets are :func:`~ragen_bench.eval.targets.eval_targets`.

    Writes nothing and starts no agent, so a refused config leaves no trace.
    """
    unknown = [key for key in config if key not in KEYS + GAME_KEYS + LAUNCH_KEYS]
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}; eval keys: {', '.join(KEYS + GAME_KEYS + LAUNCH_KEYS)}")
    missing = [key for key in KEYS if key not in config]
    if missing:
        raise ConfigError(f"missing key {missing[0]!r}")
    require_int("samples", config["samples"], 1, MAX_SAMPLES)
    require_int("sampling_seed", config["sampling_seed"], 0, SAMPLING_SEED_LIMIT - 1)
    require_int("limit", config["limit"], 1, optional=True)
    require_int("lockstep_episodes", config["lockstep_episodes"], 1)
    validate_launch(config)
    validate_out(config["out"])
    require_type("progress", config["progress"], bool, "true or false")
    agent = config["agent"]
    require_type("agent", agent, Mapping, "an agent config")
    require_type("agent.name", agent.get("name"), str, "an agent name or 'module:factory'")
    validate_chat(config["chat"])
    validate_env_kwargs(config["env_kwargs"])
    validate_game_keys(config, eval_targets(config))


def validate_out(out: Any, error: type[ValueError] = ConfigError) -> None:
    """``out``: a directory path or null (the default folder); the rule ``eval`` and ``train`` share.

    An empty (or blank) ``out=`` would silently fall back to the default folder, so it is
    refused; ``error`` is the caller's exception type.
    """
    if out is not None and not (isinstance(out, str) and out.strip()):
        raise error(f"out must be a directory path or null, got {out!r}")


def validate_launch(config: Mapping[str, Any]) -> None:
    """``launcher``, ``workers``, ``ray.address`` (and ``shard``, which launcher=ray sets itself)."""
    launch = {**LAUNCH_DEFAULTS, **{key: config[key] for key in LAUNCH_KEYS if key in config}}
    launcher, workers, ray = launch["launcher"], launch["workers"], launch["ray"]
    if launcher not in LAUNCHERS:
        raise ConfigError(f"launcher must be one of {', '.join(LAUNCHERS)}, got {launcher!r}")
    require_int("workers", workers, 1, MAX_WORKERS)
    require_type("ray", ray, Mapping, "a mapping with address and gpus_per_worker")
    if unknown := sorted(set(ray) - set(LAUNCH_DEFAULTS["ray"])):
        raise ConfigError(f"unknown key ray.{unknown[0]}; ray keys: {', '.join(LAUNCH_DEFAULTS['ray'])}")
    address = ray.get("address")
    if address is not None and not (isinstance(address, str) and address.strip()):
        raise ConfigError(f"ray.address must be a cluster address (auto, host:port, ray://host:port) or null, got {address!r}")
    gpus = ray.get("gpus_per_worker")
    if gpus is not None and not ((values.is_int(gpus) or isinstance(gpus, float)) and 0 <= gpus <= MAX_GPUS_PER_WORKER):
        raise ConfigError(
            f"ray.gpus_per_worker must be a number of GPUs in 0..{MAX_GPUS_PER_WORKER} (a fraction shares one) "
            f"or null, got {gpus!r}"
        )
    shard = parse_shard(config["shard"])
    if launcher == "local":
        # Accepted, these would silently do nothing: one process plays the whole run.
        if workers != 1:
            raise ConfigError(f"workers={workers} needs launcher=ray (launcher=local plays in this one process)")
        if address is not None:
            raise ConfigError(f"ray.address={address} needs launcher=ray (launcher=local starts no cluster)")
        if gpus is not None:
            raise ConfigError(f"ray.gpus_per_worker={gpus} needs launcher=ray (launcher=local asks Ray for nothing)")
    elif shard != (0, 1):
        raise ConfigError(
            f"shard: launcher=ray splits the run into workers={workers} shards itself; give shard=0/1, not {config['shard']!r}"
        )


def validate_chat(chat: Any) -> ChatConfig:
    """``chat.*``: the :class:`~ragen_bench.chat.ChatConfig` it makes, checked by the rules train's chat obeys too.

    See :func:`ragen_bench.chat.config.check_chat`: exactly ChatConfig's fields, each of its
    declared type, a format penalty ``<= 0`` and a usable ChatConfig.
    """
    from ragen_bench.chat.config import check_chat

    return check_chat(chat, ConfigError)


def validate_env_kwargs(env_kwargs: Any) -> None:
    require_type("env_kwargs", env_kwargs, Mapping, "a mapping of env constructor arguments")
    for key, value in data_files(env_kwargs).items():
        if value is None:
            continue
        if not isinstance(value, str) or not Path(value).is_file():
            raise ConfigError(f"env_kwargs.{key} must name an existing file, got {value!r}")


def validate_game_keys(config: Mapping[str, Any], targets: list[tuple[str, str]]) -> None:
    """``opponent`` and ``game``: only for a multi-agent game, and well-formed there."""
    full = game_config(config)
    if full is None:
        for key in GAME_KEYS:
            if config.get(key, GAME_DEFAULTS[key]) != GAME_DEFAULTS[key]:
                raise ConfigError(f"{key}: only multi-agent games (e.g. RAGEN/TicTacToe-v0) take {key}=")
        return
    opponent = full["opponent"]
    if opponent is not None and not isinstance(opponent, str):
        require_type("opponent", opponent, Mapping, "a scripted player's name or an agent config")
        require_type("opponent.name", opponent.get("name"), str, "an agent name or 'module:factory'")
    require_type("game", full["game"], Mapping, "a mapping with max_retries and on_illegal")
    if unknown := sorted(set(full["game"]) - set(GAME_DEFAULTS["game"])):
        raise ConfigError(f"unknown key game.{unknown[0]}; game keys: {', '.join(GAME_DEFAULTS['game'])}")
    for key, player in (("agent", full["agent"]), ("opponent", opponent)):
        if isinstance(player, Mapping) and player.get("name") == "optimal":
            # A game has no single-agent optimum to follow: the reply would name no move and
            # every game would be a silent forfeit.  The strongest scripted players are opponents.
            raise ConfigError(
                f"{key}: optimal plays single-agent envs only; a game has no optimal policy to follow. "
                "Use agent=random or a model agent, and opponent= for the game's scripted players"
            )
    check_game_setup(targets[0][0], full)


def check_game_setup(env_id: str, config: Mapping[str, Any]) -> None:
    """Refuse a bad ``opponent``, ``game`` or ``env_kwargs`` for a game id before anything runs."""
    opponent = config["opponent"]
    if isinstance(opponent, str):
        known = scripted_opponents(env_id)
        if opponent not in known:
            raise ConfigError(f"opponent: {env_id} has no scripted player {opponent!r}; known: {', '.join(known)}")
    try:
        game_chat_config(config)
    except (TypeError, ValueError) as error:
        raise ConfigError(f"game: {error}") from None
    from ragen_bench.games.registry import make_multiagent

    try:
        make_multiagent(env_id, **config["env_kwargs"])
    except ImportError as error:
        raise ConfigError(f"env: {error}") from None
    except (TypeError, ValueError) as error:
        raise ConfigError(f"env_kwargs {dict(config['env_kwargs'])} for {env_id}: {error}") from None
