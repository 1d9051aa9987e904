"""MiniHack's tasks and NetHack (nle 1.3.0) behind the TextEnv contract: seeded by NetHack's own RNGs,
a text view of the screen, BALROG's action names, and BALROG's scores (success; progression)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

from ragen_bench.data import nethack as table
from ragen_bench.envs.base import PICTURE_METADATA, AnyText, TextEnv, text_charset
from ragen_bench.envs.baseline import SeededBaseline
from ragen_bench.envs.config import EnvConfig, OneOf, setting
from ragen_bench.envs.nethack import backend
from ragen_bench.envs.nethack.describe import STATUS_FIELDS, describe
from ragen_bench.envs.nethack.explorer import Explorer

if TYPE_CHECKING:
    import gymnasium

TASKS = (*table.MINIHACK, "NetHack")
MAX_OBSERVATION_CHARS = 8192
_MORE = b"--More--"
_WORD_BYTES = 80  # nle's screen_descriptions: 80 bytes a cell


@dataclass(frozen=True)
class NetHackConfig(EnvConfig):
    """NetHackEnv's arguments (besides ``render_mode``)."""

    task: str = setting("MazeWalk-9x9", rule=OneOf(TASKS), help="A MiniHack task of BALROG's, or NetHack itself.")


_BLANK = ord(" ")


def _text(values: np.ndarray) -> str:
    return values.tobytes().rstrip(b"\0").decode("latin-1")  # latin-1: one character a byte, so the same cut


def _fixed_bytes(rows: np.ndarray) -> np.ndarray:
    """Each row of a ``uint8`` array as one byte string (trailing NULs dropped): one decode a row, not a cell."""
    rows = np.ascontiguousarray(rows)
    return rows.view(f"S{rows.shape[-1]}").reshape(rows.shape[:-1])


class NetHackEnv(SeededBaseline, TextEnv):
    """One of BALROG's MiniHack tasks, or the full game of NetHack, seed by seed, in words.

    ## Description
    NetHack 3.6 through the NetHack Learning Environment (nle 1.3.0), and MiniHack 1.0.2's small
    tasks built on it (mazes, corridors, a lava quest), with BALROG's arguments.  The seed goes to
    NetHack's own core, display and level generators before each reset (``reset(seed=...)`` alone
    does not seed NetHack), with ``fix_moon_phase``: the moon, Friday the 13th and the night come
    from the seed, not from today's date, so a seed is the same game in any process on any day.

    ## Action Space
    ``Discrete(n)``: BALROG's names of the actions the task offers (``action_names``), such as
    ``"north"``, ``"far east"``, ``"search"``, ``"kick"``; 8 in the mazes, 32 in the Quest tasks,
    33 in NetHack.

    ## Observation Space
    ``AnyText``: NetHack's message, the map as NetHack draws it (trimmed to what was seen), the
    things NetHack names on the map (monsters, objects, stairs, doors) with their distance and
    direction from the agent, nearest first, and the status line (dungeon level, HP, experience
    level, turn, attributes, gold, hunger) (:func:`~ragen_bench.envs.nethack.describe.describe`).

    ## Starting State
    The level and character NetHack generates for the seed (a random role, ``character="@"``).

    ## Rewards
    The library's: MiniHack pays 1 on reaching the goal and -0.01 for a step in which the game
    does not advance; NetHack pays the change in its in-game score.

    ## Episode End
    Terminated when NetHack ends the episode (goal reached, death).  Truncated after BALROG's step
    limit: 100 steps in MiniHack; in NetHack 100,000 steps, or 150 steps in a row in which the
    game's clock stands still (BALROG's ``no_progress_timeout``).  A ``--More--`` prompt is
    answered for the agent where the task has the ``more`` action (BALROG's ``skip_more``).

    ## Information
    Every call: ``success`` (MiniHack: the goal reached; NetHack: ascended), ``progress`` (BALROG's score, 0 to 1:
    success as 0/1 in MiniHack, the progression so far in NetHack), ``level_seed``, ``depth``,
    ``experience_level``.  Reset adds ``optimal_length`` = None.

    ## Arguments
    ``task`` (:class:`NetHackConfig`), ``render_mode`` = ``"ansi"``, ``"rgb_array"`` (NetHack's
    16x16 tiles of the drawn part of the map) or ``None``.  nle is imported at the first reset;
    without it, ``MissingExtra`` names the ``nethack`` extra.

    ## Optimal agent
    None: ``optimal_action`` is ``None``.  ``baseline_action()`` is the text-only
    :class:`~ragen_bench.envs.nethack.explorer.Explorer` (built at reset from the level seed), which the
    ``baseline`` agent plays and ``scripts/nethack_baselines.py`` measures.

    ## Version History
    * v0: nle 1.3.0, minihack 1.0.2; NetHack's clock fixed (``backend.fixed_clock_library``) since
      2026-12-03: before, a shopkeeper's name and the draws it takes followed the wall clock, so an
      episode reaching a shop was not reproducible (the frozen panels' first observations are unchanged).
    """

    metadata = PICTURE_METADATA
    symbol_meanings: dict[str, str] = {}
    has_reference_agent = False  # no solver for MiniHack or NetHack: scripted baselines in the card

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`NetHackConfig`."""
        super().__init__(render_mode)
        self._configure(NetHackConfig, kwargs)
        minihack = self.task != "NetHack"
        self.action_names = table.MINIHACK[self.task][2] if minihack else table.NETHACK_ACTIONS
        self._step_limit = table.MINIHACK_STEPS if minihack else table.NETHACK_STEPS
        goal = (f"Your goal: {table.MINIHACK[self.task][1]}." if minihack else
                "Your goal: get as far as you can: go deeper into the dungeon and gain experience levels.")
        actions = "; ".join(f"{name}: {table.ACTION_MEANINGS[name]}" for name in self.action_names)
        self.instruction = (
            f"You are playing {'MiniHack, a small task in NetHack' if minihack else 'NetHack'}, a dungeon game drawn in "
            f"text: @ is you, > stairs down, < stairs up, letters are monsters, # corridors, | and - walls, + doors. "
            f"{goal} Each action is one of: {actions}.")
        self.observation_space = AnyText(min_length=1, max_length=MAX_OBSERVATION_CHARS, charset=_SAMPLE_CHARSET)
        self._set_action_space(spaces.Discrete(len(self.action_names)))
        self._env: gymnasium.Env | None = None
        self._named = np.zeros(0, dtype=bool)  # not backend.plain_glyphs(), once the library is loaded
        self._indices: tuple[int, ...] = ()
        self._observation: dict[str, np.ndarray] = {}
        self._text = ""
        self._steps = self._still = 0
        self._success = False
        self._progress = 0.0
        self._end = ""  # the library's end status of the last step ("death", "task successful")

    def make_baseline(self, seed: int) -> Explorer:
        return Explorer(seed)

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        if self._env is None:
            self._env = backend.make(self.task)
            self._indices = backend.action_indices(self._env, self.action_names)
            self._named = ~backend.plain_glyphs()
        backend.seed(self._env, seed)
        self._observation, _ = self._env.reset()
        self._steps = self._still = 0
        self._success, self._progress, self._end = False, 0.0, ""
        self._update()
        info = self._info()
        info["optimal_length"] = None
        return self._text, info

    def _step_action(self, action: int) -> tuple[str, float, bool, bool, dict[str, Any]]:
        assert self._env is not None
        clock = int(self._observation["blstats"][STATUS_FIELDS["time"]])
        reward, terminated, truncated = self._library_step(self._indices[action])
        more = self.action_names.index("more") if "more" in self.action_names else None
        while more is not None and not (terminated or truncated) and _MORE in self._observation["tty_chars"].tobytes():
            extra, terminated, truncated = self._library_step(self._indices[more])
            reward += extra
        if self.task == "NetHack":
            now = int(self._observation["blstats"][STATUS_FIELDS["time"]])
            self._still = self._still + 1 if now == clock else 0
            truncated = truncated or self._still >= table.NETHACK_NO_PROGRESS
        if self.task != "NetHack" and reward >= 1.0:
            self._success = True  # BALROG's test: the step's reward reaches 1
            self._progress = 1.0
        if terminated and not (self._observation["chars"] > _BLANK).any():
            # NetHack blanks the screen once the game is over: the last drawn state stays, saying why it ended.
            lines = self._text.splitlines()
            self._text = "\n".join([f"Message: The game is over ({self._end or 'ended'}).", *lines[1:]])
        else:
            self._update()
        return self._text, reward, terminated, truncated and not terminated, self._info()

    def _library_step(self, index: int) -> tuple[float, bool, bool]:
        assert self._env is not None
        self._observation, reward, terminated, truncated, info = self._env.step(index)
        self._steps += 1
        self._end = getattr(info.get("end_status"), "name", "").lower().replace("_", " ")
        if self.task == "NetHack" and info.get("is_ascended"):
            self._success = True
        return float(reward), bool(terminated), bool(truncated) or self._steps >= self._step_limit

    def _update(self) -> None:
        observation = self._observation
        blstats = observation["blstats"].tolist()
        stats = {name: blstats[index] for name, index in STATUS_FIELDS.items()}
        if self.task == "NetHack":
            self._progress = max(self._progress, table.progression(stats["depth"], stats["experience_level"]))
        chars = observation["chars"]
        screen, width = chars.tobytes().decode("latin-1"), chars.shape[1]
        rows = [screen[start:start + width] for start in range(0, len(screen), width)]
        # NetHack's words for each cell that may be worth naming (not rock, wall, floor or corridor),
        # read as fixed-width byte strings (numpy drops the padding).  ``take`` and flat indices: numpy's
        # fancy indexing of the 21x79 grid cost more than a tenth of nle's step (issue 31).
        glyphs = observation["glyphs"]
        cells = np.flatnonzero(self._named.take(glyphs))
        words = _fixed_bytes(observation["screen_descriptions"].reshape(-1, _WORD_BYTES).take(cells, axis=0)).tolist()
        columns = glyphs.shape[1]
        descriptions = {divmod(cell, columns)[::-1]: word.decode("latin-1") for cell, word in zip(cells.tolist(), words) if word}
        self._stats = stats
        self._text = describe(rows, descriptions, _text(observation["message"]), stats)[:MAX_OBSERVATION_CHARS]

    def _info(self) -> dict[str, Any]:
        return {"success": self._success, "progress": self._progress, "level_seed": self.level_seed,
                "depth": self._stats["depth"], "experience_level": self._stats["experience_level"]}

    def render_text(self) -> str:
        return self._text

    def render_rgb(self) -> np.ndarray:
        """NetHack's tiles of the map, cut to the box around what was drawn (the whole map if nothing was)."""
        glyphs, chars = self._observation["glyphs"], self._observation["chars"]
        rows, columns = np.nonzero(chars != _BLANK)
        if rows.size:
            glyphs = glyphs[rows.min():rows.max() + 1, columns.min():columns.max() + 1]
        return backend.tile_picture(glyphs)


_SAMPLE_CHARSET = text_charset("abcdefghijklmnopqrstuvwxyz -:.@#|+<>\n0123456789")
