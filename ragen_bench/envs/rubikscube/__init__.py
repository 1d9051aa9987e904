"""RAGEN-2's 2x2 Rubik's cube.

``env`` (the Gymnasium env) -> ``solver`` (optimal plans) -> ``cube`` (stickers, turns, scramble).
"""

from ragen_bench.envs.rubikscube.env import RubiksCubeConfig, RubiksCubeEnv

__all__ = ["RubiksCubeConfig", "RubiksCubeEnv"]
