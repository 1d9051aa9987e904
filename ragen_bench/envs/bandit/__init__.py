"""Bandit: one module, ``env`` (no generator or solver: the seed only orders the arms)."""

from ragen_bench.envs.bandit.env import BanditEnv

__all__ = ["BanditEnv"]
