"""The id table: every environment this project promises, and its registration.

An id is a promise: the same seed gives the same episode on any machine, forever.
A change to what any seed produces needs a new version suffix (``-v1``), never an
edit of an existing row's kwargs.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium


@dataclass(frozen=True)
class EnvEntry:
    """One registered id.

    ``ragen_name`` is the config name in RAGEN's ``config/envs.yaml`` whose episodes
    this id reproduces exactly (``None`` for ids beyond RAGEN's set).
    """

    id: str
    entry_point: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    ragen_name: str | None = None
    description: str = ""


_SOKOBAN = "ragen_bench.envs.sokoban:SokobanEnv"

ENTRIES: tuple[EnvEntry, ...] = (
    EnvEntry(
        "RAGEN/Sokoban-6x6-v0",
        _SOKOBAN,
        dict(dim_room=(6, 6), num_boxes=1, search_depth=300),
        ragen_name="SimpleSokoban",
        description="6x6 room, 1 box, reverse-play search depth 300.",
    ),
    EnvEntry(
        "RAGEN/Sokoban-8x8-v0",
        _SOKOBAN,
        dict(dim_room=(8, 8), num_boxes=2, search_depth=10),
        ragen_name="LargerSokoban",
        description="8x8 room, 2 boxes, reverse-play search depth 10.",
    ),
    EnvEntry(
        "RAGEN/Sokoban-6x6-AltVocab-v0",
        _SOKOBAN,
        dict(dim_room=(6, 6), num_boxes=1, search_depth=30, vocabulary="alt"),
        ragen_name="SokobanDifferentGridVocab",
        description="6x6 room, 1 box, depth 30, symbols W . G C B A @.",
    ),
    EnvEntry(
        "RAGEN/Sokoban-10x10-v0",
        _SOKOBAN,
        dict(dim_room=(10, 10), num_boxes=3, search_depth=100),
        ragen_name=None,
        description="10x10 room, 3 boxes, reverse-play search depth 100 (beyond RAGEN's set).",
    ),
)

ENV_IDS: tuple[str, ...] = tuple(entry.id for entry in ENTRIES)
_BY_ID = {entry.id: entry for entry in ENTRIES}


def entry(env_id: str) -> EnvEntry:
    """The table row of ``env_id``; a clear error names the known ids otherwise."""
    try:
        return _BY_ID[env_id]
    except KeyError:
        raise KeyError(f"unknown env id {env_id!r}; known ids: {', '.join(ENV_IDS)}") from None


def register_all() -> None:
    """Register every id with Gymnasium (idempotent: re-import does not warn)."""
    for row in ENTRIES:
        if row.id in gymnasium.registry:
            continue
        gymnasium.register(
            id=row.id,
            entry_point=row.entry_point,
            kwargs=dict(row.kwargs),
            # Truncation (100 steps, as RAGEN) lives inside the env so that the
            # class used directly behaves exactly like the registered id.
            max_episode_steps=None,
            disable_env_checker=False,
        )
