"""FrozenLake: ``env`` (the Gymnasium env) -> ``solver`` (value iteration) -> ``levels`` (lakes, RAGEN's generator)."""

from ragen_bench.envs.frozen_lake.env import FrozenLakeConfig, FrozenLakeEnv

__all__ = ["FrozenLakeConfig", "FrozenLakeEnv"]
