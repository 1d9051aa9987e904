"""The files a veRL run reads: Parquet rows of env seeds, and the agent-loop list.

One row per seed, in the layout veRL's ``RLHFDataset`` reads: ``prompt`` (the episode's first
messages, shown in veRL's logs; the agent loop rebuilds them from the env), ``agent_name``,
``data_source`` (the env id) and ``extra_info`` with ``env_id``, ``seed`` and ``split``, which
is all the agent loop needs.  Train rows take the decontaminated train seeds in order
(:func:`ragen_bench.panels.decontaminated_train_seeds`: no level of the val or test panels);
validation rows take a frozen panel's seeds.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import islice
from pathlib import Path
from typing import Any

import gymnasium

from ragen_bench import panels
from ragen_bench.chat import ChatEpisode
from ragen_bench.chat.config import check_chat

AGENT_NAME = "ragen_chat_episode"  # the name the agent loop registers under
AGENT_LOOP_TARGET = "ragen_bench.integrations.verl.agent_loop.ChatEpisodeAgentLoop"


def split_seeds(env_id: str, split: str, count: int | None) -> list[int]:
    """``count`` seeds (all of a panel when None): decontaminated train seeds, or a frozen panel's."""
    if split == "train":
        if count is None:
            raise ValueError("train seeds are unbounded; give a count")
        return list(islice(panels.decontaminated_train_seeds(env_id), count))
    seeds = panels.load(env_id, split).seeds
    return list(seeds if count is None else seeds[:count])


def seed_rows(env_id: str, split: str, count: int | None, chat: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The dataset rows of ``split``'s seeds (module docstring)."""
    env = gymnasium.make(env_id)
    config = check_chat(dict(chat))
    rows = []
    for index, seed in enumerate(split_seeds(env_id, split, count)):
        episode = ChatEpisode(env, config, env_id=env_id, seed=seed, split=split)
        episode.reset()
        rows.append(
            {
                "data_source": env_id,
                "agent_name": AGENT_NAME,
                "prompt": episode.messages,
                "extra_info": {"index": index, "env_id": env_id, "seed": seed, "split": split},
                "reward_model": {"style": "env", "ground_truth": ""},
            }
        )
    env.close()
    return rows


def write_parquet(path: Path, rows: list[dict[str, Any]]) -> None:
    import pandas

    pandas.DataFrame(rows).to_parquet(path, index=False)


def agent_loop_file(
    path: Path, *, chat: Mapping[str, Any], max_new_tokens: int, stop_strings: list[str],
    overlong_buffer: Mapping[str, Any] | None = None, opponent: str | None = None,
    game: Mapping[str, Any] | None = None,
) -> None:
    """The ``agent_loop_config_path`` file: our loop under :data:`AGENT_NAME`, with its constructor keys
    (``opponent`` and ``game``: a game's scripted opponent and illegal-move rules)."""
    from omegaconf import OmegaConf

    entry = {
        "name": AGENT_NAME,
        "_target_": AGENT_LOOP_TARGET,
        "chat": dict(chat),
        "max_new_tokens": max_new_tokens,
        "stop_strings": list(stop_strings),
        "overlong_buffer": dict(overlong_buffer or {}),
        "opponent": opponent,
        "game": dict(game or {}),
    }
    OmegaConf.save(OmegaConf.create([entry]), path)
