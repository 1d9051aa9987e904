"""Guess the face of a seeded coin: the smallest family that keeps ragen-bench's contract."""

from dataclasses import dataclass
from typing import Any

from gymnasium import spaces

from ragen_bench.envs.base import TextEnv, TextObservation, text_charset
from ragen_bench.envs.config import EnvConfig, IntIn, setting

FACES = ("heads", "tails", "edge")


@dataclass(frozen=True)
class CoinGuessConfig(EnvConfig):
    """CoinGuessEnv's arguments (besides ``render_mode``)."""

    sides: int = setting(2, rule=IntIn(2, len(FACES)), help="How many faces the coin has.")


class CoinGuessEnv(TextEnv):
    """One guess; reward 1 when it names the face the seed shows."""

    instruction = "A coin has been tossed. Guess the face it shows."

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        super().__init__(render_mode)
        config = self._configure(CoinGuessConfig, kwargs)  # refuses bad arguments by name
        self.action_names = FACES[: config.sides]
        self._set_action_space(spaces.Discrete(config.sides))
        texts = ["Which face is up?", "Right.", "Wrong."]
        self.observation_space = TextObservation(max_length=20, charset=text_charset(*texts))
        self._text = ""

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        self._face = seed % self.sides  # the seed alone decides the episode
        self._text = "Which face is up?"
        return self._text, {"success": False, "level_seed": seed}

    def _step_action(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        right = action == self._face
        self._text = "Right." if right else "Wrong."
        return self._text, float(right), True, False, {"success": right, "level_seed": self.level_seed}

    def render_text(self) -> str:
        return self._text

    def optimal_action(self, steps_left: int | None = None) -> int | None:
        return self._face if self._text == "Which face is up?" else None
