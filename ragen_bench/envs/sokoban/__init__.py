"""Sokoban: ``env`` (the Gymnasium env) -> ``solver`` (shortest plans) -> ``levels`` (RAGEN's generator)."""

from ragen_bench.envs.sokoban.env import SokobanConfig, SokobanEnv

__all__ = ["SokobanConfig", "SokobanEnv"]
