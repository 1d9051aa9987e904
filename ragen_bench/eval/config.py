"""The eval config: what it may hold, every check of it, and what it implies, made once by :func:`load`.

:func:`load` turns a composed config (:mod:`.compose`) into an :class:`EvalConfig`: every
key, type and range checked, exactly one of ``env`` and ``suite``, the env ids, splits and
suites known, a game's ``opponent`` and ``game`` well-formed, and everything a run reads
derived once (targets, ChatConfig, game config, shard, run directory, identity).  A mistake
raises :class:`ConfigError` naming the key and the bad value before anything is written,
instead of failing half-way through a run or running with a setting that means nothing (a
positive format penalty, ``samples=2.5``).

The pieces :func:`load` is made of stay public for the readers of a *recorded* config (a
manifest's, which lacks ``out`` and ``progress``): ``merge`` plans from :func:`eval_targets`
and :func:`parse_shard`, ``render`` rebuilds the chat with :func:`chat_config` and
:func:`game_chat_config`; ``train`` shares :func:`validate_out`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragen_bench import runfiles, values
from ragen_bench.agents.sampling import SAMPLING_SEED_LIMIT
from ragen_bench.eval.budget import BUDGET_KEY, BUDGET_MODES, budget_chats, declared_budgets, run_template_hash

if TYPE_CHECKING:
    # Types only: the functions import the chat layer and the games when they are called.
    from ragen_bench.chat.config import ChatConfig
    from ragen_bench.chat.game import GameChatConfig

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
# is drawn, where it is played, on how many threads a local model runs (one and two threads
# sample the same replies: tests/test_agent_hf.py).  They stay out of the run's identity (and
# so out of its manifest), and a run may be resumed with other values for them
# (ragen_bench.runfiles.identity).
FREE_KEYS = ("out", "progress", *LAUNCH_KEYS, "agent.num_threads", "opponent.num_threads")
LAUNCH_DEFAULTS: dict[str, Any] = {
    "launcher": "local", "workers": 1, "ray": {"address": None, "gpus_per_worker": None},
}
LAUNCHERS = ("local", "ray")
# One Ray actor per worker, each playing one shard; far beyond any cluster this targets.
MAX_WORKERS = 4096
# launcher=ray: GPUs one worker may ask for (its agent's model on one node's cards).
MAX_GPUS_PER_WORKER = 8
# The plan holds every episode up front; a huge sample count would stall before the
# first episode.  pass@k estimates need far fewer samples per seed than this.
MAX_SAMPLES = 10_000


class ConfigError(ValueError):
    """The eval config is unusable as given; the message names the key and value."""


@dataclass(frozen=True)
class EvalConfig:
    """A checked eval config and what it implies; made only by :func:`load`, so every field holds."""

    # The composed config as given (not copied): what a Ray worker is sent to play its shard of.
    mapping: Mapping[str, Any]
    # The (env_id, split) panels evaluated, in order: one env's split, or a suite's eval pairs, each once.
    targets: tuple[tuple[str, str], ...]
    # The chat settings (chat.*), checked by the rules train's chat obeys too: what an id without a budget plays.
    chat: ChatConfig
    # The chat settings each single-agent target id plays: ``chat`` with the id's resolved budget on top.
    chats: Mapping[str, ChatConfig]
    # The budget resolved (env id -> the chat settings it changes); empty when every id plays ``chat``.
    budget: Mapping[str, Mapping[str, int]]
    # A multi-agent game's settings (game.* over chat); None when a single-agent env is evaluated.
    game: GameChatConfig | None
    # A game's opponent as records and tables name it: a scripted player's name or agent:<name>;
    # None for a single-agent env.
    opponent: str | None
    # The agent config of an opponent that plays through the chat layer like the agent; None when
    # a scripted player (or nobody) is the opponent.
    opponent_agent: Mapping[str, Any] | None
    # The agent config: its name (registered, or "module:factory") and the factory's other settings.
    agent: Mapping[str, Any]
    # Episodes per panel seed (sample index 0..samples-1).
    samples: int
    # The first `limit` seeds of each panel; None: all of them.
    limit: int | None
    # A suite's episode counts, (env_id, split) -> the first seeds its protocol plays there (limit cuts further).
    counts: Mapping[tuple[str, str], int]
    # (index, count): the seeds whose number is index modulo count.
    shard: tuple[int, int]
    # Episodes driven together in lock-step, one batched agent call per turn.
    lockstep_episodes: int
    # Keyword arguments for every env of the run (data files among them).
    env_kwargs: Mapping[str, Any]
    # The run directory: out=, else default_out(mapping).
    out: Path
    # Whether a progress bar is drawn (on a terminal only).
    progress: bool
    # Where the run is played: one of LAUNCHERS.
    launcher: str
    # launcher=ray: the shards of the run, one Ray worker each.
    workers: int
    # launcher=ray: the cluster to join (auto, host:port); None starts a local one.
    ray_address: str | None
    # launcher=ray: the GPUs each worker asks for; None lets the launcher decide (worker_gpus).
    gpus_per_worker: float | None
    # What the run is identified by: the config without the free keys (and, for a single-agent env,
    # without the game keys).  The manifest records it with the agent's secrets redacted.
    identity: dict[str, Any]
    # The hash of the chat template and settings (a game's extended with its own settings; a run whose ids
    # play different settings: the hash of every id's, see run_template_hash).
    template_hash: str

    def chat_for(self, env_id: str) -> ChatConfig:
        """The chat settings ``env_id``'s episodes are played with."""
        return self.chats.get(env_id, self.chat)


def load(config: Mapping[str, Any]) -> EvalConfig:
    """The :class:`EvalConfig` of a composed config: every check made and everything derived, once.

    Checks run in a fixed order (keys, numbers, launch, ``out``, ``progress``, agent, chat,
    ``env_kwargs``, targets, game), so a config with several mistakes is refused for its
    first.  Writes nothing and starts no agent, so a refused config leaves no trace.
    """
    _check_keys_and_numbers(config)
    launch, shard = validate_launch(config)
    validate_out(config["out"])
    require_type("progress", config["progress"], bool, "true or false")
    agent = config["agent"]
    require_type("agent", agent, Mapping, "an agent config")
    require_type("agent.name", agent.get("name"), str, "an agent name or 'module:factory'")
    chat = chat_config(config["chat"])
    validate_env_kwargs(config["env_kwargs"])
    targets = tuple(eval_targets(config))
    budget = resolve_budget(config.get(BUDGET_KEY), targets, config["chat"])
    chats = budget_chats(chat, budget)
    from ragen_bench.chat.images import refuse_undrawn

    refuse_undrawn({env_id: chats.get(env_id, chat) for env_id, _ in targets}, config["env_kwargs"], ConfigError)
    full = game_config(config)
    if full is None:
        refuse_game_keys(config)
        game, opponent = None, None
    else:
        game, opponent = check_game(full, targets[0][0], chat), full["opponent"]
    # The identity records the budget resolved, and nothing for an empty one (as runs before budgets).
    recorded = {key: value for key, value in (full or config).items() if key != BUDGET_KEY}
    from ragen_bench.chat.config import recorded_chat
    from ragen_bench.suites import episode_counts

    recorded["chat"] = recorded_chat(recorded["chat"])  # action_format=text is recorded as runs before it were
    if budget:
        recorded[BUDGET_KEY] = budget
    return EvalConfig(
        mapping=config, targets=targets, chat=chat, chats=chats, budget=budget, game=game,
        opponent=None if game is None else opponent_label(targets[0][0], opponent),
        opponent_agent=opponent if isinstance(opponent, Mapping) else None,
        agent=agent, samples=config["samples"], limit=config["limit"], shard=shard,
        counts=episode_counts(config.get("suite"), targets),
        lockstep_episodes=config["lockstep_episodes"], env_kwargs=config["env_kwargs"],
        out=Path(config["out"] or default_out(config)), progress=config["progress"],
        launcher=launch["launcher"], workers=launch["workers"],
        ray_address=launch["ray"].get("address"), gpus_per_worker=launch["ray"].get("gpus_per_worker"),
        identity=runfiles.identity(recorded, FREE_KEYS + (GAME_KEYS if full is None else ())),
        template_hash=game.template_hash() if game is not None else run_template_hash(chat, chats, targets),
    )


def _check_keys_and_numbers(config: Mapping[str, Any]) -> None:
    """No unknown key, no missing one, and the counts and seeds in range."""
    known = KEYS + (BUDGET_KEY,) + GAME_KEYS + LAUNCH_KEYS
    unknown = [key for key in config if key not in known]
    if unknown:
        raise ConfigError(f"unknown key {unknown[0]!r}; eval keys: {', '.join(known)}")
    missing = [key for key in KEYS if key not in config]
    if missing:
        raise ConfigError(f"missing key {missing[0]!r}")
    require_int("samples", config["samples"], 1, MAX_SAMPLES)
    require_int("sampling_seed", config["sampling_seed"], 0, SAMPLING_SEED_LIMIT - 1)
    require_int("limit", config["limit"], 1, optional=True)
    require_int("lockstep_episodes", config["lockstep_episodes"], 1)


# -- the sections ---------------------------------------------------------------------


def validate_out(out: Any, error: type[ValueError] = ConfigError) -> None:
    """``out``: a directory path or null (the default folder); the rule ``eval`` and ``train`` share.

    An empty (or blank) ``out=`` would silently fall back to the default folder, so it is
    refused; ``error`` is the caller's exception type.
    """
    if out is not None and not (isinstance(out, str) and out.strip()):
        raise error(f"out must be a directory path or null, got {out!r}")


def validate_launch(config: Mapping[str, Any]) -> tuple[dict[str, Any], tuple[int, int]]:
    """``launcher``, ``workers`` and ``ray`` (defaults filled in), and the parsed ``shard`` (which launcher=ray
    sets itself), each checked and checked against the others."""
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
    return launch, shard


def chat_config(chat: Any) -> ChatConfig:
    """``chat.*``: the :class:`~ragen_bench.chat.ChatConfig` it makes, checked by the rules train's chat obeys too.

    See :func:`ragen_bench.chat.config.check_chat`: exactly ChatConfig's fields, each of its
    declared type, a format penalty ``<= 0`` and a usable ChatConfig.
    """
    from ragen_bench.chat.config import check_chat

    return check_chat(chat, ConfigError)


def resolve_budget(
    budget: Any, targets: Sequence[tuple[str, str]], chat: Mapping[str, Any], given: Collection[str] | None = None,
) -> dict[str, dict[str, int]]:
    """``budget`` made concrete for ``targets``: env id -> the chat settings its budget changes.

    ``env``: each single-agent id's declared budget (:func:`~ragen_bench.eval.budget.declared_budgets`,
    less the ``given`` keys).  ``none`` or a missing key (``None``): no budget.  A mapping (a
    recorded run's) is checked: ids of this run, budget fields, integers.
    """
    from ragen_bench import registry

    if budget is None or budget == "none":
        return {}
    ids = list(dict.fromkeys(env_id for env_id, _ in targets if env_id in registry.ENV_IDS))
    if budget == "env":
        return declared_budgets(ids, chat, given)
    require_type(BUDGET_KEY, budget, Mapping, f"one of {', '.join(BUDGET_MODES)} or a mapping of env id to chat settings")
    fields = [name for name in registry.BUDGET_FIELDS if name != "max_new_tokens"]
    for env_id, settings in budget.items():
        if env_id not in ids:
            raise ConfigError(f"budget.{env_id}: not a single-agent env of this run ({', '.join(ids) or 'none'})")
        require_type(f"budget.{env_id}", settings, Mapping, "a mapping of chat settings")
        for key, value in settings.items():
            if key not in fields:
                raise ConfigError(f"budget.{env_id}.{key}: not a budget setting; budget settings: {', '.join(fields)}")
            require_int(f"budget.{env_id}.{key}", value, 1)
    return {env_id: dict(settings) for env_id, settings in budget.items()}


def validate_env_kwargs(env_kwargs: Any) -> None:
    """``env_kwargs``: a mapping whose data-file arguments (:func:`data_files`) name existing files."""
    require_type("env_kwargs", env_kwargs, Mapping, "a mapping of env constructor arguments")
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
        require_type("env", env_id, str, "an env id")
        if env_id not in ENV_IDS and env_id not in GAME_IDS:
            raise ConfigError(f"env: unknown env id {env_id!r}; `ragen-bench envs list` shows the ids")
        require_type("split", split, str, "a split name")
        if split not in panels.available(env_id):
            raise ConfigError(f"split: {env_id} has no {split!r} panel; splits: {panels.available(env_id)}")
        return [(env_id, split)]
    require_type("suite", suite_name, str, "a suite name")
    require_type("split", split, str, "a split name", optional=True)
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


def default_out(config: Mapping[str, Any]) -> Path:
    """``runs/<agent>-<env or suite>-<split>``: deterministic, so re-running resumes."""
    parts = [config["agent"]["name"], config.get("env") or config.get("suite"), config.get("split") or "all"]
    return Path("runs") / re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(str(part) for part in parts))


# -- multi-agent games ----------------------------------------------------------------


def game_config(config: Mapping[str, Any]) -> dict[str, Any] | None:
    """``config`` with the game keys filled in when it evaluates a multi-agent game, else ``None``."""
    from ragen_bench.games.registry import GAME_IDS

    if config.get("env") not in GAME_IDS:
        return None
    full = {**GAME_DEFAULTS, **config}
    if full["game"] is None:
        full["game"] = GAME_DEFAULTS["game"]
    return full


def refuse_game_keys(config: Mapping[str, Any]) -> None:
    """A single-agent config sets no game key: accepted, it would do nothing."""
    for key in GAME_KEYS:
        if config.get(key, GAME_DEFAULTS[key]) != GAME_DEFAULTS[key]:
            raise ConfigError(f"{key}: only multi-agent games (e.g. RAGEN/TicTacToe-v0) take {key}=")


def check_game(full: Mapping[str, Any], env_id: str, chat: ChatConfig) -> GameChatConfig:
    """The :class:`~ragen_bench.chat.game.GameChatConfig` of a game's config (:func:`game_config`), once
    ``opponent``, ``game`` and ``env_kwargs`` are known to be good for ``env_id``."""
    opponent = full["opponent"]
    if opponent is not None and not isinstance(opponent, str):
        require_type("opponent", opponent, Mapping, "a scripted player's name or an agent config")
        require_type("opponent.name", opponent.get("name"), str, "an agent name or 'module:factory'")
    require_type("game", full["game"], Mapping, "a mapping with max_retries and on_illegal")
    if unknown := sorted(set(full["game"]) - set(GAME_DEFAULTS["game"])):
        raise ConfigError(f"unknown key game.{unknown[0]}; game keys: {', '.join(GAME_DEFAULTS['game'])}")
    for key, player in (("agent", full["agent"]), ("opponent", opponent)):
        if isinstance(player, Mapping) and player.get("name") in ("optimal", "baseline"):
            # A game has no single-agent optimum (nor scripted baseline) to follow: the reply would name no
            # move and every game would be a silent forfeit.  The strongest scripted players are opponents.
            raise ConfigError(
                f"{key}: {player['name']} plays single-agent envs only; a game has no policy of its kind to follow. "
                "Use agent=random or a model agent, and opponent= for the game's scripted players"
            )
    if isinstance(opponent, str) and opponent not in (known := scripted_opponents(env_id)):
        raise ConfigError(f"opponent: {env_id} has no scripted player {opponent!r}; known: {', '.join(known)}")
    from ragen_bench.games.registry import game_entry, make_multiagent

    if isinstance(opponent, Mapping) and (seats := game_entry(env_id).seats) > 2:
        raise ConfigError(f"opponent: {env_id} has {seats} seats; an agent opponent plays two-player games only (a "
                          f"record keeps one opponent transcript); use {', '.join(scripted_opponents(env_id))}")
    try:
        game = game_chat_config(chat, full["game"])
    except (TypeError, ValueError) as error:
        raise ConfigError(str(error) if chat.tools else f"game: {error}") from None
    try:
        make_multiagent(env_id, **full["env_kwargs"])
    except ImportError as error:
        raise ConfigError(f"env: {error}") from None
    except (TypeError, ValueError) as error:
        raise ConfigError(f"env_kwargs {dict(full['env_kwargs'])} for {env_id}: {error}") from None
    return game


def game_chat_config(chat: ChatConfig, game: Mapping[str, Any]) -> GameChatConfig:
    """The :class:`~ragen_bench.chat.game.GameChatConfig` of a checked ``chat`` and a ``game.*`` section."""
    from ragen_bench.chat.game import GameChatConfig

    return GameChatConfig(chat=chat, **game)


def opponent_label(env_id: str, opponent: Any) -> str:
    """How records and tables name the opponent: the scripted name, or ``agent:<name>``."""
    from ragen_bench.games.registry import game_entry

    if opponent is None:
        return game_entry(env_id).default_opponent
    return opponent if isinstance(opponent, str) else f"agent:{opponent['name']}"


def scripted_opponents(env_id: str) -> dict[str, Callable[[], Any]]:
    """The scripted players of ``env_id``'s game family, by name."""
    from ragen_bench.games.opponents import OPPONENTS
    from ragen_bench.games.registry import game_entry

    return OPPONENTS[game_entry(env_id).family]


# -- values ---------------------------------------------------------------------------


def parse_shard(text: Any) -> tuple[int, int]:
    """``"i/n"`` -> ``(i, n)`` with ``0 <= i < n``."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text) if isinstance(text, str) else None
    if not match:
        raise ConfigError(f"shard must look like 'i/n' (e.g. 0/4), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if not 0 <= index < count:
        raise ConfigError(f"shard index must be in 0..{count - 1}, got {text!r}")
    return index, count


def require_int(key: str, value: Any, minimum: int, maximum: int | None = None, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not values.is_int(value) or value < minimum or (maximum is not None and value > maximum):
        allowed = f"an integer >= {minimum}" if maximum is None else f"an integer in {minimum}..{maximum}"
        raise ConfigError(f"{key} must be {allowed}{' or null' if optional else ''}, got {value!r}")


def require_type(key: str, value: Any, kind: type, label: str, *, optional: bool = False) -> None:
    if not (isinstance(value, kind) or (optional and value is None)):
        raise ConfigError(f"{key} must be {label}{' or null' if optional else ''}, got {value!r}")


def data_files(env_kwargs: Mapping[str, Any]) -> dict[str, str]:
    """The env arguments that name a data file (``data_path`` and other ``*_path`` keys)."""
    return {key: value for key, value in env_kwargs.items() if key == "path" or key.endswith("_path")}
