"""MiniHack's tasks and NetHack (nle 1.3.0, minihack 1.0.2): ``env`` (the Gymnasium env) ->
``describe`` (its text view) and ``backend`` (the libraries)."""

from ragen_bench.envs.nethack.env import TASKS, NetHackConfig, NetHackEnv

__all__ = ["TASKS", "NetHackConfig", "NetHackEnv"]
