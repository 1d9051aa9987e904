"""The shared machinery of two-player, turn-based board games on PettingZoo's AEC API.

A game states only its rules (:class:`BoardRules`); :class:`BoardGameEnv` turns them
into an ``AECEnv`` the way PettingZoo's classic games look, so PettingZoo's own
``api_test`` and ``seed_test`` apply:

* agents ``player_0`` (moves first) and ``player_1``;
* observation ``{"observation": int8 planes (rows, cols, 2), "action_mask": int8}``,
  plane 0 holding the observer's own stones and plane 1 the opponent's;
* the mask is all zeros for the agent not on move and once the game is over;
* a win is +1 for the winner and -1 for the loser, a draw 0 for both.

LLM agents read :meth:`BoardGameEnv.text_observation` instead of the planes: the
board as text, whose turn it is and the names of the legal moves.  ``action_names``
gives each ``Discrete`` action's name.

Illegal moves: the raw env raises :class:`IllegalMoveError` naming the agent and the
move; :func:`wrap` (what every game's ``env()`` returns) ends the game instead, with
-1 for the agent that moved illegally and 0 for the other, as the classic games do.
An action that is no move at all (``True``, ``None``, a string, an int outside the
action range) raises the raw env's :class:`IllegalMoveError` through ``env()`` too
(:class:`ActionCheckWrapper`).

What every game shares, board games, the Prisoner's Dilemma and the OpenSpiel games alike
(:class:`GameContract`): the seed contract; :class:`GameResetNeededError` for a call that
needs a position before the first ``reset()``; :class:`UnknownAgentError` for an agent name
that is no seat of the game; and copies (``copy.deepcopy``, ``pickle``) that hold the
position, so a copy goes on exactly as the original does.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from ragen_bench.envs.base import ResetNeededError, SeedContract

if TYPE_CHECKING:
    from pettingzoo.utils.wrappers.order_enforcing import AECOrderEnforcingIterable

AGENTS = ("player_0", "player_1")


class IllegalMoveError(ValueError):
    """A move the current position does not allow (occupied cell, full column, not an int)."""


class GameResetNeededError(ResetNeededError, AssertionError):
    """A game asked for its position (``observe``, ``step``, ``legal_moves`` ...) before its first ``reset()``.

    The single-agent envs' :class:`~ragen_bench.envs.base.ResetNeededError`, and an
    ``AssertionError`` as PettingZoo's order checks raise for the same mistake, so code
    written against either catches it.
    """


class UnknownAgentError(ValueError, KeyError):
    """An agent name that is no seat of the game; the message names it and lists the seats.

    Also a ``KeyError``: that is what looking an unknown agent up in ``observation_spaces`` raised.
    """

    def __str__(self) -> str:
        # KeyError's own str() would print the message in quotes, as a repr.
        return str(self.args[0]) if self.args else ""


class BoardRules:
    """A position of one game and its rules; subclasses fill in every method.

    ``cells[r][c]`` is 0 (empty), 1 (first player) or 2 (second player).
    """

    rows: ClassVar[int]
    cols: ClassVar[int]
    action_names: ClassVar[tuple[str, ...]]
    max_seat_moves: ClassVar[int]  # the most moves one seat can make in a game

    def __init__(self) -> None:
        self.cells = np.zeros((self.rows, self.cols), dtype=np.int8)
        self.moves: list[int] = []

    def legal_moves(self) -> list[int]:
        raise NotImplementedError

    def play(self, move: int, player: int) -> None:
        """Put ``player``'s stone (1 or 2) for ``move``, already known to be legal."""
        raise NotImplementedError

    def winner(self) -> int:
        """1 or 2 when that player has won, else 0."""
        raise NotImplementedError

    def board_text(self) -> str:
        raise NotImplementedError


class GameContract(SeedContract):
    """What every game shares; its errors start with the game's ``metadata["name"]``.

    * the single-agent envs' seed contract (:class:`~ragen_bench.envs.base.SeedContract`);
    * :meth:`_require_reset`: a call that needs a position refuses to run before the
      first ``reset()`` (a game's ``reset`` ends by setting ``_game_started``);
    * :meth:`_check_agent`: an agent name must be one of ``possible_agents``;
    * ``__getstate__``/``__setstate__``: a copy holds the whole position.  A game's state is
      its instance dict, every value of which pickles (the OpenSpiel games' ``pyspiel`` game
      and state included), so ``copy.deepcopy`` and ``pickle`` give a game that goes on
      exactly as the original (same observations, rewards, legal moves and generator draws
      after the same moves).  Being first in the bases, they also override shimmy's
      ``EzPickle``, which would build a fresh, never-reset env from constructor arguments.
    """

    metadata: ClassVar[dict[str, Any]]
    possible_agents: list[str]
    _game_started = False

    def _owner(self) -> str:
        return self.metadata["name"]

    def _require_reset(self, call: str) -> None:
        if not self._game_started:
            raise GameResetNeededError(f"{self._owner()}: call reset() before {call}()")

    def _check_agent(self, agent: Any) -> str:
        return check_agent(self._owner(), agent, self.possible_agents)

    def _live_agent(self, agent: Any, call: str) -> str:
        """``agent``, for a ``call`` that reads the position: refused before the first reset and for an unknown name."""
        self._require_reset(call)
        return self._check_agent(agent)

    def _mover(self, action: Any) -> str | None:
        """A turn-based game's ``step`` opening: the agent on move, ``action`` checked (``check_action``); ``None``
        when that agent is finished and the step was PettingZoo's dead step (``_was_dead_step``)."""
        self._require_reset("step")
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)  # type: ignore[attr-defined]
            return None
        self.check_action(agent, action)  # type: ignore[attr-defined]
        return agent

    def __getstate__(self) -> dict[str, Any]:
        return dict(self.__dict__)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)


def check_agent(game: str, agent: Any, agents: Sequence[str]) -> str:
    """``agent`` if it is one of ``agents``; else :class:`UnknownAgentError` naming it, the game and the seats."""
    # A str test first: ``in`` on an array or other odd value could raise something less clear.
    if isinstance(agent, str) and agent in agents:
        return agent
    shown = repr(agent) if len(repr(agent)) <= 80 else repr(agent)[:77] + "..."
    raise UnknownAgentError(f"{game}: unknown agent {shown}; the agents are {', '.join(agents)}")


def player_mark(player: int) -> str:
    return "XO"[player - 1]


class BoardGameEnv(GameContract, AECEnv):
    """AEC env over :class:`BoardRules` (see the module docstring); subclasses set ``rules``, ``metadata``, ``instruction``."""

    rules: ClassVar[type[BoardRules]]
    instruction: ClassVar[str]
    metadata: ClassVar[dict[str, Any]]
    # The game's picture of ``board.cells`` (its ``picture.draw``), for ``render_mode="rgb_array"``.
    draw_board: ClassVar[Callable[[np.ndarray], np.ndarray]]

    def __init__(self, render_mode: str | None = None) -> None:
        super().__init__()
        modes = self.metadata["render_modes"]
        if render_mode is not None and render_mode not in modes:
            raise ValueError(f"{self.metadata['name']}: render_mode must be None or one of {modes}, got {render_mode!r}")
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.agents = list(AGENTS)
        rules = self.rules
        self.action_names = rules.action_names
        self.max_seat_moves = rules.max_seat_moves
        board = spaces.Box(0, 1, shape=(rules.rows, rules.cols, 2), dtype=np.int8)
        mask = spaces.Box(0, 1, shape=(len(rules.action_names),), dtype=np.int8)
        self.observation_spaces = {a: spaces.Dict({"observation": board, "action_mask": mask}) for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(len(rules.action_names)) for a in AGENTS}
        self.board = rules()
        self._start()

    def _start(self) -> None:
        start_seats(self)

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self._check_agent(agent)]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new game from the empty board.

        The rules hold no chance, so the seed changes no position: it seeds
        ``np_random``, which the built-in opponents use to break ties between equally
        good moves.  Seeds are checked as the single-agent envs' are (:class:`GameSeeds`);
        without one, ``np_random`` runs on from the last seeded reset.
        """
        self._seed_generator(self._check_seed(seed))
        self.board = self.rules()
        self._start()
        self._game_started = True

    @property
    def game_over(self) -> bool:
        return any(self.terminations.values())

    def _seat(self, agent: str) -> int:
        return AGENTS.index(self._check_agent(agent)) + 1

    def legal_moves(self, agent: str) -> list[int]:
        """Legal moves of ``agent``: empty unless it is on move in a live game."""
        self._live_agent(agent, "legal_moves")
        if self.game_over or agent != self.agent_selection:
            return []
        return self.board.legal_moves()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        own = self._seat(self._live_agent(agent, "observe"))
        cells = self.board.cells
        planes = np.stack([cells == own, cells == 3 - own], axis=-1).astype(np.int8)
        mask = np.zeros(len(self.action_names), dtype=np.int8)
        mask[self.legal_moves(agent)] = 1
        return {"observation": planes, "action_mask": mask}

    def text_observation(self, agent: str) -> str:
        """What an LLM seated as ``agent`` reads: its mark, the board, and what to do."""
        own = self._seat(self._live_agent(agent, "text_observation"))
        lines = [f"You play {player_mark(own)}; your opponent plays {player_mark(3 - own)}.", self.board.board_text()]
        if self.game_over:
            outcome = "a draw" if self.winner is None else ("won by you" if self.winner == agent else "won by your opponent")
            lines.append(f"The game is over: {outcome}.")
        elif agent == self.agent_selection:
            names = ", ".join(self.action_names[m] for m in self.legal_moves(agent))
            lines.append(f"It is your move. Legal moves: {names}.")
        else:
            lines.append("It is your opponent's move.")
        return "\n".join(lines)

    def check_action(self, agent: str, action: Any) -> None:
        """Refuse an action that is no move at all (not an int, or outside the action range).

        :func:`wrap`'s env checks it first too, before PettingZoo's ``AssertOutOfBoundsWrapper``
        (a bare ``AssertionError``, or an ``IndexError`` under ``python -O``) sees it.
        """
        check_move(self.metadata["name"], agent, action, len(self.action_names))

    def step(self, action: Any) -> None:
        agent = self._mover(action)
        if agent is None:
            return
        legal = self.legal_moves(agent)
        if int(action) not in legal:
            name = self.action_names[action]
            raise IllegalMoveError(f"{self.metadata['name']}: {agent} may not play {int(action)} ({name}); legal: {legal}")
        self.board.play(int(action), self._seat(agent))
        self._cumulative_rewards[agent] = 0
        self.rewards = dict.fromkeys(AGENTS, 0)
        won = self.board.winner()
        if won or not self.board.legal_moves():
            if won:
                self.winner = AGENTS[won - 1]
                self.rewards[self.winner], self.rewards[AGENTS[2 - won]] = 1, -1
            self.terminations = dict.fromkeys(AGENTS, True)
        self.agent_selection = AGENTS[1 - AGENTS.index(agent)]
        self._accumulate_rewards()

    def render(self) -> str | np.ndarray | None:
        """The board as text (``"ansi"``) or as a ``uint8`` picture (``"rgb_array"``); ``None`` without a mode."""
        if self.render_mode is None:
            return None
        self._require_reset("render")
        if self.render_mode == "rgb_array":
            return self.draw_board(self.board.cells)
        return self.board.board_text()

    def close(self) -> None:
        """Nothing to release (no window, no files)."""


def start_seats(game: AECEnv) -> None:
    """A turn-based AEC game's bookkeeping at the start of a game: every seat of ``possible_agents`` live, no
    rewards, the first (``player_0``) on move."""
    seats = game.possible_agents
    game.agents = list(seats)
    game.rewards = dict.fromkeys(seats, 0)
    game._cumulative_rewards = dict.fromkeys(seats, 0)
    game.terminations = dict.fromkeys(seats, False)
    game.truncations = dict.fromkeys(seats, False)
    game.infos = {a: {} for a in seats}
    game.agent_selection = seats[0]
    game.winner = None


class ActionCheckWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order checks, and the raw env's own check of an action before any wrapper sees it.

    Outermost, so a ``True``, a ``None`` or an out-of-range int for a live agent gets the
    raw env's :class:`IllegalMoveError` (``check_action(agent, action)``) instead of
    reaching PettingZoo's wrappers, which would index the action mask with it (numpy's
    "truth value of an array is ambiguous", an ``IndexError``) or fail a bare assertion.
    A finished agent's ``None`` passes, as the API wants.  It is an
    ``OrderEnforcingWrapper``, so ``agent_iter`` and PettingZoo's ``api_test`` work as on
    the classic games.

    Before the first reset it refuses as the raw game does (:class:`GameResetNeededError` naming
    the game, not PettingZoo's bare ``AssertionError``), and ``observe`` refuses an unknown
    agent by name for every game (PettingZoo's ``parallel_to_aec`` would raise a bare ``KeyError``).
    """

    def _refuse_before_reset(self, call: str) -> None:
        if not self._has_reset:
            raise GameResetNeededError(f"{self.unwrapped.metadata['name']}: call reset() before {call}()")

    def step(self, action: Any) -> None:
        self._refuse_before_reset("step")
        # Read from the wrapped env directly: each read through this wrapper passes two ``__getattr__``s
        # (PettingZoo's order check, then its base wrapper's), microseconds a move in all.
        env = self.env
        if env.agents:
            agent = env.agent_selection
            if not (env.terminations[agent] or env.truncations[agent]):
                env.unwrapped.check_action(agent, action)
        super().step(action)

    def observe(self, agent: Any) -> dict[str, np.ndarray]:
        self._refuse_before_reset("observe")
        self.unwrapped._check_agent(agent)
        return super().observe(agent)

    def render(self) -> str | np.ndarray | None:
        self._refuse_before_reset("render")
        return super().render()

    def agent_iter(self, max_iter: int = 2**63) -> AECOrderEnforcingIterable:
        self._refuse_before_reset("agent_iter")
        return super().agent_iter(max_iter)

    def __str__(self) -> str:
        return str(self.env)


def wrap(raw: AECEnv) -> AECEnv:
    """The classic games' wrapper stack: illegal moves end the game (-1), order and action checks."""
    env = wrappers.TerminateIllegalWrapper(raw, illegal_reward=-1)
    env = wrappers.AssertOutOfBoundsWrapper(env)
    return ActionCheckWrapper(env)


def check_move(game: str, agent: str, action: Any, count: int) -> None:
    """:class:`IllegalMoveError` (naming ``game`` and ``agent``) unless ``action`` is an int in ``0..count-1``."""
    if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)):
        raise IllegalMoveError(f"{game}: {agent}'s action must be an int, got {action!r}")
    if not 0 <= action < count:
        raise IllegalMoveError(f"{game}: {agent}'s action must be in 0..{count - 1}, got {int(action)}")


def random_choice(rng: np.random.Generator, moves: Sequence[int]) -> int:
    """One of ``moves``, uniformly (the tie-break every scripted opponent uses)."""
    return int(moves[int(rng.integers(len(moves)))])
