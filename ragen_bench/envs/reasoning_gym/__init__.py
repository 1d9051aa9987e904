"""reasoning-gym's datasets: ``ids`` (the frozen id table, imports nothing) -> ``env`` (the env; the
library itself loads only when an env is built)."""

from ragen_bench.envs.reasoning_gym.env import ReasoningGymConfig, ReasoningGymEnv

__all__ = ["ReasoningGymConfig", "ReasoningGymEnv"]
