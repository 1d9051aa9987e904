"""One single-player TextArena game behind the TextEnv contract, its random state isolated."""

from __future__ import annotations

from dataclasses import dataclass
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ragen_bench.envs.base import AnyText, TextEnv
from ragen_bench.envs.config import EnvConfig, OneOf, setting
from ragen_bench.envs.textarena.games import KNOWN_MOVES, SINGLE_PLAYER
from ragen_bench.envs.textarena.library import IsolatedRandom, TextArenaError, make_game, message_text, takes
from ragen_bench.envs.textarena.shown import MAX_MOVE_CHARS, MOVE_CHARSET, Inbox, MoveText

if TYPE_CHECKING:
    from textarena.core import Env

T = TypeVar("T")
MAX_OBSERVATION_CHARS = 200_000


@dataclass(frozen=True)
class TextArenaConfig(EnvConfig):
    """TextArenaEnv's arguments (besides ``render_mode``)."""

    game: str = setting(rule=OneOf(SINGLE_PLAYER), help="TextArena's id of a single-player game (registry.TA_SINGLE).")


class TextArenaEnv(TextEnv):
    """A single-player TextArena game (``textarena`` 0.7.4), the same episode for a seed in any process.

    ## Description
    TextArena's one-player games (Wordle, Minesweeper, 2048, Sudoku, Tower of Hanoi, ...) at
    the settings of TextArena's own ``<Game>-v0`` id, played through the library itself.
    TextArena seeds and draws from Python's *global* ``random``; here every call to the game
    runs on a generator of the game's own
    (:class:`~ragen_bench.envs.textarena.library.IsolatedRandom`), so an agent or a library
    drawing random numbers between steps never changes the episode, and the game never moves
    the process's generator.

    ## Action Space
    :class:`~ragen_bench.envs.textarena.shown.MoveText` of 0..2000 characters: any ``str`` is a
    move; TextArena reads the move it asks for (mostly in square brackets, ``[up]``, ``[3 2]``)
    and answers a move it cannot use as TextArena does (a warning the first time, then the game
    ends with reward -1).  A longer text or a non-``str`` raises ``InvalidActionError``.  Its
    ``valid``, what the built-in ``random`` agent draws from: for a game with a known move set
    (:data:`~ragen_bench.envs.textarena.games.KNOWN_MOVES`) the moves of it TextArena takes now,
    each tried on a copy of the game; else the bracketed moves TextArena's messages have shown (the
    newest list since the last move, else every one of the episode), legal-ish.

    ## Observation Space
    ``AnyText(1, 200000)``: the messages TextArena sent the player since its last move --
    at reset its rules and the opening board, then its answer to each move.

    ## Starting State
    What TextArena 0.7.4 deals for the seed (its ``reset(seed=...)``), the game's generator
    started from the seed.

    ## Rewards
    TextArena's outcome, paid on the last step: 1 for a solved game, the game's own share of
    progress (0..1) for an unsolved one, -1 for a game ended by invalid moves.

    ## Episode End
    Terminated when TextArena ends the game (solved, lost, its own turn limit, invalid moves).
    Never truncated.

    ## Information
    Every call: ``success`` (the outcome is 1), ``level_seed``, ``score`` (the outcome, 0
    before the end).  Reset adds ``optimal_length`` = None; step adds ``action_is_valid``
    (TextArena took the move; not the invalid one that ends the game) and ``action_is_effective``
    (the same).

    ## Arguments
    ``game`` (TextArena's id, one of :data:`~ragen_bench.envs.textarena.games.SINGLE_PLAYER`),
    ``render_mode="ansi"`` or ``None``.  Building the env imports TextArena (the
    ``textarena`` extra; a missing extra is one ``ImportError`` naming it).

    ## Version History
    * v0: textarena 0.7.4 at its ``-v0`` settings; initial observations pinned by the panels.
    """

    action_names = None
    symbol_meanings: dict[str, str] = {}
    has_reference_agent = False  # no solver for TextArena's games (docs/textarena.md)
    seed_limit = 2**32
    # Smaller panels than the default 256 per split (as reasoning-gym's): RushHour deals in about a
    # second, and `ragen-bench envs verify` deals every panel seed again.
    split_seeds = {"train": range(10_000, 10_032), "val": range(1000, 1032), "test": range(123, 187)}

    def __init__(self, *, render_mode: str | None = "ansi", **kwargs: Any) -> None:
        """``kwargs``: the fields of :class:`TextArenaConfig`."""
        super().__init__(render_mode)
        self._configure(TextArenaConfig, kwargs)
        self.instruction = (
            f"You are playing {self.game.removesuffix('-v0')}, a single-player game of TextArena. Its rules and "
            "the move format come with the first observation; answer each turn with one move written exactly "
            "in that format (usually in square brackets)."
        )
        self._rng = IsolatedRandom()
        self._game: Env = make_game(self.game, self._rng)  # also fails here, at make(), when the extra is missing
        self.observation_space = AnyText(min_length=1, max_length=MAX_OBSERVATION_CHARS, charset=MOVE_CHARSET)
        # What TextArena sent the player this episode; the action space's ``valid`` reads its moves.
        self._inbox = Inbox()
        space = MoveText(min_length=0, max_length=MAX_MOVE_CHARS, charset=MOVE_CHARSET)
        space.inbox = self._inbox
        # A game with a known move set: ``valid`` is the moves of it TextArena takes now (read when asked, once a turn).
        self._known = KNOWN_MOVES.get(self.game, ())
        self._taken: tuple[str, ...] | None = None
        if self._known:
            space.legal = self._taken_moves
        self._set_action_space(space)
        self._text = ""
        self._score = 0.0
        self._success = False

    def _call(self, what: str, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        try:
            return self._rng.call(fn, *args, **kwargs)
        except Exception as error:  # a game bug is reported with the game, seed and call, not as a bare trace
            raise TextArenaError(
                f"TextArena '{self.game}' failed in {what} (seed {self.level_seed}): {type(error).__name__}: {error}"
            ) from error

    def _reset_level(self, seed: int) -> tuple[str, dict[str, Any]]:
        self._rng.restart(seed)
        messages = self._call("reset", self._deal, seed)
        self._inbox.clear()
        self._inbox.add(messages)
        self._taken = None
        self._score, self._success = 0.0, False
        self._text = message_text(messages) or "(no message)"
        info = self._info()
        info["optimal_length"] = None
        return self._text, info

    def _step_action(self, action: str) -> tuple[str, float, bool, bool, dict[str, Any]]:
        turn = self._game.state.turn
        done, messages = self._call("step", self._play, action)
        self._inbox.moved()
        self._inbox.add(messages)
        self._taken = None
        # TextArena counts a turn only for a move it took (an invalid one is answered, not played), and also
        # the invalid move that ends the game (the second in a row), which it marks as such.
        valid = self._game.state.turn > turn and not self._game.state.game_info[0].get("invalid_move")
        reward = 0.0
        text = message_text(messages)
        if done:
            rewards, _ = self._call("close", self._game.close)
            outcome = (rewards or {0: 0.0})[0]
            reason = self._game.state.game_info[0].get("reason")
            if isinstance(outcome, str):
                # Countdown, Slitherlink and others pass (reward, reason) to set_invalid_move, whose order
                # is (reason, reward): the reward they meant is in the reason ("Invalid Move: 0.25").
                outcome, reason = _meant_reward(str(reason)), outcome
            self._score = reward = float(outcome)
            self._success = self._score == 1.0
            text = "\n\n".join(part for part in (text, str(reason or "")) if part)
        self._text = text or ("The game is over." if done else "(no new message)")
        info = self._info()
        info["action_is_valid"] = info["action_is_effective"] = valid
        return self._text, reward, bool(done), False, info

    # One isolated call a reset or step: the move and the messages it brings.

    def _deal(self, seed: int) -> list[Any]:
        self._game.reset(num_players=1, seed=seed)
        return self._game.get_observation()[1]

    def _play(self, action: str) -> tuple[bool, list[Any]]:
        done, _ = self._game.step(action)
        return done, self._game.get_observation()[1]

    def _taken_moves(self) -> tuple[str, ...]:
        """The moves of the game's known set TextArena takes now, each tried on a copy (none once it has ended)."""
        if self._taken is None:
            over = self._game.state.done
            self._taken = () if over else tuple(move for move in self._known if takes(self._rng, self._game, move, 0))
        return self._taken

    def render_text(self) -> str:
        return self._text

    def _check_action(self, action: Any) -> str:
        # The common case without the base class's message building (a step is tens of microseconds).
        if action.__class__ is str and len(action) <= MAX_MOVE_CHARS:
            return action
        return str(super()._check_action(action))

    def _info(self) -> dict[str, Any]:
        return {"success": self._success, "level_seed": self.level_seed, "score": self._score}


def _meant_reward(swapped_reason: str) -> float:
    """The reward a game meant when it swapped set_invalid_move's arguments (TextArena's -1 if none is there)."""
    try:
        return float(swapped_reason.rpartition(":")[2])
    except ValueError:
        return -1.0

