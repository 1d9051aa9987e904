"""Chat budgets in a run: each id's declared budget made concrete, and the chat settings and hash it implies.

Every id declares the chat budget its tasks need (:class:`ragen_bench.registry.ChatBudget`). An eval
config's ``budget`` key says whether a run plays it (:func:`ragen_bench.eval.config.resolve_budget`
checks the key and calls :func:`declared_budgets`); the resolved budget (env id -> the chat settings it
changes) is what a manifest records and every reader of a run rebuilds its chats from
(:func:`budget_chats`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ragen_bench.chat.config import ChatConfig

# The eval key, and its two words: ``env`` (configs/eval.yaml's default), each id's declared budget for the
# chat keys the user did not set; ``none``, the ``chat`` section alone for every id.  Compose resolves ``env``
# into the mapping a manifest records; a config may lack the key (runs recorded before budgets: none).
BUDGET_KEY = "budget"
BUDGET_MODES = ("env", "none")


def declared_budgets(
    env_ids: Iterable[str], chat: Mapping[str, Any], given: Collection[str] | None = None
) -> dict[str, dict[str, int]]:
    """Each of ``env_ids``' declared budget (its ChatConfig fields) less the ``given`` keys and less what
    ``chat`` already says; ids left with nothing are left out.

    ``given`` are the ``chat.*`` keys the user set, which win over any budget (compose knows them);
    when ``None`` (a mapping built in Python), the keys of ``chat`` that differ from ChatConfig's defaults.
    """
    from ragen_bench import registry
    from ragen_bench.chat.config import ChatConfig

    if given is None:
        defaults = ChatConfig().to_dict()
        given = [key for key, value in chat.items() if defaults.get(key, value) != value]
    resolved = {
        env_id: {key: value for key, value in registry.chat_budget(env_id).chat_fields().items()
                 if key not in given and chat.get(key) != value}
        for env_id in env_ids
    }
    return {env_id: fields for env_id, fields in resolved.items() if fields}


def budget_chats(chat: ChatConfig, budget: Mapping[str, Mapping[str, int]]) -> dict[str, ChatConfig]:
    """The chat settings of each id a resolved ``budget`` (integers >= 1, which every ChatConfig rule
    allows) names: ``chat`` with the id's settings on top."""
    return {env_id: replace(chat, **settings) for env_id, settings in budget.items()}


def run_template_hash(chat: ChatConfig, chats: Mapping[str, ChatConfig], targets: Sequence[tuple[str, str]]) -> str:
    """The template hash of a single-agent run: its ids' chat settings' one hash when they share it, else
    the sha256 of every id's hash (so runs whose ids played under other budgets never compare as equal)."""
    hashes = {env_id: chats.get(env_id, chat).template_hash() for env_id, _ in targets}
    if len(set(hashes.values())) == 1:
        return next(iter(hashes.values()))
    return hashlib.sha256(json.dumps(hashes, sort_keys=True).encode()).hexdigest()
