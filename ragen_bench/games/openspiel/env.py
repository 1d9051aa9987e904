"""OpenSpiel games on PettingZoo's AEC API: shimmy's wrapper plus the project's seeds, masks and text view."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
from gymnasium import spaces
from shimmy.openspiel_compatibility import OpenSpielCompatibilityV0

from ragen_bench.games.board import AGENTS, GameContract, IllegalMoveError, check_move, wrap
from ragen_bench.games.openspiel.games import GAMES, OpenSpielGameSpec, public_moves

if TYPE_CHECKING:
    from pettingzoo import AECEnv


class OpenSpielGameEnv(GameContract, OpenSpielCompatibilityV0):
    """A curated two-player OpenSpiel game (:data:`~ragen_bench.games.openspiel.games.GAMES`) through shimmy.

    ## Description
    ``RAGEN/OS-<Game>-v0``: Kuhn and Leduc poker, Pig, misere Nim, Dots and Boxes (2x2),
    Hex (5x5), Othello and Clobber (4x4), played by OpenSpiel's own rules.  ``player_0``
    is OpenSpiel's player 0.  Shimmy's ``OpenSpielCompatibilityV0`` steps the game; this
    class adds what the project's games share: checked seeds, the action mask in the
    observation, a text view for LLM agents and a clear error for a bad action.

    ## Action Space
    ``Discrete(game.num_distinct_actions())``; ``action_names[i]`` is OpenSpiel's string for
    action ``i`` (``Bet``, ``c3``, ``pile:2, take:3;``), the mover's tag cut where a game
    writes one (Dots and Boxes' ``P1``).  Illegal actions are masked.

    ## Observation Space
    ``Dict(observation=Box(-inf, inf, <OpenSpiel's observation tensor shape>, float64),
    action_mask=Box(0, 1, (n,), int8))``: the tensor shimmy reads (the observer's own view,
    so hidden cards stay hidden); the mask is all zeros for the seat not on move and once
    the game is over.  ``text_observation(agent)`` is the LLM view: the seat, the board (or
    the seat's cards and the moves so far) and the legal moves.  Before the first reset
    there is no position: ``observe``, ``text_observation``, ``legal_moves``, ``step`` and
    ``render`` raise ``GameResetNeededError``; an agent name other than
    ``player_0``/``player_1`` raises ``UnknownAgentError``
    (:class:`~ragen_bench.games.board.GameContract`, which also makes ``copy.deepcopy`` and
    ``pickle`` copy the live ``pyspiel`` state).

    ## Starting State
    OpenSpiel's initial state after its chance nodes (the deal, Pig's nothing-yet).

    ## Rewards
    OpenSpiel's rewards as they accrue: chips won or lost in poker, +1/-1 (0 for a draw)
    in the other games.  Through ``env()`` an illegal move ends the game: -1 for the
    mover, 0 for the other.

    ## Episode End
    Termination at OpenSpiel's terminal state, within ``max_game_length()`` moves (so no truncation).

    ## Information
    ``infos[agent]["action_mask"]`` (shimmy's); the winner is ``env.unwrapped.winner``
    (the seat with the larger return, ``None`` for a tie).

    ## Arguments
    ``game``: a key of ``GAMES``.  ``render_mode``: ``None`` or ``"ansi"`` (the state as
    OpenSpiel prints it: every hidden card shown).  The seed of ``reset`` decides every
    chance outcome (a stream of its own, so the deals of a seed do not depend on what the
    players draw) and seeds ``np_random``, the scripted opponents' generator.

    ## Version History
    * v0: initial version (open-spiel 2.0.2, shimmy 2.0.1).
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "name": "ragen_openspiel_v0", "is_parallelizable": False}

    def __init__(self, game: str, render_mode: str | None = None) -> None:
        if game not in GAMES:
            raise ValueError(f"unknown OpenSpiel game {game!r}; curated: {', '.join(GAMES)}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"ragen_openspiel_v0: render_mode must be None or 'ansi', got {render_mode!r}")
        self.spec: OpenSpielGameSpec = GAMES[game]
        self.metadata = {**self.metadata, "name": f"ragen_openspiel_{game}_v0"}
        super().__init__(game_name=self.spec.name, config=dict(self.spec.params) or None)
        self.render_mode = render_mode
        self.instruction = self.spec.instruction
        self.action_names = action_names(self._env, self.spec.mover_tag)
        self.max_seat_moves = self._env.max_game_length()

    # -- shimmy's hooks ---------------------------------------------------------------

    # Shimmy builds new spaces on every reset and step; these games' spaces never change, and
    # new ones would drop the seed a user gave ``action_space(agent).seed(...)``: build them once.

    def _update_observation_spaces(self) -> None:
        if self.observation_spaces:
            return
        super()._update_observation_spaces()
        mask = spaces.Box(0, 1, shape=(self._env.num_distinct_actions(),), dtype=np.int8)
        for agent in self.possible_agents:
            self.observation_spaces[agent] = spaces.Dict({"observation": self.observation_spaces[agent], "action_mask": mask})

    def _update_action_spaces(self) -> None:
        if not self.action_spaces:
            super()._update_action_spaces()

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self._check_agent(agent)]

    def _execute_chance_node(self) -> None:
        # Shimmy draws chance outcomes from np_random, which the opponents draw from too;
        # a stream of their own keeps a seed's deals the same whoever plays.  Shimmy also
        # counts chance nodes in ``game_length``, which it compares with OpenSpiel's bound
        # on moves (truncating Kuhn poker after its first move): only moves count here.
        while self.game_state.is_chance_node():
            outcomes, probabilities = zip(*self.game_state.chance_outcomes())
            self.game_state.apply_action(int(self.chance_rng.choice(outcomes, p=probabilities)))

    # -- the project's seed contract, masks and views ------------------------------------

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new game; a seed starts ``np_random`` and the chance stream afresh (without one both run on)."""
        self._seed_generator(self._check_seed(seed))
        generator, generator_seed = self.np_random, self._np_random_seed
        self.chance_rng = np.random.default_rng(int(generator.integers(2**63)))
        # Shimmy's seed only reaches three games not curated here; it also replaces np_random: keep ours.
        super().reset(seed=None)
        self._generator, self._np_random_seed = generator, generator_seed
        self.game_length = 0  # moves made; shimmy starts at 1, truncating a game on its last move
        self._game_started = True

    @property
    def game_over(self) -> bool:
        """Whether the game has ended (``False`` before the first reset: no game has)."""
        if not self._game_started:
            return False
        return self.game_state.is_terminal() or any(self.terminations.values()) or any(self.truncations.values())

    @property
    def winner(self) -> str | None:
        """The seat with the larger return once the game is over (``None``: a tie, not over, or never reset)."""
        if not self._game_started or not self.game_state.is_terminal():
            return None
        first, second = self.game_state.returns()
        return None if first == second else AGENTS[0 if first > second else 1]

    def legal_moves(self, agent: str) -> list[int]:
        """Legal moves of ``agent``: empty unless it is on move in a live game."""
        self._live_agent(agent, "legal_moves")
        if self.game_over or agent != self.agent_selection:
            return []
        return list(self.game_state.legal_actions(AGENTS.index(agent)))

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        self._live_agent(agent, "observe")
        mask = np.zeros(len(self.action_names), dtype=np.int8)
        mask[self.legal_moves(agent)] = 1
        player = AGENTS.index(agent)
        tensor = np.asarray(self.game_state.observation_tensor(player), dtype=np.float64)
        return {"observation": tensor.reshape(self.observation_spaces[agent]["observation"].shape), "action_mask": mask}

    def text_observation(self, agent: str) -> str:
        """What an LLM seated as ``agent`` reads: its seat, its view of the game, and what to do."""
        player = AGENTS.index(self._live_agent(agent, "text_observation"))
        lines = [f"You are {agent}: {self.spec.seats[player]}.", self.spec.view(self.game_state, player)]
        if self.spec.history:
            lines.append(public_moves(self.game_state, self.action_names.__getitem__))
        if self.game_over:
            returns = self.game_state.returns() if self.game_state.is_terminal() else (0.0, 0.0)
            outcome = "a draw" if self.winner is None else ("won by you" if self.winner == agent else "won by your opponent")
            lines.append(f"The game is over: {outcome} (your return {returns[player]:+g}).")
        elif agent == self.agent_selection:
            names = ", ".join(f'"{self.action_names[m]}"' for m in self.legal_moves(agent))
            lines.append(f"It is your move. Legal moves: {names}.")
        else:
            lines.append("It is your opponent's move.")
        return "\n".join(lines)

    def check_action(self, agent: str, action: Any) -> None:
        """Refuse an action that is no move at all (not an int, or outside the action range)."""
        check_move(self.metadata["name"], agent, action, len(self.action_names))

    def step(self, action: Any) -> None:
        self._require_reset("step")
        agent = self.agent_selection
        if not (self.terminations.get(agent) or self.truncations.get(agent)):
            self.check_action(agent, action)
            action, legal = int(action), self.legal_moves(agent)
            if action not in legal:
                name = self.action_names[action]
                raise IllegalMoveError(f"{self.metadata['name']}: {agent} may not play {action} ({name}); legal: {legal}")
        super().step(action)

    def render(self) -> str | None:
        """The full state as OpenSpiel prints it (``"ansi"``); ``None`` without a mode."""
        if self.render_mode is None:
            return None
        self._require_reset("render")
        return str(self.game_state)


def action_names(game: Any, mover_tag: str) -> tuple[str, ...]:
    """OpenSpiel's string of every action, read at player 0's first decision, the mover's tag cut."""
    state = game.new_initial_state()
    while state.is_chance_node():
        state.apply_action(state.chance_outcomes()[0][0])
    player = max(state.current_player(), 0)
    names = tuple(re.sub(mover_tag, "", state.action_to_string(player, a)) if mover_tag else state.action_to_string(player, a)
                  for a in range(game.num_distinct_actions()))
    if len(set(names)) != len(names):
        raise ValueError(f"{game}: OpenSpiel's action strings are not distinct: {names}")
    return names


def raw_env(**kwargs: Any) -> OpenSpielGameEnv:
    return OpenSpielGameEnv(**kwargs)


def env(**kwargs: Any) -> AECEnv:
    return wrap(raw_env(**kwargs))
