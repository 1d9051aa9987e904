"""BabyAI (minigrid 3.2.0): ``env`` (the Gymnasium env) -> ``describe`` (its text view) and ``backend`` (the library)."""

from ragen_bench.envs.babyai.backend import LEVELS
from ragen_bench.envs.babyai.env import BabyAIConfig, BabyAIEnv

__all__ = ["LEVELS", "BabyAIConfig", "BabyAIEnv"]
