"""TextWorld (textworld 1.7.0): ``env`` (the Gymnasium env and its text view) -> ``backend`` (the library and the frozen games)."""

from ragen_bench.envs.textworld.env import TextWorldConfig, TextWorldEnv, game_text

__all__ = ["TextWorldConfig", "TextWorldEnv", "game_text"]
