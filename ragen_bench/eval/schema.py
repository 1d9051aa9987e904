"""What an eval config may hold: its keys, their defaults and limits, and the error a bad one raises.

The ground floor of the eval config, imported by every module that reads one:
:mod:`.compose` (Hydra), :mod:`.config` (validation), :mod:`.targets` (suite -> targets)
and :mod:`.derive` (what a validated config implies).  It imports nothing of the harness.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ragen_bench import values

# Top-level keys of configs/eval.yaml; anything else is a typo or a key nothing reads.
KEYS = (
    "env", "suite", "split", "samples", "sampling_seed", "limit", "shard", "lockstep_episodes",
    "env_kwargs", "out", "progress", "chat", "agent",
)
# Keys only multi-agent games read (ragen_bench.eval.games); a config may lack them (runs
# recorded before they existed), and a single-agent run leaves them out of its identity.
GAME_KEYS = ("opponent", "game")
GAME_DEFAULTS: dict[str, Any] = {"opponent": None, "game": {"max_retries": 2, "on_illegal": "forfeit"}}
# Keys saying where a run is played (ragen_bench.integrations.ray), not what it computes:
# free keys (below), so any launcher resumes any run.  A config may lack them (manifests
# never record them).
LAUNCH_KEYS = ("launcher", "workers", "ray")
# Keys that do not change what a run computes: where it is written, whether a progress bar
# is drawn, where it is played.  They stay out of the run's identity (and so out of its
# manifest), and a run may be resumed with other values for them (ragen_bench.runfiles.identity).
FREE_KEYS = ("out", "progress", *LAUNCH_KEYS)
LAUNCH_DEFAULTS: dict[str, Any] = {
    "launcher": "local", "workers": 1, "ray": {"address": None, "gpus_per_worker": None},
}
LAUNCHERS = ("local", "ray")
# One Ray actor per worker, each playing one shard; far beyond any cluster this targets.
MAX_WORKERS = 4096
# launcher=ray: GPUs one worker may ask for (its agent's model on one node's cards).
MAX_GPUS_PER_WORKER = 8


# The plan holds every episode up front; a huge sample count would stall before the
# first episode.  pass@k estimates need far fewer samples per seed than this.
MAX_SAMPLES = 10_000


class ConfigError(ValueError):
    """The eval config is unusable as given; the message names the key and value."""


def parse_shard(text: Any) -> tuple[int, int]:
    """``"i/n"`` -> ``(i, n)`` with ``0 <= i < n``."""
    match = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text) if isinstance(text, str) else None
    if not match:
        raise ConfigError(f"shard must look like 'i/n' (e.g. 0/4), got {text!r}")
    index, count = int(match[1]), int(match[2])
    if not 0 <= index < count:
        raise ConfigError(f"shard index must be in 0..{count - 1}, got {text!r}")
    return index, count


def require_int(key: str, value: Any, minimum: int, maximum: int | None = None, *, optional: bool = False) -> None:
    if optional and value is None:
        return
    if not values.is_int(value) or value < minimum or (maximum is not None and value > maximum):
        allowed = f"an integer >= {minimum}" if maximum is None else f"an integer in {minimum}..{maximum}"
        raise ConfigError(f"{key} must be {allowed}{' or null' if optional else ''}, got {value!r}")


def require_type(key: str, value: Any, kind: type, label: str, *, optional: bool = False) -> None:
    if not (isinstance(value, kind) or (optional and value is None)):
        raise ConfigError(f"{key} must be {label}{' or null' if optional else ''}, got {value!r}")


def data_files(env_kwargs: Mapping[str, Any]) -> dict[str, str]:
    """The env arguments that name a data file (``data_path`` and other ``*_path`` keys)."""
    return {key: value for key, value in env_kwargs.items() if key == "path" or key.endswith("_path")}
