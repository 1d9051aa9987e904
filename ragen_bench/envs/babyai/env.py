"""BabyAI levels (minigrid 3.2.0) behind the TextEnv contract: a text view of the agent's 7x7 view,
actions by BALROG's names, minigrid's BabyAIBot as the optimal agent."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from ragen_bench.envs.babyai import backend
from ragen_bench.envs.babyai.describe import describe_view
from ragen_bench.envs.base import PICTURE_METADATA, AnyText, TextEnv, text_charset
from ragen_bench.envs.config import EnvConfig, OneOf, setting

if TYPE_CHECKING:
    from minigrid.envs.babyai.core.roomgrid_level import RoomGridLevel
    from minigrid.utils.baby_ai_bot import BabyAIBot

# minigrid's seven actions (Actions: left, right, forward, pickup, drop, toggle, done), by BALROG's names.
ACTION_NAMES = ("turn left", "turn right", "go forward", "pick up", "drop", "toggle", "done")
ACTION_MEANINGS = (
    "turn to the left",
    "turn to the right",
    "take one step forward",
    "pick up the object one step in front of you",
    "drop the object you carry in the cell in front of you",
    "open, close or unlock the door in front of you, or open the box there",
    "do nothing (minigrid's no-op)",
)
MAX_OBSERVATION_CHARS = 4096


@dataclass(frozen=True)
class BabyAIConfig(EnvConfig):
    """BabyAIEnv's arguments (besides ``render_mode``)."""

    level: str = setting("GoToLocal", rule=OneOf(tuple(backend.LEVELS)), help="Which minigrid BabyAI level.")


class BabyAIEnv(TextEnv):
    """One BabyAI level of minigrid 3.2.0, seed by seed, in words.

    ## Description
    BabyAI (Chevalier-Boisvert et al., 2019) as minigrid 3.2.0 ships it: a grid world where
    the agent follows a mission in a small language ("go to the red ball", "open the door",
    "put the grey key next to the blue box").  The level is minigrid's own, at its own
    defaults (room size, distractors, ``max_steps``); the seed is minigrid's
    ``reset(seed=...)``, so every seed gives the same layout and mission in every process.

    ## Action Space
    ``Discrete(7)``: minigrid's actions by BALROG's names, ``action_names`` =
    ``("turn left", "turn right", "go forward", "pick up", "drop", "toggle", "done")``.

    ## Observation Space
    ``AnyText``: the mission, the agent's heading, what it carries, then the objects in its
    7x7 egocentric view (colour, kind, door state) with their positions relative to it
    ("2 steps forward and 1 step to the left"), nearest first, and the nearest wall straight
    ahead, left and right (:func:`~ragen_bench.envs.babyai.describe.describe_view`).  Cells
    behind walls and closed doors are unseen, as in minigrid's own view.

    ## Starting State
    minigrid's level generator for the seed.

    ## Rewards
    minigrid's: ``1 - 0.9 * steps / max_steps`` on success, else 0.

    ## Episode End
    Terminated on success or on a failed mission (minigrid's verifier: picking up or opening
    the wrong thing where the instruction forbids it); truncated after the level's
    ``max_steps``.

    ## Information
    Every call: ``success``, ``level_seed``, ``mission``.  Reset adds ``optimal_length`` = None
    (the bot's plans are not proved shortest).

    ## Arguments
    ``level`` (:class:`BabyAIConfig`), ``render_mode`` = ``"ansi"``, ``"rgb_array"``
    (minigrid's own picture of the whole grid) or ``None``.  minigrid is imported at the first
    reset; without it, ``MissingExtra`` names the ``babyai`` extra.

    ## Optimal agent
    ``optimal_action`` is minigrid's ``BabyAIBot``, replanned after each step, while every
    action so far was the one it gave (then ``None``).

    ## Version History
    * v0: minigrid 3.2.0.
    """

    metadata = PICTURE_METADATA
    action_names = ACTION_NAMES
    symbol_meanings: dict[str, str] = {}

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`BabyAIConfig`."""
        super().__init__(render_mode)
        self._configure(BabyAIConfig, kwargs)
        actions = "; ".join(f"{name}: {meaning}" for name, meaning in zip(ACTION_NAMES, ACTION_MEANINGS))
        self.instruction = (
            "You are an agent in a grid world of rooms, walls, doors, keys, balls and boxes. Carry out the "
            "mission given with each observation; you see only a 7x7 square ahead of you and cannot see "
            f"through walls or closed doors. Each action is one of: {actions}."
        )
        self.observation_space = AnyText(min_length=1, max_length=MAX_OBSERVATION_CHARS, charset=_SAMPLE_CHARSET)
        self._set_action_space(spaces.Discrete(len(ACTION_NAMES)))
        self._level: RoomGridLevel | None = None
        self._bot: BabyAIBot | None = None
        self._bot_due = False  # no step yet this episode: a bot may still be built
        self._planned: int | None = None  # the bot's action for the current state, once asked
        self._last_action: int | None = None  # the action the bot saw taken last (None at the start)
        self._consulted = False
        self._success = False
        self._text = ""

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        if self._level is None:
            # minigrid draws only in rgb_array mode, and only when asked: render_rgb works whatever our
            # render_mode (chat.images asks for the picture of an env made without one).
            self._level = backend.make_level(self.level, "rgb_array")
        observation = backend.quiet_reset(self._level, seed)
        # The bot is built at the first optimal_action, if that comes before the first step (it reads the
        # level as reset left it, and draws nothing); an episode nobody consults never pays for it.
        self._bot, self._bot_due = None, True
        self._planned = self._last_action = None
        self._consulted = False  # whether optimal_action was asked this episode
        self._success = False
        self._show(observation)
        info = self._info()
        info["optimal_length"] = None
        return self._text, info

    def _step_action(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        assert self._level is not None
        # The bot follows the episode only while each action is the one it plans for that state.  Once
        # someone follows it (the optimal agent plans several actions a turn on a copy, then plays them
        # here), it is asked for each action it was not asked for; an episode nobody consults drops it
        # at its first step, without the cost of a plan.
        if self._bot is not None and (not self._consulted or action != self.optimal_action()):
            self._bot = None
        self._bot_due = False
        self._planned, self._last_action = None, action
        observation, reward, terminated, truncated, _ = self._level.step(action)
        self._success = bool(terminated and reward > 0)
        self._show(observation)
        return self._text, float(reward), bool(terminated), bool(truncated), self._info()

    def _show(self, observation: dict[str, Any]) -> None:
        assert self._level is not None
        carried = self._level.carrying
        carrying = None if carried is None else f"a {carried.color} {carried.type}"
        self._text = describe_view(observation["image"], int(observation["direction"]), observation["mission"], carrying)

    def _info(self) -> dict[str, Any]:
        assert self._level is not None
        return {"success": self._success, "level_seed": self.level_seed, "mission": self._level.mission}

    def render_text(self) -> str:
        return self._text

    def render_rgb(self) -> np.ndarray:
        """minigrid's picture of the whole level, the agent's view highlighted."""
        assert self._level is not None
        return self._level.render()

    def optimal_action(self, steps_left: int | None = None) -> int | None:
        """BabyAIBot's action for this state, while every action so far was the bot's (else ``None``)."""
        if self.episode_finished:
            return None
        if self._bot is None:
            if not self._bot_due:
                return None
            self._bot, self._bot_due = backend.make_bot(self._level), False
        self._consulted = True
        if self._planned is None:
            self._planned = int(self._bot.replan(self._last_action))
        return self._planned


_SAMPLE_CHARSET = text_charset("abcdefghijklmnopqrstuvwxyz -:.\n0123456789")
