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
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv
from pettingzoo.utils import wrappers

from ragen_bench.envs.base import SeedContract

AGENTS = ("player_0", "player_1")


class IllegalMoveError(ValueError):
    """A move the current position does not allow (occupied cell, full column, not an int)."""


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


class GameSeeds(SeedContract):
    """The single-agent envs' seed contract (:class:`~ragen_bench.envs.base.SeedContract`), errors named after the game."""

    metadata: ClassVar[dict[str, Any]]

    def _owner(self) -> str:
        return self.metadata["name"]


def player_mark(player: int) -> str:
    return "XO"[player - 1]


class BoardGameEnv(GameSeeds, AECEnv):
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
        self.agents = list(AGENTS)
        self.rewards = dict.fromkeys(AGENTS, 0)
        self._cumulative_rewards = dict.fromkeys(AGENTS, 0)
        self.terminations = dict.fromkeys(AGENTS, False)
        self.truncations = dict.fromkeys(AGENTS, False)
        self.infos: dict[str, dict[str, Any]] = {a: {} for a in AGENTS}
        self.agent_selection = AGENTS[0]
        self.winner: str | None = None

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[agent]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[agent]

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

    @property
    def game_over(self) -> bool:
        return any(self.terminations.values())

    def _seat(self, agent: str) -> int:
        return AGENTS.index(agent) + 1

    def legal_moves(self, agent: str) -> list[int]:
        """Legal moves of ``agent``: empty unless it is on move in a live game."""
        if self.game_over or agent != self.agent_selection:
            return []
        return self.board.legal_moves()

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        own = self._seat(agent)
        cells = self.board.cells
        planes = np.stack([cells == own, cells == 3 - own], axis=-1).astype(np.int8)
        mask = np.zeros(len(self.action_names), dtype=np.int8)
        mask[self.legal_moves(agent)] = 1
        return {"observation": planes, "action_mask": mask}

    def text_observation(self, agent: str) -> str:
        """What an LLM seated as ``agent`` reads: its mark, the board, and what to do."""
        own = self._seat(agent)
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
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self.check_action(agent, action)
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
        if self.render_mode == "rgb_array":
            return self.draw_board(self.board.cells)
        return self.board.board_text()

    def close(self) -> None:
        """Nothing to release (no window, no files)."""


class ActionCheckWrapper(wrappers.OrderEnforcingWrapper):
    """PettingZoo's order checks, and the raw env's own check of an action before any wrapper sees it.

    Outermost, so a ``True``, a ``None`` or an out-of-range int for a live agent gets the
    raw env's :class:`IllegalMoveError` (``check_action(agent, action)``) instead of
    reaching PettingZoo's wrappers, which would index the action mask with it (numpy's
    "truth value of an array is ambiguous", an ``IndexError``) or fail a bare assertion.
    A finished agent's ``None`` passes, as the API wants.  It is an
    ``OrderEnforcingWrapper``, so ``agent_iter`` and PettingZoo's ``api_test`` work as on
    the classic games.
    """

    def step(self, action: Any) -> None:
        if self._has_reset and self.agents:
            agent = self.agent_selection
            if not (self.terminations[agent] or self.truncations[agent]):
                self.unwrapped.check_action(agent, action)
        super().step(action)

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
