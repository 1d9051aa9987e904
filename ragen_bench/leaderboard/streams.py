"""What makes a sampling stream (the seed an agent sampled with and its temperature), and its name.

Apart from :mod:`ragen_bench.leaderboard.pooled` so that ``verify`` (which checks a
submission's extra streams) can read a stream without importing the statistics that import it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# The config keys that make a stream; the only ones pairs may differ in.
STREAM_KEYS = (("sampling_seed",), ("agent", "sampling_seed"), ("agent", "temperature"))


def stream_of(config: Mapping[str, Any]) -> dict[str, Any]:
    """The seed the agent sampled with and its temperature.

    The agent's own ``agent.sampling_seed`` when it has one (the value it was built with; the
    top-level key only fills it in when the config is composed), else the top-level ``sampling_seed``.
    """
    agent = config.get("agent", {})
    return {"sampling_seed": agent.get("sampling_seed", config.get("sampling_seed")),
            "agent.temperature": agent.get("temperature")}


def stream_name(config: Mapping[str, Any]) -> str:
    """``T=0.5 seed 961660578``, ``greedy`` (whose sampling seed draws nothing), or ``seed 7`` (no temperature)."""
    stream = stream_of(config)
    temperature, seed = stream["agent.temperature"], stream["sampling_seed"]
    if temperature == 0:
        return "greedy"
    # A scripted agent has no temperature: its stream is its seed alone.
    return f"seed {seed}" if temperature is None else f"T={temperature:g} seed {seed}"


def without_keys(config: Mapping[str, Any], drop: Sequence[tuple[str, ...]] = STREAM_KEYS) -> dict[str, Any]:
    """A copy of ``config`` (two levels deep) without the ``drop`` keys: by default what is left once the stream is."""
    trimmed = {name: dict(value) if isinstance(value, Mapping) else value for name, value in config.items()}
    for *section, last in drop:
        holder = trimmed.get(section[0]) if section else trimmed
        if isinstance(holder, dict):
            holder.pop(last, None)
    return trimmed
