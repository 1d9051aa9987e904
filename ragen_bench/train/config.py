"""The trainer's configuration: Hydra presets in ``configs/train/`` -> one checked :class:`TrainConfig`.

``ragen-bench train preset=NAME key=value ...`` composes ``configs/train/NAME.yaml`` (each preset
is ``base.yaml`` plus a few changed keys) with the overrides, then :func:`from_mapping` turns
the result into frozen dataclasses, checking every value before anything is written: a wrong
type, a value out of range or an unknown key is one :class:`TrainConfigError` naming the key.
Every value is checked whatever the other settings, and an override that the run would not
read (``filter.strategy`` under ``filter.mode=std``) is refused too (:func:`from_preset`).
The rules are eval's: each value's type by :func:`ragen_bench.values.conform`, the ``chat.*``
settings by :func:`ragen_bench.chat.config.check_chat` (:attr:`TrainConfig.chat_config`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, TypeVar, get_type_hints

from ragen_bench import values
from ragen_bench.agents.local_models import AUTO_THREADS
# The algorithm choices (estimators, loss aggregations, algos, presets) and the filter's rules come
# from torch-free modules, so that checking a config and `--dry-run` load no torch.
from ragen_bench.starpo.algorithms import (ALGORITHMS, DEFAULT_PRESET, ESTIMATORS, GRPO_MODES, LOSS_AGGREGATIONS,
                                           PRESETS, choices)
from ragen_bench.starpo.filter_spec import groups_to_keep
from ragen_bench.train.filter_config import FilterConfig, check_filter, filter_in_words, unread_filter_keys
from ragen_bench.train.sections import (DTYPES, FILTER_LOSS_SCALINGS, ActorConfig, AdvantageConfig, CheckpointConfig,
                                        CollapseDetectionConfig, CriticConfig, KLConfig, LogConfig, LoraConfig,
                                        OverlongBufferConfig, RolloutConfig, SFTConfig, TestConfig, ValConfig)
from ragen_bench.values import documented

if TYPE_CHECKING:
    from ragen_bench.chat.config import ChatConfig
    from ragen_bench.chat.game import GameChatConfig

_Section = TypeVar("_Section")

BACKENDS = ("local", "verl")
SELF_PLAY = "self"  # opponent=self: the policy plays every seat of a game (train/games.py)


class TrainConfigError(ValueError):
    """A train config key with a bad value (the message names the key)."""


class CheckpointError(ValueError):
    """A run folder that cannot be (re)used with this config (the message says why)."""


# Keys that do not change what any step of a run computes (how many steps it runs, where it
# is written, how many CPU threads, what it logs; the collapse diagnostics only read the
# policy, with their own seeded draw): a run may be resumed with other values for them;
# every other key must match its config.json (ragen_bench.runfiles.identity).
FREE_KEYS = ("steps", "out", "threads", "sampling_threads", "log", "collapse_detection")


@dataclass(frozen=True)
class TrainConfig:
    """Every key of ``ragen-bench train``; the sections' keys are in :mod:`ragen_bench.train.sections`."""

    preset: str = documented("base", help=f"the preset this config started from: {choices(PRESETS)} "
                             "(configs/train/NAME.yaml)")
    algo: str = documented("starpo", help="starpo: reinforcement learning (the PPO / GRPO losses of advantage.*, "
                           "actor.*) | sft: a supervised warm start (sft.*)")
    backend: str = documented("local", help="local: this package's trainer | verl: veRL on Ray (its own venv, GPUs)")
    env: str = documented("RAGEN/Bandit-v0", help="the env id trained on: a single-agent env or a two-player game "
                          "(`ragen-bench envs list`)")
    opponent: str | None = documented(None, help="a game's opponent: one of its scripted players (random, minimax, "
                                      "...) or self (self-play: the policy in both seats); null for single-agent envs")
    game: dict[str, Any] = documented(factory=lambda: {"max_retries": 2, "on_illegal": "forfeit"},
                                      help="a game's illegal-move rules, as eval's game.* (max_retries, on_illegal)")
    model: str = documented("smollm2-135m", help="a checkpoint directory, a LoRA adapter directory, or an alias "
                            "(smollm2-135m, tiny)")
    dtype: str = documented("float32", help=f"the training precision: {', '.join(DTYPES)}")
    seed: int = documented(0, help="data order (which train seeds each step), sampling and initialisation; "
                           "in 0..2**32-1")
    steps: int = documented(20, help="training steps (one rollout batch and its updates each)")
    threads: int | None = documented(None, help="torch threads; null: torch's default")
    sampling_threads: int | str | None = documented(
        "auto", help="torch threads while sampling rollouts: auto, the cores other processes leave free when the "
        "run starts (1 on a busy 2-core machine, where 2 threads collapse; 2 on a quiet one); null: as threads")
    out: str | None = documented(None, help="the run folder; null: runs/train/<preset>-<env>")
    lora: LoraConfig = documented(factory=LoraConfig,
                                  help="a peft LoRA adapter instead of full fine-tuning (lora.rank > 0)")
    rollout: RolloutConfig = documented(factory=RolloutConfig, help="how each step's episodes are sampled")
    chat: dict[str, Any] = documented(factory=dict, help="the chat episode's settings, as eval's (ChatConfig's "
                                      "fields; configs/chat/default.yaml)")
    advantage: AdvantageConfig = documented(factory=AdvantageConfig, help="how scores become advantages")
    filter: FilterConfig = documented(factory=FilterConfig, help="which groups (the episodes of one seed) are trained "
                                      "on: StarPO-S's std filter or RAGEN-2's rollout filter")
    actor: ActorConfig = documented(factory=ActorConfig, help="the policy's optimiser and loss")
    critic: CriticConfig = documented(factory=CriticConfig, help="the value model (read by gae and bi_level_gae only)")
    kl: KLConfig = documented(factory=KLConfig, help="the KL penalty towards the initial model")
    sft: SFTConfig = documented(factory=SFTConfig, help="algo=sft: a supervised warm start on a scripted agent's "
                                "train-seed episodes")
    val: ValConfig = documented(factory=ValConfig, help="validation: the real eval harness on one of the env's panels")
    test: TestConfig = documented(factory=TestConfig, help="the final checkpoint's evaluation on a panel")
    checkpoint: CheckpointConfig = documented(factory=CheckpointConfig,
                                              help="checkpoints in the run folder's checkpoints/")
    log: LogConfig = documented(factory=LogConfig, help="what a run logs besides metrics.jsonl")
    overlong_buffer: OverlongBufferConfig = documented(
        factory=OverlongBufferConfig, help="DAPO's overlong reward shaping (veRL's reward_model.overlong_buffer)")
    collapse_detection: CollapseDetectionConfig = documented(
        factory=CollapseDetectionConfig, help="RAGEN-2's template-collapse diagnostics (docs/starpo.md)")

    @property
    def sampling_dtype(self) -> str:
        """The precision rollouts are sampled in (``rollout.dtype``, else ``dtype``)."""
        return self.rollout.dtype or self.dtype

    @property
    def uses_critic(self) -> bool:
        return self.algo == "starpo" and ESTIMATORS[self.advantage.estimator].critic

    @property
    def batch_size(self) -> int:
        """Trajectories rolled out per step."""
        return self.rollout.groups * self.rollout.group_size

    @property
    def kept_groups(self) -> int:
        """The most groups the filter keeps of ``rollout.groups`` (:func:`~ragen_bench.starpo.filter_spec.groups_to_keep`):
        StarPO-S's ``floor(ratio x groups)``, top_k's and top_k_abs's count, every group for the others."""
        return groups_to_keep(self.rollout.groups, self.filter.spec)

    @property
    def chat_config(self) -> ChatConfig:
        """``chat`` as a :class:`~ragen_bench.chat.ChatConfig`, checked by eval's rules (a TrainConfigError naming the key).

        ``chat`` itself stays the mapping of the keys given, which is what ``config.json`` records.
        """
        from ragen_bench.chat.config import check_chat

        return check_chat(self.chat, TrainConfigError)

    @property
    def game_chat_config(self) -> GameChatConfig:
        """A game's chat settings: :attr:`chat_config` and eval's ``game.*`` rules, ``game`` overriding them."""
        from ragen_bench.eval.config import GAME_DEFAULTS, game_chat_config

        return game_chat_config(self.chat_config, {**GAME_DEFAULTS["game"], **self.game})

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def recorded(self) -> dict[str, Any]:
        """:meth:`to_dict` as ``config.json`` records it: ``chat.action_format=text`` left out, as in the
        runs written before the key existed (so they resume)."""
        from ragen_bench.chat.config import recorded_chat

        return {**self.to_dict(), "chat": recorded_chat(self.chat)}


def compose(preset: str = DEFAULT_PRESET, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """The plain dict ``configs/train/<preset>.yaml`` and ``overrides`` compose to."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.errors import HydraException
    from omegaconf import OmegaConf
    from omegaconf.errors import OmegaConfBaseException

    from ragen_bench.chat import context
    from ragen_bench.data import CONFIG_MODULE
    from ragen_bench.eval.streams import register_resolver

    register_resolver()
    if preset not in PRESETS:
        raise TrainConfigError(f"preset: unknown preset {preset!r}; choose one of {choices(PRESETS)}")
    # RAGEN-2's context_window_mode / max_context_window: the chat.history_window they mean, as in eval.
    overrides = context.translate(overrides, TrainConfigError)
    try:
        with initialize_config_module(CONFIG_MODULE, version_base=None):
            composed = hydra_compose(config_name=f"train/{preset}", overrides=list(overrides))
    except (HydraException, OmegaConfBaseException) as error:
        raise TrainConfigError(f"train config: {str(error).splitlines()[0]}") from error
    return OmegaConf.to_container(composed, resolve=True)  # type: ignore[return-value]


def from_preset(preset: str = DEFAULT_PRESET, overrides: Sequence[str] = ()) -> TrainConfig:
    """The checked :class:`TrainConfig` of ``configs/train/<preset>.yaml`` with ``overrides``; an override
    of a filter key that the resulting filter does not read is refused (:func:`refuse_unread_overrides`)."""
    config = from_mapping(compose(preset, overrides))
    if overrides:
        refuse_unread_overrides(config, _build(TrainConfig, compose(preset), ""))
    return config


def refuse_unread_overrides(config: TrainConfig, preset_config: TrainConfig) -> None:
    """Refuse a filter key that ``config``'s filter does not read and whose value differs from the preset's.

    Compared with the preset, not with the defaults: a preset may leave a key its mode does not read
    (``dapo`` keeps ``grpo``'s ``filter.ratio=1.0`` under ``mode=rollout``), but a value the command
    line changed is one its user expects to act.
    """
    for key, where in unread_filter_keys(config.filter).items():
        value = getattr(config.filter, key)
        if value != getattr(preset_config.filter, key):
            raise TrainConfigError(f"filter.{key}: only applies to {where}, so it would have no effect with "
                                   f"{filter_in_words(config.filter)}, got {value!r}")


def from_args(args: Sequence[str]) -> TrainConfig:
    """The config of ``ragen-bench train ARGS``: ``preset=NAME`` (the last one wins; default
    :data:`DEFAULT_PRESET`) picks the preset, every other argument is a Hydra override of it."""
    preset = DEFAULT_PRESET
    overrides = []
    for arg in args:
        if arg.startswith("preset="):
            preset = arg.split("=", 1)[1]
        else:
            overrides.append(arg)
    return from_preset(preset, overrides)


def from_mapping(raw: Mapping[str, Any]) -> TrainConfig:
    """A checked :class:`TrainConfig` from a composed mapping (every key known, every value valid)."""
    config = _build(TrainConfig, raw, "")
    _check(config)
    return config


def _build(cls: type[_Section], raw: Any, prefix: str) -> _Section:
    if not isinstance(raw, Mapping):
        raise TrainConfigError(f"{prefix.rstrip('.') or 'train config'}: expected a mapping, got {raw!r}")
    hints = get_type_hints(cls)
    names = {f.name for f in fields(cls)}
    unknown = sorted(set(raw) - names)
    if unknown:
        raise TrainConfigError(f"{prefix}{unknown[0]}: unknown key (known: {', '.join(sorted(names))})")
    values = {}
    for name, value in raw.items():
        hint = hints[name]
        if dataclasses.is_dataclass(hint):
            values[name] = _build(hint, value, f"{prefix}{name}.")
        else:
            values[name] = _coerce(f"{prefix}{name}", value, hint)
    return cls(**values)


def _coerce(key: str, value: Any, hint: Any) -> Any:
    """``value`` in the form ``hint`` declares (:func:`ragen_bench.values.conform`, eval's rules); else a TrainConfigError."""
    try:
        return values.conform(value, hint)
    except values.Mismatch as mismatch:
        raise TrainConfigError(f"{key}{mismatch.where}: expected {mismatch.expected}, got {mismatch.value!r}") from None


def _require(condition: bool, key: str, message: str, value: Any) -> None:
    if not condition:
        raise TrainConfigError(f"{key}: {message}, got {value!r}")


def _require_temperature(value: float, key: str, *, greedy: bool) -> None:
    """The agents' temperature rule (:func:`ragen_bench.agents.sampling.check_temperature`), as a TrainConfigError."""
    from ragen_bench.agents.sampling import check_temperature

    try:
        check_temperature(value, greedy=greedy)
    except ValueError as refused:
        raise TrainConfigError(f"{key}: {str(refused).removeprefix('temperature ')}") from None


def _check(c: TrainConfig) -> None:
    """Ranges and choices; types were checked while building."""
    from ragen_bench.eval.config import validate_out
    from ragen_bench.registry import ENV_IDS

    _require(c.algo in ALGORITHMS, "algo", f"must be one of {choices(ALGORITHMS)}", c.algo)
    _require(c.backend in BACKENDS, "backend", f"must be one of {', '.join(BACKENDS)}", c.backend)
    from ragen_bench.games.registry import GAME_IDS

    _require(c.env in ENV_IDS or c.env in GAME_IDS, "env", "not an env id (see `ragen-bench envs list`)", c.env)
    # Whether a model path exists is checked when training starts (a preset may name a hub id
    # that only backend=verl or another machine resolves); an empty one never names a model.
    _require(bool(c.model.strip()), "model", "must name a model (an alias such as tiny, or a directory)", c.model)
    validate_out(c.out, TrainConfigError)
    _require(c.dtype in DTYPES, "dtype", f"must be one of {', '.join(DTYPES)}", c.dtype)
    _require(0 <= c.seed < 2**32, "seed", "must be in 0..2**32-1", c.seed)
    _require(c.steps >= 0, "steps", "must be >= 0", c.steps)
    _require(c.threads is None or c.threads >= 1, "threads", "must be >= 1 or null", c.threads)
    _require(c.sampling_threads in (None, AUTO_THREADS) or (values.is_int(c.sampling_threads) and c.sampling_threads >= 1),
             "sampling_threads", f"must be >= 1, {AUTO_THREADS} or null", c.sampling_threads)
    _require(c.lora.rank >= 0, "lora.rank", "must be >= 0 (0: full fine-tuning)", c.lora.rank)
    _require(c.lora.alpha > 0, "lora.alpha", "must be > 0", c.lora.alpha)
    _require(0 <= c.lora.dropout < 1, "lora.dropout", "must be in [0, 1)", c.lora.dropout)
    _check_rollout(c)
    _check_advantage_and_filter(c)
    _check_actor(c.actor)
    _check_schedule(c)
    chat = c.chat_config  # chat.*, checked by the rules eval's chat obeys: check_chat
    # A window trains one row per turn, each scored with its episode's total (RAGEN-2's turn-level samples).
    _require(chat.history_window is None or c.advantage.score_placement == "last", "advantage.score_placement",
             "must be last with a context window (chat.history_window): each turn's row carries its episode's score",
             c.advantage.score_placement)
    _require(chat.history_window is None or c.algo != "sft", "chat.history_window",
             "must be null with algo=sft (its records are whole conversations)", chat.history_window)
    # Rollouts are sampled as text and laid out by the <answer> token layout; tool calls are eval-only.
    _require(not chat.tools, "chat.action_format", "must be text for training (tools is an eval mode)",
             chat.action_format)
    _require(not chat.images, "chat.images", "must be false for training (pictures are an eval mode)", chat.images)
    _check_game(c)


def _check_game(c: TrainConfig) -> None:
    """The game keys (``opponent``, ``game``) against the env (``train/games.py`` plays them)."""
    from ragen_bench.eval.config import GAME_DEFAULTS, scripted_opponents
    from ragen_bench.games.registry import GAME_IDS


    if c.env not in GAME_IDS:
        if c.opponent is not None or c.game != GAME_DEFAULTS["game"]:
            key = "opponent" if c.opponent is not None else "game"
            raise TrainConfigError(f"{key}: {c.env} is a single-agent env; only multi-agent games "
                                   f"(e.g. RAGEN/TicTacToe-v0) take {key}=")
        return
    from ragen_bench.games.registry import game_entry

    known = sorted(scripted_opponents(c.env))
    if (seats := game_entry(c.env).seats) > 2 and c.opponent == SELF_PLAY:
        raise TrainConfigError(f"opponent: {c.env} has {seats} seats; self-play trains two-player games only. "
                               f"Name the scripted opponent of the other seats ({', '.join(known)})")
    if c.backend == "verl":  # its agent loop plays games (agent_loop.py); its dataset rows and recipe do not yet
        raise TrainConfigError(f"backend: {c.env} is a two-player game; train it with backend=local")
    if c.opponent is None:
        raise TrainConfigError(f"opponent: {c.env} is a two-player game; name the opponent the policy trains "
                               f"against ({', '.join(known)}) or opponent={SELF_PLAY} for self-play")
    if c.opponent != SELF_PLAY and c.opponent not in known:
        raise TrainConfigError(f"opponent: {c.env} has no scripted player {c.opponent!r}; known: "
                               f"{', '.join(known)}, or {SELF_PLAY} (self-play)")
    if unknown := sorted(set(c.game) - set(GAME_DEFAULTS["game"])):
        raise TrainConfigError(f"game.{unknown[0]}: unknown key; game keys: {', '.join(GAME_DEFAULTS['game'])}")
    try:
        c.game_chat_config
    except (TypeError, ValueError) as problem:
        raise TrainConfigError(f"game: {problem}") from None
    if c.chat_config.history_window is not None:
        raise TrainConfigError("chat.history_window: must be null on a game (each seat's reply sees the whole game)")
    if c.algo == "sft":
        if c.sft.agent not in known:
            raise TrainConfigError(f"sft.agent: the warm start on {c.env} plays one of its scripted players "
                                   f"({', '.join(known)}), got {c.sft.agent!r}")
        if c.opponent == SELF_PLAY:
            raise TrainConfigError(f"opponent: the warm start plays a scripted opponent ({', '.join(known)}), not "
                                   f"{SELF_PLAY}")


def _check_rollout(c: TrainConfig) -> None:
    r = c.rollout
    _require(r.groups >= 1, "rollout.groups", "must be >= 1", r.groups)
    _require(r.group_size >= 1, "rollout.group_size", "must be >= 1", r.group_size)
    _require_temperature(r.temperature, "rollout.temperature", greedy=False)
    _require(0 < r.top_p <= 1, "rollout.top_p", "must be in (0, 1]", r.top_p)
    _require(r.max_new_tokens >= 1, "rollout.max_new_tokens", "must be >= 1", r.max_new_tokens)
    _require(all(r.stop_strings), "rollout.stop_strings", "must be non-empty strings", r.stop_strings)
    _require(r.generate_batch >= 1, "rollout.generate_batch", "must be >= 1", r.generate_batch)
    _require(r.dtype is None or r.dtype in DTYPES, "rollout.dtype", f"must be one of {', '.join(DTYPES)} or null",
             r.dtype)


def _check_advantage_and_filter(c: TrainConfig) -> None:
    a = c.advantage
    _require(a.estimator in ESTIMATORS, "advantage.estimator", f"must be one of {choices(ESTIMATORS)}", a.estimator)
    _require(a.grpo_mode in GRPO_MODES, "advantage.grpo_mode", f"must be one of {choices(GRPO_MODES)}", a.grpo_mode)
    for key, value in (("gamma", a.gamma), ("lam", a.lam), ("high_level_gamma", a.high_level_gamma)):
        _require(0 <= value <= 1, f"advantage.{key}", "must be in [0, 1]", value)
    _require(a.score_placement in ("last", "turn"), "advantage.score_placement", "must be last or turn", a.score_placement)
    try:
        check_filter(c.filter, c.rollout.groups)
    except ValueError as problem:  # its message names the filter key
        raise TrainConfigError(str(problem)) from None


def _check_actor(p: ActorConfig) -> None:
    _require(p.lr > 0, "actor.lr", "must be > 0", p.lr)
    _require(p.weight_decay >= 0, "actor.weight_decay", "must be >= 0", p.weight_decay)
    _require(len(p.betas) == 2 and all(0 <= b < 1 for b in p.betas), "actor.betas", "must be two numbers in [0, 1)", p.betas)
    _require(p.grad_clip > 0, "actor.grad_clip", "must be > 0", p.grad_clip)
    _require(0 <= p.clip_low < 1, "actor.clip_low", "must be in [0, 1)", p.clip_low)
    _require(p.clip_high >= 0, "actor.clip_high", "must be >= 0", p.clip_high)
    _require(p.dual_clip is None or p.dual_clip > 1, "actor.dual_clip", "must be > 1 or null", p.dual_clip)
    _require(p.entropy_coef >= 0, "actor.entropy_coef", "must be >= 0", p.entropy_coef)
    _require(p.loss_agg in LOSS_AGGREGATIONS, "actor.loss_agg", f"must be one of {choices(LOSS_AGGREGATIONS)}",
             p.loss_agg)
    _require(p.filter_loss_scaling in FILTER_LOSS_SCALINGS, "actor.filter_loss_scaling",
             f"must be one of {', '.join(FILTER_LOSS_SCALINGS)}", p.filter_loss_scaling)
    _require(p.ppo_epochs >= 1, "actor.ppo_epochs", "must be >= 1", p.ppo_epochs)
    _require(p.mini_batch >= 1, "actor.mini_batch", "must be >= 1", p.mini_batch)
    _require(1 <= p.micro_batch <= p.mini_batch, "actor.micro_batch", "must be in 1..actor.mini_batch", p.micro_batch)


def _check_schedule(c: TrainConfig) -> None:  # critic, KL, SFT, validation and its panels, checkpoints, ...
    from ragen_bench import panels
    from ragen_bench.registry import ENV_IDS

    _require(c.critic.lr > 0, "critic.lr", "must be > 0", c.critic.lr)
    _require(c.critic.value_clip > 0, "critic.value_clip", "must be > 0", c.critic.value_clip)
    _require(c.critic.coef > 0, "critic.coef", "must be > 0", c.critic.coef)
    _require(c.kl.coef >= 0, "kl.coef", "must be >= 0", c.kl.coef)
    _require(c.kl.estimator in ("k1", "low_var_kl"), "kl.estimator", "must be k1 or low_var_kl", c.kl.estimator)
    _require(c.kl.placement in ("loss", "reward"), "kl.placement", "must be loss or reward", c.kl.placement)
    s = c.sft
    _require(s.agent in ("optimal", "random") or c.env not in ENV_IDS, "sft.agent", "must be optimal or random",
             s.agent)  # a game's warm start plays one of its scripted players (_check_game)
    _require(s.episodes >= 1, "sft.episodes", "must be >= 1", s.episodes)
    _require(s.epochs >= 1, "sft.epochs", "must be >= 1", s.epochs)
    _require(s.lr > 0, "sft.lr", "must be > 0", s.lr)
    _require(s.batch >= 1, "sft.batch", "must be >= 1", s.batch)
    v = c.val
    _require(v.every >= 0, "val.every", "must be >= 0 (0: never)", v.every)
    _require(v.limit is None or v.limit >= 1, "val.limit", "must be >= 1 or null", v.limit)
    _require_temperature(v.temperature, "val.temperature", greedy=True)  # validation runs eval's hf agent
    _require(v.samples >= 1, "val.samples", "must be >= 1", v.samples)
    _require(c.test.limit is None or c.test.limit >= 1, "test.limit", "must be >= 1 or null", c.test.limit)
    splits = panels.available(c.env)
    for key, split in (("val.split", c.val.split), ("test.split", c.test.split)):
        _require(split is None or split in splits, key, f"{c.env} has no such panel (it has {', '.join(splits)})", split)
    _require(c.checkpoint.every >= 1, "checkpoint.every", "must be >= 1", c.checkpoint.every)
    _require(c.checkpoint.keep >= 1, "checkpoint.keep", "must be >= 1", c.checkpoint.keep)
    d = c.collapse_detection
    _require(d.compute_freq >= 0, "collapse_detection.compute_freq", "must be >= 0 (0: off)", d.compute_freq)
    _require(d.num_samples is None or d.num_samples >= 2, "collapse_detection.num_samples",
             "must be >= 2 (two prompts at least) or null (all)", d.num_samples)
    _require(d.micro_batch_size >= 1, "collapse_detection.micro_batch_size", "must be >= 1", d.micro_batch_size)
    _require(d.std_eps > 0, "collapse_detection.std_eps", "must be > 0", d.std_eps)
    _require(0 <= d.ema_decay < 1, "collapse_detection.ema_decay", "must be in [0, 1)", d.ema_decay)
    o = c.overlong_buffer
    _require(0 <= o.len <= c.rollout.max_new_tokens, "overlong_buffer.len", "must be in 0..rollout.max_new_tokens (0: off)", o.len)
    _require(o.penalty_factor >= 0, "overlong_buffer.penalty_factor", "must be >= 0", o.penalty_factor)
