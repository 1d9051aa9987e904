"""What every trainer bridge shares: an id's eval chat settings, a seed's first prompt, a split's seeds.

Each bridge (TRL, SkyRL-gym, veRL) hands its trainer the episodes ``ragen-bench eval`` plays:
the chat settings are eval's (the id's budget, the user's ``chat.*`` on top) and the seeds are a
frozen panel's, or the decontaminated train seeds (:func:`split_seeds`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium

from ragen_bench.chat import ChatConfig, ChatEpisode
from ragen_bench.chat.config import budgeted_settings, check_chat
from ragen_bench.integrations.verl.data import split_seeds

__all__ = ["chat_config", "first_messages", "split_seeds"]


def chat_config(env_id: str, chat: Mapping[str, Any] | None = None) -> ChatConfig:
    """The chat settings eval plays ``env_id`` with: the id's budget, then ``chat`` (eval's ``chat.*``) on top.

    ``chat.action_format=tools`` and ``chat.images`` are refused (``ValueError``): the trainers here
    send text replies to text prompts.
    """
    config = check_chat(budgeted_settings(env_id, chat))
    if config.tools:
        raise ValueError("chat.action_format=tools is an eval mode; training integrations take text actions "
                         "(chat.action_format=text)")
    if config.images:
        raise ValueError("chat.images is an eval mode; training integrations send text prompts (chat.images=false)")
    return config


def first_messages(
    env: gymnasium.Env, env_id: str, seed: int, config: ChatConfig, split: str = ""
) -> list[dict[str, str]]:
    """The messages eval's agent gets at turn 1 of ``seed`` (``env`` is left reset to it)."""
    episode = ChatEpisode(env, config, env_id=env_id, seed=seed, split=split)
    episode.reset()
    return episode.messages
