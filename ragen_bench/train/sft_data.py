"""Supervised warm-start data: the ``optimal`` agent's episodes as chat records, exported and tokenised.

* :func:`sft_records` plays the scripted ``optimal`` agent through
  :class:`~ragen_bench.chat.ChatEpisode` / :func:`~ragen_bench.chat.run_lockstep`, the same
  turn loop the eval harness drives, so every prompt in a record is byte-identical to the
  prompt a model is evaluated on.  One record per episode::

      {"messages": [system, user, assistant, user, ..., assistant],
       "env_id": ..., "seed": ..., "total_reward": ..., "success": ..., "turns": ...}

  ``messages`` ends with the last reply: the final "Reward / Final state" message the
  harness appends is never followed by anything the model writes, so it has nothing to teach.
* :func:`export_sft` writes such records for the first train seeds (decontaminated against
  the val and test panels) as ``sft.jsonl``, ``sft.parquet`` and ``manifest.json``; both data
  files load with ``datasets.load_dataset("json" | "parquet", data_files=...)``.
* :func:`tokenize_sft` lays a record out in the trainer's token layout
  (:meth:`ragen_bench.chat.tokens.TokenLayout.record_ids`, the context the policy agent builds),
  with the loss mask on each reply and its end-of-turn token: the mask the RL update uses.

The loss is :func:`ragen_bench.starpo.sft.sft_loss`.  torch is imported inside the functions
that need it.
"""


from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable, Sequence
from itertools import islice
from pathlib import Path
from typing import Any, BinaryIO

import gymnasium

from ragen_bench import __version__, panels, runfiles, values
from ragen_bench.agents.scripted import OptimalAgent, RandomAgent
from ragen_bench.chat import ChatConfig, ChatEpisode, Trajectory, run_lockstep
from ragen_bench.chat.config import recorded_chat
from ragen_bench.chat.tokens import TokenLayout
from ragen_bench.games.registry import GAME_IDS
from ragen_bench.registry import ENV_IDS

SFT_FORMAT = "ragen-bench/sft/v1"
JSONL, PARQUET, MANIFEST = "sft.jsonl", "sft.parquet", "manifest.json"
# Episodes played together: one env each, reused by the next chunk (each reset with its own seed).
_LOCKSTEP = 64


# -- records ---------------------------------------------------------------------------------


def sft_records(
    env_id: str,
    seeds: Iterable[int],
    chat_config: ChatConfig,
    *,
    agent: str = "optimal",
    only_successful: bool = True,
) -> list[dict[str, Any]]:
    """One chat record per seed (see the module docstring), in seed order.

    ``agent`` (see :func:`scripted_agent`) writes its replies in ``chat_config``'s format
    (think or not, its separator, at most its actions per turn); the transcript shows each
    reply as the parser normalised it, which is what the model is taught to write.
    ``only_successful`` drops episodes the agent did not win (slippery FrozenLake, Sokoban
    levels that need more actions than the budget).
    """
    check_env_id(env_id)
    if chat_config.history_window is not None:
        raise ValueError(
            f"SFT records need the full history (history_window=None), got {chat_config.history_window}: "
            "a record is trained as one sequence, so every reply must see every earlier turn"
        )
    seeds = list(seeds)
    if any(type(seed) is not int or seed < 0 for seed in seeds):
        raise ValueError(f"seeds must be non-negative ints, got {seeds!r}")
    player = scripted_agent(agent, chat_config)
    records = []
    envs = [gymnasium.make(env_id) for _ in range(min(_LOCKSTEP, len(seeds)))]
    try:
        for start in range(0, len(seeds), _LOCKSTEP):
            chunk = seeds[start : start + _LOCKSTEP]
            episodes = [
                ChatEpisode(env, chat_config, env_id=env_id, seed=seed, split="train") for env, seed in zip(envs, chunk)
            ]
            for trajectory in run_lockstep(episodes, player):
                if trajectory.success or not only_successful:
                    records.append(record_of(trajectory))
    finally:
        for env in envs:
            env.close()
    return records


def scripted_agent(name: str, chat_config: ChatConfig) -> OptimalAgent | RandomAgent:
    """The scripted agent whose replies are the records: ``optimal``, or ``random`` (uniform valid
    actions, one per turn: a format-only warm start that teaches the syntax and no preference)."""
    if name == "optimal":
        return OptimalAgent(think=chat_config.think, max_actions_per_turn=chat_config.max_actions_per_turn,
                            separator=chat_config.action_separator)
    if name == "random":
        return RandomAgent(think=chat_config.think, separator=chat_config.action_separator)
    raise ValueError(f"SFT records come from the optimal or random agent, got {name!r}")


def check_env_id(env_id: str) -> None:
    """Refuse ids that have no single-agent chat episode (unknown ids, multi-agent games)."""
    if env_id in GAME_IDS:
        raise ValueError(f"{env_id} is a multi-agent game; SFT records are made for single-agent envs only")
    if env_id not in ENV_IDS:
        raise ValueError(values.unknown_name("env id", env_id, ENV_IDS, "`ragen-bench envs list`"))


def record_of(trajectory: Trajectory) -> dict[str, Any]:
    """A finished episode as a chat record (messages up to its last reply)."""
    return {
        "messages": [{"role": m["role"], "content": m["content"]} for m in trajectory.training_messages()],
        "env_id": trajectory.env_id,
        "seed": trajectory.seed,
        "total_reward": float(trajectory.total_reward),
        "success": bool(trajectory.success),
        "turns": trajectory.num_turns,
    }


# -- export ----------------------------------------------------------------------------------


def export_sft(
    env_id: str,
    out_dir: str | os.PathLike[str],
    *,
    split: str = "train",
    limit: int = 512,
    chat_config: ChatConfig | None = None,
) -> dict[str, Any]:
    """Play the first ``limit`` decontaminated train seeds and write their records; return the manifest.

    Only winning episodes are written, so ``count`` may be below ``limit``; ``seeds`` lists
    the seeds of the records written, ``seeds_played`` every seed tried; no win at all is
    an error and writes nothing.  Each file is replaced
    atomically, the manifest last, so a manifest names data files that are complete.
    """
    if split != "train":
        raise ValueError(f"SFT data comes from the train split only, not {split!r} (val and test seeds are held out)")
    if type(limit) is not int or limit < 1:
        raise ValueError(f"limit must be an int >= 1, got {limit!r}")
    check_env_id(env_id)
    chat_config = chat_config or ChatConfig()
    seeds = list(islice(panels.decontaminated_train_seeds(env_id), limit))
    records = sft_records(env_id, seeds, chat_config)
    if not records:
        # An empty file would only fail later, in the trainer or in datasets (it reads no empty Parquet).
        raise ValueError(
            f"the optimal agent won none of the {len(seeds)} {env_id} train seeds played; nothing written "
            "(raise limit, or loosen the chat budgets)"
        )
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    runfiles.replace_atomically(out / JSONL, lambda handle: _write_jsonl(handle, records))
    runfiles.replace_atomically(out / PARQUET, lambda handle: _write_parquet(handle, records))
    manifest = {
        "format": SFT_FORMAT,
        "env_id": env_id,
        "split": split,
        "agent": "optimal",
        "only_successful": True,
        "seeds_played": seeds,
        "count": len(records),
        "seeds": [record["seed"] for record in records],
        "chat_config": recorded_chat(chat_config.to_dict()),
        "template_hash": chat_config.template_hash(),
        # Which held-out levels the seeds were checked against, and which train panel pins them.
        "panel_checksums": {name: panels.load(env_id, name).checksum for name in ("train", "val", "test")},
        "package_version": __version__,
        "files": {name: {"sha256": _sha256(out / name), "bytes": (out / name).stat().st_size} for name in (JSONL, PARQUET)},
    }
    runfiles.write_text_atomic(out / MANIFEST, json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    return manifest


def _write_jsonl(handle: BinaryIO, records: Sequence[dict[str, Any]]) -> None:
    for record in records:
        # ensure_ascii=False keeps board symbols readable; env text is always valid Unicode.
        handle.write((json.dumps(record, ensure_ascii=False) + "\n").encode("utf-8"))


def _write_parquet(handle: BinaryIO, records: Sequence[dict[str, Any]]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    # An explicit schema, so that the column types never depend on what the records happen to hold.
    message = pa.struct([("role", pa.string()), ("content", pa.string())])
    schema = pa.schema(
        [
            ("messages", pa.list_(message)),
            ("env_id", pa.string()),
            ("seed", pa.int64()),
            ("total_reward", pa.float64()),
            ("success", pa.bool_()),
            ("turns", pa.int64()),
        ]
    )
    pq.write_table(pa.Table.from_pylist(list(records), schema=schema), handle)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# -- tokens ----------------------------------------------------------------------------------


def tokenize_sft(records: Sequence[dict[str, Any]], tokenizer: Any, *, max_length: int) -> dict[str, Any]:
    """Right-padded ``input_ids``, ``attention_mask`` and ``loss_mask`` tensors, one row per record.

    Row layout (as the policy agent builds it): turn 1's prompt (the chat template's
    rendering of the messages before the first reply, with the generation prompt), then
    each reply's ids followed by the end-of-turn id, and between replies the template text
    that follows a reply's end token up to the next generation prompt.  ``loss_mask`` is
    true on each reply's ids and its end-of-turn id.  Records longer than ``max_length``
    tokens are dropped whole, never cut; ``dropped`` (an int) says how many.  Messages after
    the last reply are ignored.
    """
    import torch

    if not records:
        raise ValueError("tokenize_sft needs at least one record")
    if type(max_length) is not int or max_length < 1:
        raise ValueError(f"max_length must be an int >= 1, got {max_length!r}")
    end_id = tokenizer.eos_token_id
    if end_id is None:
        raise ValueError("tokenize_sft: the tokenizer names no end-of-turn (eos) token")
    layout = TokenLayout(tokenizer)
    rows = [layout.record_ids(_messages(record, number)) for number, record in enumerate(records)]
    kept = [(ids, mask) for ids, mask in rows if len(ids) <= max_length]
    if not kept:
        shortest = min(len(ids) for ids, _ in rows)
        raise ValueError(f"tokenize_sft: every record is longer than max_length={max_length} (shortest: {shortest} tokens)")
    pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else end_id
    shape = (len(kept), max(len(ids) for ids, _ in kept))
    input_ids = torch.full(shape, pad_id, dtype=torch.long)
    attention_mask = torch.zeros(shape, dtype=torch.long)
    loss_mask = torch.zeros(shape, dtype=torch.bool)
    for row, (ids, mask) in enumerate(kept):
        input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
        attention_mask[row, : len(ids)] = 1
        loss_mask[row, : len(ids)] = torch.tensor(mask, dtype=torch.bool)
    return {"input_ids": input_ids, "attention_mask": attention_mask, "loss_mask": loss_mask, "dropped": len(rows) - len(kept)}


def _messages(record: Any, number: int) -> list[dict[str, str]]:
    """The record's messages, checked to be role/content string pairs with a prompt before a reply."""
    messages = record.get("messages") if isinstance(record, dict) else None
    if not isinstance(messages, list) or not all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str) for m in messages
    ):
        raise ValueError(f"SFT record {number}: 'messages' must be a list of {{'role': str, 'content': str}}")
    roles = [m["role"] for m in messages]
    if "assistant" not in roles:
        raise ValueError(f"SFT record {number}: no assistant message, so nothing to learn")
    if roles[0] == "assistant":
        raise ValueError(f"SFT record {number}: starts with an assistant message; a reply needs a prompt before it")
    return messages
