"""The eval config: composing it with Hydra and checking all of it before a run starts.

``ragen-bench eval key=value ...`` composes ``configs/eval.yaml`` (read as a package
resource, so an installed wheel works like a checkout) into a plain dict, and
:func:`validate` checks every key, type and range, that exactly one of ``env`` and
``suite`` is given, and that the env ids and splits exist.  A mistake raises
:class:`ConfigError` naming the key and the bad value before anything is written,
instead of failing half-way through a run or running with a setting that means
nothing (a positive format penalty, ``samples=2.5``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ragen_bench import runfiles, values
from ragen_bench.agents.sampling import SAMPLING_SEED_LIMIT

# Top-level keys of configs/eval.yaml; anything else is a typo or a key nothing reads.
KEYS = (
    "env", "suite", "split", "samples", "sampling_seed", "limit", "shard", "lockstep_episodes",
    "env_kwargs", "out", "progress", "chat", "agent",
)
# Keys only multi-agent games read (ragen_bench.eval.games); a config may lack them (runs
# recorded before they existed), and a single-agent run leaves them out of its identity.
GAME_KEYS = ("opponent", "game")
GAME_DEFAULTS: dict[str, Any] = {"opponent": None, "game": {"max_retries": 2, "on_illegal": "forfeit"}}
# Keys saying where a run is played (ragen_bench.integrations.ray), not what it computes:
# free keys (below), so any launcher resumes any run.  A config may lack them (manifests
# never record them).
LAUNCH_KEYS = ("launcher", "workers", "ray")
# Keys that do not change what a run computes: where it is written, whether a progress bar
# is drawn, where it is played.  They stay out of the run's identity (and so out of its
# manifest), and a run may be resumed with other values for them (ragen_bench.runfiles.identity).
FREE_KEYS = ("out", "progress", *LAUNCH_KEYS)
LAUNCH_DEFAULTS: dict[str, Any] = {"launcher": "local", "workers": 1, "ray": {"address": None}}
LAUNCHERS = ("local", "ray")
# One Ray actor per worker, each playing one shard; far beyond any cluster this targets.
MAX_WORKERS = 4096


# The plan holds every episode up front; a huge sample count would stall before the
# first episode.  pass@k estimates need far fewer samples per seed than this.
MAX_SAMPLES = 10_000


class ConfigError(ValueError):
    """The eval config is unusable as given; the message names the key and value."""


def compose_config(name: str, overrides: Sequence[str]) -> dict[str, Any]:
    """Compose ``configs/<name>.yaml`` with command-line overrides into a plain dict.

    The compose API (not ``@hydra.main``) leaves the working directory alone and
    creates no output folders; missing mandatory values (``???``) raise here.
    """
    from hydra import compose, initialize_config_module
    from omegaconf import OmegaConf

    from ragen_bench.data import CONFIG_MODULE

    for override in overrides:
        # Hydra's own settings (hydra.run.dir=..., hydra/job_logging=...) configure a
        # Hydra app, which this is not: accepted, they would silently do nothing.
        if re.match(r"[+~]*hydra[./=]", override):
            raise ConfigError(f"{override}: hydra settings are not used here (the working directory never changes)")
    with initialize_config_module(config_module=CONFIG_MODULE, version_base=None):
        config = compose(config_name=name, overrides=list(overrides))
    return OmegaConf.to_container(config, resolve=True, throw_on_missing=True)  # type: ignore[return-value]


def parse_shard(text: Any) -> tuple[int, int]:
    """``"i/n"`` -> ``(i, n)`` with ``0 <= i < n``."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text) if isinstance(text, str) else None
    if not match:
        raise ConfigError(f"shard must look like 'i/n' (e.g. 0/4), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if not 0 <= index < count:
        raise ConfigError(f"shard index must be in 0..{count - 1}, got {text!r}")
    return index, count


def _require_int(key: str, value: Any, minimum: int, maximum: int | None = None, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not values.is_int(value) or value < minimum or (maximum is not None and value > maximum):
        allowed = f"an integer >= {minimum}" if maximum is None else f"an integer in {minimum}..{maximum}"
        raise ConfigError(f"{key} must be {allowed}{' or null' if optional else ''}, got {value!r}")


def _require_type(key: str, value: Any, kind: type, label: str, *, optional: bool = False) -> None:
    if not (isinstance(value, kind) or (optional and value is None)):
        raise ConfigError(f"{key} must be {label}{' or null' if optional else ''}, got {value!r}")


def validate_chat(chat: Any) -> Any:
    """``chat.*``: the :class:`~ragen_bench.chat.ChatConfig` it makes, checked by the rules train's chat obeys too.

    See :func:`ragen_bench.chat.config.check_chat`: exactly ChatConfig's fields, each of its
    declared type, a format penalty ``<= 0`` and a usable ChatConfig.
    """
    from ragen_bench.chat.config import check_chat

    return check_chat(chat, ConfigError)


def chat_config(config: Mapping[str, Any]) -> Any:
    """The :class:`~ragen_bench.chat.ChatConfig` of an eval config (a ConfigError if its ``chat`` is bad)."""
    return validate_chat(config["chat"])


def data_files(env_kwargs: Mapping[str, Any]) -> dict[str, str]:
    """The env arguments that name a data file (``data_path`` and other ``*_path`` keys)."""
    return {key: value for key, value in env_kwargs.items() if key == "path" or key.endswith("_path")}


def validate_env_kwargs(env_kwargs: Any) -> None:
    _require_type("env_kwargs", env_kwargs, Mapping, "a mapping of env constructor arguments")
    for key, value in data_files(env_kwargs).items():
        if value is None:
            continue
        if not isinstance(value, str) or not Path(value).is_file():
            raise ConfigError(f"env_kwargs.{key} must name an existing file, got {value!r}")


def eval_targets(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The ``(env_id, split)`` pairs to evaluate: one env, or a suite's eval pairs.

    With a suite, a given ``split`` keeps only that split's pairs.  Unknown ids,
    suites and splits raise :class:`ConfigError`.
    """
    from ragen_bench import panels, suites
    from ragen_bench.games.registry import GAME_IDS
    from ragen_bench.registry import ENV_IDS

    env_id, suite_name, split = config.get("env"), config.get("suite"), config.get("split")
    if (env_id is None) == (suite_name is None):
        raise ConfigError("give exactly one of env=<id> or suite=<name>")
    if env_id is not None:
        _require_type("env", env_id, str, "an env id")
        if env_id not in ENV_IDS and env_id not in GAME_IDS:
            raise ConfigError(f"env: unknown env id {env_id!r}; `ragen-bench envs list` shows the ids")
        _require_type("split", split, str, "a split name")
        if split not in panels.available(env_id):
            raise ConfigError(f"split: {env_id} has no {split!r} panel; splits: {panels.available(env_id)}")
        return [(env_id, split)]
    _require_type("suite", suite_name, str, "a suite name")
    _require_type("split", split, str, "a split name", optional=True)
    try:
        suite = suites.get(suite_name)
    except suites.SuiteError as error:
        raise ConfigError(f"suite: {error}") from None
    # A panel evaluated by several tracks is run once.
    pairs = list(dict.fromkeys((p.env_id, p.split) for track in suite.tracks for p in track.evaluate))
    if split is not None:
        pairs = [pair for pair in pairs if pair[1] == split]
        if not pairs:
            raise ConfigError(f"split: suite {suite_name!r} has no eval pairs with split {split!r}")
    return pairs


def validate(config: Mapping[str, Any]) -> list[tuple[str, str]]:
    """Check the whole eval config; returns its ``(env_id, split)`` targets.

    Writes nothing and starts no agent, so a refused config leaves no trace.
    """
    unknown = [key for key in config if key not in KEYS + GAME_KEYS + LAUNCH_KEYS]
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}; eval keys: {', '.join(KEYS + GAME_KEYS + LAUNCH_KEYS)}")
    missing = [key for key in KEYS if key not in config]
    if missing:
        raise ConfigError(f"missing key {missing[0]!r}")
    _require_int("samples", config["samples"], 1, MAX_SAMPLES)
    _require_int("sampling_seed", config["sampling_seed"], 0, SAMPLING_SEED_LIMIT - 1)
    _require_int("limit", config["limit"], 1, optional=True)
    _require_int("lockstep_episodes", config["lockstep_episodes"], 1)
    validate_launch(config)
    validate_out(config["out"])
    _require_type("progress", config["progress"], bool, "true or false")
    agent = config["agent"]
    _require_type("agent", agent, Mapping, "an agent config")
    _require_type("agent.name", agent.get("name"), str, "an agent name or 'module:factory'")
    validate_chat(config["chat"])
    validate_env_kwargs(config["env_kwargs"])
    targets = eval_targets(config)
    validate_game_keys(config, targets)
    return targets


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
    _require_int("workers", workers, 1, MAX_WORKERS)
    _require_type("ray", ray, Mapping, "a mapping with address")
    if unknown := sorted(set(ray) - set(LAUNCH_DEFAULTS["ray"])):
        raise ConfigError(f"unknown key ray.{unknown[0]}; ray keys: {', '.join(LAUNCH_DEFAULTS['ray'])}")
    address = ray.get("address")
    if address is not None and not (isinstance(address, str) and address.strip()):
        raise ConfigError(f"ray.address must be a cluster address (auto, host:port, ray://host:port) or null, got {address!r}")
    shard = parse_shard(config["shard"])
    if launcher == "local":
        # Accepted, these would silently do nothing: one process plays the whole run.
        if workers != 1:
            raise ConfigError(f"workers={workers} needs launcher=ray (launcher=local plays in this one process)")
        if address is not None:
            raise ConfigError(f"ray.address={address} needs launcher=ray (launcher=local starts no cluster)")
    elif shard != (0, 1):
        raise ConfigError(
            f"shard: launcher=ray splits the run into workers={workers} shards itself; give shard=0/1, not {config['shard']!r}"
        )


def game_config(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """``config`` with the game keys filled in when it evaluates a multi-agent game, else ``None``."""
    from ragen_bench.games.registry import GAME_IDS

    if config.get("env") not in GAME_IDS:
        return None
    full = {**GAME_DEFAULTS, **config}
    if full["game"] is None:
        full["game"] = GAME_DEFAULTS["game"]
    return full


def identity(config: Mapping[str, Any]) -> dict[str, Any]:
    """The config a run is identified by: never the free keys; a single-agent run's leaves the game keys out."""
    full = game_config(config)
    return runfiles.identity(full or config, FREE_KEYS + (GAME_KEYS if full is None else ()))


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
        _require_type("opponent", opponent, Mapping, "a scripted player's name or an agent config")
        _require_type("opponent.name", opponent.get("name"), str, "an agent name or 'module:factory'")
    _require_type("game", full["game"], Mapping, "a mapping with max_retries and on_illegal")
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


def game_chat_config(config: Mapping[str, Any]) -> Any:
    """The :class:`~ragen_bench.chat.multiagent.GameChatConfig` of a (validated) eval config."""
    from ragen_bench.chat.multiagent import GameChatConfig

    return GameChatConfig(chat=chat_config(config), **config["game"])


def opponent_label(env_id: str, opponent: Any) -> str:
    """How records and tables name the opponent: the scripted name, or ``agent:<name>``."""
    from ragen_bench.games.registry import game_entry

    if opponent is None:
        return game_entry(env_id).default_opponent
    return opponent if isinstance(opponent, str) else f"agent:{opponent['name']}"


def scripted_opponents(env_id: str) -> dict[str, Callable[[], Any]]:
    from ragen_bench.games.opponents import OPPONENTS
    from ragen_bench.games.registry import game_entry

    return OPPONENTS[game_entry(env_id).family]


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
