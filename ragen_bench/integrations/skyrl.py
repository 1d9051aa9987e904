"""SkyRL-gym 0.4: every single-agent ragen-bench id as a ``BaseTextEnv``, registered for ``skyrl_gym.make``.

The only module that imports ``skyrl_gym`` (extra ``skyrl``).  :class:`RagenTextEnv` plays one
seed as a :class:`~ragen_bench.chat.ChatEpisode`, so SkyRL's conversation is eval's: ``init``
returns the chat layer's turn-1 messages (whatever prompt the dataset row held), each ``step``
parses the model's reply as eval does and returns the next user message, the turn's reward (env
rewards plus the format penalty) and whether the episode is over.  The seed comes from the row:
``extras["seed"]`` (or ``extras["extra_info"]["seed"]``, veRL-style rows); :func:`dataset_rows`
writes such rows.  Eval's chat settings apply (the id's budget), with ``env_config["chat"]`` on top.

:func:`register_all` registers every id of the registry under its own name (``RAGEN/Sokoban-6x6-v0``);
calling it again is harmless.  Multi-agent games are not registered (``BaseTextEnv`` has one
player).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import gymnasium
import skyrl_gym
from skyrl_gym.envs.base_text_env import BaseTextEnv, BaseTextEnvStepOutput

from ragen_bench import registry
from ragen_bench.chat import AgentReply, ChatEpisode
from ragen_bench.integrations.tasks import chat_config, first_messages, split_seeds

ENTRY_POINT = "ragen_bench.integrations.skyrl:RagenTextEnv"


class RagenTextEnv(BaseTextEnv):
    """One seed of ``env_id`` as a SkyRL text env (module docstring)."""

    def __init__(self, env_config: Mapping[str, Any] | None = None, extras: Mapping[str, Any] | None = None,
                 *, env_id: str) -> None:
        super().__init__()
        extras = extras or {}
        seed = extras.get("seed", (extras.get("extra_info") or {}).get("seed"))
        if type(seed) is not int:
            raise ValueError(f"{env_id}: the row carries no integer 'seed' (in extras or extras['extra_info'])")
        config = chat_config(env_id, (env_config or {}).get("chat"))
        self.episode = ChatEpisode(gymnasium.make(env_id), config, env_id=env_id, seed=seed,
                                   split=str(extras.get("split", "")))
        self.max_turns = config.max_turns

    def init(self, prompt: list[dict[str, str]]) -> tuple[list[dict[str, str]], dict[str, Any]]:
        """The chat layer's turn-1 messages for the seed (``prompt``, the row's, is not used)."""
        self.episode.reset()
        return self.episode.messages, {"env_id": self.episode.env_id, "seed": self.episode.seed}

    def step(self, action: str) -> BaseTextEnvStepOutput:
        """Play ``action`` (the model's reply) as one chat turn."""
        self.turns += 1
        self.episode.step(AgentReply(action))
        trajectory = self.episode.trajectory()
        turn = trajectory.turns[-1]
        done = self.episode.done
        return BaseTextEnvStepOutput(
            # The next user message; a finished episode's closing message (final state) is no prompt.
            observations=[] if done else self.episode.messages[-1:],
            reward=turn.reward,
            done=done,
            metadata={"success": trajectory.success, "valid": turn.valid, "actions": len(turn.action_ids)},
        )

    def get_metrics(self) -> dict[str, Any]:
        trajectory = self.episode.trajectory()
        return {"success": float(trajectory.success), "progress": trajectory.scored_progress,
                "total_reward": trajectory.total_reward, "turns": trajectory.num_turns}

    def close(self) -> None:
        self.episode.env.close()


def register_all() -> list[str]:
    """Register every single-agent id with ``skyrl_gym.register``; the ids this call added.

    An id already registered to :class:`RagenTextEnv` is left as it is; one registered to
    something else raises ``ValueError`` (two envs under one name would be made silently wrong).
    """
    added = []
    for env_id in registry.ENV_IDS:
        spec = skyrl_gym.registry.get(env_id)
        if spec is not None:
            if spec.entry_point != ENTRY_POINT:
                raise ValueError(f"skyrl_gym already registers {env_id!r} to {spec.entry_point!r}")
            continue
        skyrl_gym.register(env_id, entry_point=ENTRY_POINT, kwargs={"env_id": env_id})
        added.append(env_id)
    return added


def dataset_rows(env_id: str, split: str, *, limit: int | None = None,
                 chat: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """SkyRL dataset rows for ``split``'s seeds: ``prompt`` (eval's turn 1), ``env_class`` (the id), ``seed``, ``split``.

    ``limit``: the first seeds only (train seeds are unbounded, so train needs one).
    """
    config = chat_config(env_id, chat)
    env = gymnasium.make(env_id)
    rows = [
        {"data_source": env_id, "prompt": first_messages(env, env_id, seed, config, split), "env_class": env_id,
         "seed": seed, "split": split}
        for seed in split_seeds(env_id, split, limit)
    ]
    env.close()
    return rows
