"""Crafter (crafter 1.8.3): ``env`` (the Gymnasium env) -> ``describe`` (its text view) and ``backend`` (the library)."""

from ragen_bench.envs.crafter.env import CrafterConfig, CrafterEnv

__all__ = ["CrafterConfig", "CrafterEnv"]
