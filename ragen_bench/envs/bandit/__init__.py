"""Bandit: one module, ``env`` (no generator or solver: the seed only orders the arms)."""

from ragen_bench.envs.bandit.env import BanditConfig, BanditEnv

__all__ = ["BanditConfig", "BanditEnv"]
