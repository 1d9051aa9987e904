"""What a validated eval config implies: its ChatConfig, the game config with its defaults, the
run's identity, the opponent's label and the game's scripted players."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ragen_bench import runfiles
from ragen_bench.eval.schema import FREE_KEYS, GAME_DEFAULTS, GAME_KEYS, ConfigError

if TYPE_CHECKING:
    # Types only: the functions import what they call, when they are called.
    from ragen_bench.chat.config import ChatConfig
    from ragen_bench.chat.game import GameChatConfig


def chat_config(config: Mapping[str, Any]) -> ChatConfig:
    """The :class:`~ragen_bench.chat.ChatConfig` of an eval config (a ConfigError if its ``chat`` is bad)."""
    from ragen_bench.chat.config import check_chat

    return check_chat(config["chat"], ConfigError)


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


def game_chat_config(config: Mapping[str, Any]) -> GameChatConfig:
    """The :class:`~ragen_bench.chat.game.GameChatConfig` of a (validated) eval config."""
    from ragen_bench.chat.game import GameChatConfig

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
