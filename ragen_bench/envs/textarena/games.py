"""TextArena's games as ids: the frozen tables (``ragen_bench/data/textarena.py``) the env and the tests share."""

from __future__ import annotations

from ragen_bench.data import textarena

SINGLE_PLAYER: tuple[str, ...] = tuple(textarena.SINGLE_PLAYER)
LEFT_OUT: dict[str, str] = textarena.LEFT_OUT
FAMILY = "textarena"


def env_id(game: str) -> str:
    """The registered id of a single-player game (``2048-v0`` -> ``RAGEN/TA-2048-v0``)."""
    return f"RAGEN/TA-{game.removesuffix('-v0')}-v0"
