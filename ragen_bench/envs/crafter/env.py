"""Crafter (crafter 1.8.3) behind the TextEnv contract: a text view of the map around the player,
actions by BALROG's names, crafter's own reward, and the achievements as the progress (BALROG's score)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from ragen_bench.data.crafter import ACHIEVEMENTS, MAX_STEPS
from ragen_bench.envs.base import PICTURE_METADATA, AnyText, TextEnv, text_charset
from ragen_bench.envs.baseline import SeededBaseline
from ragen_bench.envs.config import EnvConfig, IntIn, setting
from ragen_bench.envs.crafter import backend
from ragen_bench.envs.crafter.collector import Collector
from ragen_bench.envs.crafter.describe import cells_around, describe_cells

if TYPE_CHECKING:
    from crafter import Env

# crafter's 17 actions (data.yaml order), by BALROG's names, and what each does.
ACTION_NAMES = (
    "Noop", "Move West", "Move East", "Move North", "Move South", "Do", "Sleep", "Place Stone", "Place Table",
    "Place Furnace", "Place Plant", "Make Wood Pickaxe", "Make Stone Pickaxe", "Make Iron Pickaxe",
    "Make Wood Sword", "Make Stone Sword", "Make Iron Sword",
)
ACTION_MEANINGS = (
    "wait a step", "step west (or turn west where blocked)", "step east", "step north", "step south",
    "act on what is in front of you: collect a material, drink water, hit a creature, eat a ripe plant",
    "sleep until your energy is full", "put a stone in front of you (1 stone)",
    "put a table in front of you (2 wood)", "put a furnace in front of you (4 stone)",
    "plant a sapling on the grass in front of you",
    "make a wood pickaxe (near a table; 1 wood)", "make a stone pickaxe (near a table; 1 wood, 1 stone)",
    "make an iron pickaxe (near a table and a furnace; 1 wood, 1 coal, 1 iron)",
    "make a wood sword (near a table; 1 wood)", "make a stone sword (near a table; 1 wood, 1 stone)",
    "make an iron sword (near a table and a furnace; 1 wood, 1 coal, 1 iron)",
)
PICTURE_SIZE = 256  # BALROG's crafter_kwargs size
MAX_OBSERVATION_CHARS = 4096


@dataclass(frozen=True)
class CrafterConfig(EnvConfig):
    """CrafterEnv's arguments (besides ``render_mode``)."""

    max_steps: int = setting(MAX_STEPS, rule=IntIn(1, MAX_STEPS), help="Steps before the episode is truncated "
                             "(crafter's own length, 10000, by default).")


class CrafterEnv(SeededBaseline, TextEnv):
    """Crafter of crafter 1.8.3, seed by seed, in words.

    ## Description
    Crafter (Hafner, 2021): a 64x64 procedurally generated survival world where the player
    gathers wood, stone, coal, iron and diamonds, crafts tools at tables and furnaces, keeps its
    food, drink and energy up and fights zombies and skeletons.  The world, the rules and the
    reward are crafter's own at BALROG's settings (64x64 area, 9x9 view); the seed ``s`` is
    crafter's ``Env(seed=s)`` first episode, and creatures are balanced in position order so
    that the same seed and actions give the same episode in every process (crafter#31, #36).

    ## Action Space
    ``Discrete(17)``: crafter's actions by BALROG's names (``action_names``: ``"Noop"``,
    ``"Move West"``, ..., ``"Make Iron Sword"``).

    ## Observation Space
    ``AnyText``: what is in front of the player, its vitals (health, food, drink, energy out of
    9), its inventory, the nearest cell of each kind in the 9x7 window crafter's picture shows
    (with compass steps: ``"tree 2 steps north and 1 step east (5 in view)"``) and the
    achievements unlocked so far (:func:`~ragen_bench.envs.crafter.describe.describe`).

    ## Starting State
    crafter's world for the seed, the player in the middle of the map facing south.

    ## Rewards
    crafter's: +1 the first time each achievement is unlocked, plus the change in health / 10.

    ## Episode End
    Terminated when the player dies (health 0); truncated after ``max_steps`` (crafter's 10000).

    ## Information
    Every call: ``success`` (all 22 achievements unlocked), ``level_seed``, ``achievements``
    (crafter's counts, every achievement), ``progress`` (BALROG's score: the share of the 22 unlocked,
    0 to 1; eval's records and tables carry it).  Reset adds ``optimal_length`` = None.

    ## Arguments
    ``max_steps`` (:class:`CrafterConfig`), ``render_mode`` = ``"ansi"``, ``"rgb_array"``
    (crafter's own 256x256 picture: the 9x7 view and the inventory) or ``None``.  crafter is
    imported at the first reset; without it, ``MissingExtra`` names the ``crafter`` extra.

    ## Optimal agent
    None.  ``baseline_action()`` is the scripted :class:`~ragen_bench.envs.crafter.collector.Collector`
    (built at reset from the level seed; it reads crafter's map), measured in the card; the ``baseline``
    agent plays it.

    ## Version History
    * v0: crafter 1.8.3.
    """

    metadata = PICTURE_METADATA
    action_names = ACTION_NAMES
    symbol_meanings: dict[str, str] = {}
    has_reference_agent = False  # Crafter has no optimal agent: the collector is a baseline

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`CrafterConfig`."""
        super().__init__(render_mode)
        self._configure(CrafterConfig, kwargs)
        actions = "; ".join(f"{name}: {meaning}" for name, meaning in zip(ACTION_NAMES, ACTION_MEANINGS))
        self.instruction = (
            "You play Crafter, a 2D survival world seen from above. Unlock as many of its 22 achievements as you "
            "can (collect wood, saplings, drink, stone, coal, iron and diamonds; place a table, furnace, stone "
            "and plant; make wood, stone and iron pickaxes and swords; eat a cow and a plant; defeat a zombie "
            "and a skeleton; wake up after sleeping) and stay alive: food, drink and energy fall over time and "
            "health falls when any is empty. Better tools need the one before: a wood pickaxe mines stone, a "
            "stone pickaxe iron, an iron pickaxe diamonds. Moving into something you cannot enter turns you to "
            f"face it. Each action is one of: {actions}."
        )
        self.observation_space = AnyText(min_length=1, max_length=MAX_OBSERVATION_CHARS, charset=_SAMPLE_CHARSET)
        self._set_action_space(spaces.Discrete(len(ACTION_NAMES)))
        self._world: Env | None = None
        self._text = ""

    @property
    def world(self) -> Env:
        """The crafter ``Env`` playing the episode (after a reset)."""
        assert self._world is not None
        return self._world

    def make_baseline(self, seed: int) -> Collector:
        return Collector(seed)

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        if self._world is None:
            self._world = backend.make_world(self.max_steps, PICTURE_SIZE)
        self._world.reset_to(seed)
        self._show(self._world._sem_view())
        info = self._info()
        info["optimal_length"] = None
        return self._text, info

    def _step_action(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        _, reward, done, crafter_info = self.world.step(action)
        self._show(crafter_info["semantic"])
        dead = self.world._player.health <= 0
        return self._text, float(reward), bool(dead), bool(done and not dead), self._info()

    def _show(self, semantic: np.ndarray) -> None:
        player = self.world._player
        unlocked = [name for name in ACHIEVEMENTS if player.achievements[name] > 0]
        cells = cells_around(semantic, (int(player.pos[0]), int(player.pos[1])))
        self._text = describe_cells(cells, player.facing, player.inventory, sleeping=player.sleeping, unlocked=unlocked)

    def _info(self) -> dict[str, Any]:
        achievements = dict(self.world._player.achievements)
        unlocked = sum(count > 0 for count in achievements.values())
        return {"success": unlocked == len(ACHIEVEMENTS), "level_seed": self.level_seed,
                "achievements": achievements, "progress": unlocked / len(ACHIEVEMENTS)}

    def render_text(self) -> str:
        return self._text

    def render_rgb(self) -> np.ndarray:
        """crafter's own picture (256x256): the 9x7 view around the player above its inventory.

        Drawing it never changes the episode (crafter's night noise draws from the world's random state).
        Copied to C order: crafter hands back a transposed view, and every picture of the contract is C-contiguous."""
        return np.ascontiguousarray(self.world.picture())


_SAMPLE_CHARSET = text_charset("abcdefghijklmnopqrstuvwxyz ,.:;()/\n0123456789")
