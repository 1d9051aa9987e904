"""TextWorld-Express: ``env`` (the Gymnasium env) -> ``backend`` (the library and its JVM, loaded at the first reset)."""

from ragen_bench.envs.textworld_express.backend import GAMES, TWXUnavailableError
from ragen_bench.envs.textworld_express.env import TextWorldExpressConfig, TextWorldExpressEnv

__all__ = ["GAMES", "TWXUnavailableError", "TextWorldExpressConfig", "TextWorldExpressEnv"]
