"""2048: ``env`` (the Gymnasium env) -> ``search`` (expectimax) -> ``board`` (slides, merges, spawns)."""

from ragen_bench.envs.game_2048.env import Game2048Config, Game2048Env

__all__ = ["Game2048Config", "Game2048Env"]
