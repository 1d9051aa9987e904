"""TextArena's games of two or more players on PettingZoo's AEC API, their random state isolated as the single-player
ids'."""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

import numpy as np
from pettingzoo import AECEnv

from ragen_bench.envs.base import AnyText
from ragen_bench.envs.textarena.library import IsolatedRandom, TextArenaError, copy_game, make_game, takes
from ragen_bench.envs.textarena.shown import MAX_MOVE_CHARS, MOVE_CHARSET, Inbox, MoveText
from ragen_bench.games.board import ActionCheckWrapper, GameContract, IllegalMoveError, start_seats
from ragen_bench.games.textarena.games import KNOWN_MOVES, SEAT_MOVES, SEATS

if TYPE_CHECKING:
    from textarena.core import Env

T = TypeVar("T")
MAX_OBSERVATION_CHARS = 200_000


class GameText(str):
    """A seat's text observation: a plain ``str`` that also states the dtype of its space (``Text``'s ``<U``),
    which PettingZoo's ``api_test`` compares with the observation space's."""

    __slots__ = ()
    dtype = np.dtype(str)


class TextArenaGameEnv(GameContract, AECEnv):
    """A TextArena game of two or more players (``textarena`` 0.7.4) through PettingZoo's AEC API.

    ## Description
    ``RAGEN/TA-<Game>-v0``: TextArena's games at its own ``-v0`` settings, two-player ones (Kuhn
    poker, Nim, Battleship, Simple Negotiation ...) and those of three to six seats (Three-player
    Tic-Tac-Toe, Taboo, Secret Mafia ...), played by TextArena itself.  The seats are ``player_0``
    ... ``player_<n-1>``; ``player_i`` is TextArena's player ``i``.  Every call into the game runs on a generator of the
    game's own (:class:`~ragen_bench.envs.textarena.library.IsolatedRandom`), so whatever the
    process draws between moves (an agent sampling) never changes the game.

    ## Action Space
    :class:`MoveText`: any ``str`` of at most 2000 characters; TextArena reads the move it
    asks for (mostly in square brackets).  A move it cannot use is answered as TextArena does:
    a warning and the same seat on move again, and a second one in a row loses the game.
    Anything but such a ``str`` raises :class:`~ragen_bench.games.board.IllegalMoveError`.

    ## Observation Space
    ``AnyText(0, 200000)``: :meth:`text_observation` -- the messages the seat received since its
    own last move (at first TextArena's rules for the seat and the opening position), then
    whose move it is or how the game ended.  Hidden information stays hidden: each seat
    reads only what TextArena sends it.

    ## Starting State
    What TextArena deals for the seed (its ``reset(num_players=n, seed=...)`` with the game's
    number of seats), the game's generator started from the seed.

    ## Rewards
    TextArena's outcome on the last move: in two-player games +1 for the winner and -1 for the
    loser, 0 each for a draw; games of more seats pay each seat its own (a game may pay other
    amounts; its rewards are passed on as they are).

    ## Episode End
    Terminated when TextArena ends the game (won, drawn, its own turn limit, two invalid
    moves in a row).  Truncated (0 each, no winner) when a seat has made ``SEAT_MOVES`` moves
    (100; invalid ones count) and the game goes on.

    ## Information
    ``infos[agent]``: ``move_refused`` (the agent's last move was not taken by TextArena).
    The winner is ``env.unwrapped.winner``: the one seat with the largest reward, ``None`` when
    several share it (a draw, or a team's win in a game of more seats).

    ## Arguments
    ``game``: TextArena's id of a game of :data:`~ragen_bench.games.textarena.games.SEATS` (its seats).
    ``render_mode``: ``None`` or ``"ansi"`` (the messages of the seat on move).  The seed of
    ``reset`` is TextArena's seed and seeds ``np_random``, the scripted opponents' generator;
    without one, a seed for TextArena is drawn from ``np_random``.

    ## Version History
    * v0: textarena 0.7.4 at its ``-v0`` settings.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "name": "ragen_textarena_v0", "is_parallelizable": False}
    action_names = None

    def __init__(self, game: str, render_mode: str | None = None) -> None:
        super().__init__()
        if game not in SEATS:
            raise ValueError(f"unknown TextArena game {game!r}; the games: {', '.join(SEATS)}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"ragen_textarena_v0: render_mode must be None or 'ansi', got {render_mode!r}")
        name = game.removesuffix("-v0")
        self.game, self.render_mode = game, render_mode
        self.metadata = {**self.metadata, "name": f"ragen_textarena_{name}_v0"}
        seats = SEATS[game]
        company = "a two-player game of TextArena, against one opponent" if seats == 2 else \
            f"a {seats}-player game of TextArena, with {seats - 1} other players"
        self.instruction = (
            f"You are playing {name}, {company}. Its rules and the move format come with your first observation; "
            "answer each turn with one move written exactly in that format (usually in square brackets)."
        )
        self.max_seat_moves = SEAT_MOVES
        self.possible_agents = [f"player_{index}" for index in range(seats)]
        self.agents = list(self.possible_agents)
        agents = self.possible_agents
        self.observation_spaces = {a: AnyText(max_length=MAX_OBSERVATION_CHARS, min_length=0, charset=MOVE_CHARSET) for a in agents}
        self.action_spaces = {a: MoveText(max_length=MAX_MOVE_CHARS, min_length=0, charset=MOVE_CHARSET) for a in agents}
        # What TextArena sent each seat, batch by batch (cleared at each reset); each seat's space reads its moves.
        self._inboxes = {a: Inbox() for a in agents}
        for agent, space in self.action_spaces.items():
            space.inbox = self._inboxes[agent]
        self._rng = IsolatedRandom()
        # Some games keep state across resets (Kuhn poker shuffles one deck in place, game after game), so a
        # seed's deal would depend on the games played before: every reset starts from a copy of the new game.
        self._new_game: Env = make_game(game, self._rng)  # fails here, at make, when the extra is missing
        self._game: Env = self._new_game
        self._new_game_bytes = self._pickled(self._new_game)
        self.level_seed: int | None = None
        self._start()

    def _start(self) -> None:
        start_seats(self)
        agents = self.possible_agents
        self.infos: dict[str, dict[str, Any]] = {a: {"move_refused": False} for a in agents}
        self.winner: str | None = None
        self.ending = ""
        self.seat_moves = dict.fromkeys(agents, 0)
        self._outcome = dict.fromkeys(agents, 0.0)  # each seat's reward for the game, once TextArena ends it
        for inbox in self._inboxes.values():
            inbox.clear()

    def observation_space(self, agent: str) -> AnyText:
        return self.observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> MoveText:
        return self.action_spaces[self._check_agent(agent)]

    def _call(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        try:
            return self._rng.call(fn, *args)
        except Exception as error:  # a game bug is reported with the game, seed and call, not as a bare trace
            raise TextArenaError(
                f"TextArena '{self.game}' failed in {what} (seed {self.level_seed}): {type(error).__name__}: {error}"
            ) from error

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        """A new deal: TextArena's for ``seed`` (without one, a seed drawn from ``np_random``)."""
        self._seed_generator(self._check_seed(seed))
        self.level_seed = int(seed) if seed is not None else self._draw_seed()
        self._rng.restart(self.level_seed)
        self._start()
        self._game = self._fresh_game()
        self._call("reset", self._game.reset, len(self.possible_agents), self.level_seed)
        self._game_started = True
        self._collect()

    def _pickled(self, game: Env) -> bytes | None:
        """``game`` pickled, its generator left out (see :meth:`_fresh_game`); ``None`` if it cannot be pickled."""
        data = io.BytesIO()
        try:
            self._rng.call(_GamePickler(data, self._rng.random).dump, game)
        except Exception:  # a game holding something pickle refuses (a lambda): copied instead
            return None
        return data.getvalue()

    def _fresh_game(self) -> Env:
        """A copy of the new game, as :func:`copy_game` makes it: the new game is pickled once and each reset
        unpickles it, several times cheaper than a deep copy (Tic-Tac-Toe's: 150 us against 15)."""
        if self._new_game_bytes is None:
            return copy_game(self._rng, self._new_game)
        return self._rng.call(_GameUnpickler(io.BytesIO(self._new_game_bytes), self._rng.random).load)

    def _collect(self) -> None:
        """Move what TextArena has sent each seat into the seat's batches, and follow whose move it is.

        The text and the moves of a batch are read when someone asks (:meth:`text_observation`,
        ``valid``): a move reads neither, so a step costs what TextArena's own loop costs plus little.
        """
        state = self._game.state
        agents = self.possible_agents
        for index, agent in enumerate(agents):
            messages = state.observations[index]
            if messages:
                state.observations[index] = []
                self._inboxes[agent].add(messages)
        self.agent_selection = agents[state.current_player_id]

    @property
    def game_over(self) -> bool:
        return any(self.terminations.values()) or any(self.truncations.values())

    def legal_moves(self, agent: str) -> tuple[str, ...]:
        """The moves the game's text has shown ``agent`` (legal-ish), if it is on move in a live game."""
        self._live_agent(agent, "legal_moves")
        if self.game_over or agent != self.agent_selection:
            return ()
        return self.action_spaces[agent].valid

    def move_options(self, agent: str) -> tuple[str, ...]:
        """What a scripted player may try: the game's known move set and the moves its text has shown ``agent``."""
        return tuple(dict.fromkeys((*KNOWN_MOVES.get(self.game, ()), *self.legal_moves(agent))))

    def accepts(self, agent: str, move: str) -> bool:
        """Whether TextArena would take ``move`` from ``agent`` now: tried on a copy of the game
        (:func:`~ragen_bench.envs.textarena.library.takes`; the game and its generator left as they were)."""
        self._live_agent(agent, "accepts")
        if self.game_over or agent != self.agent_selection:
            return False
        return takes(self._rng, self._game, move, self.possible_agents.index(agent))

    def observe(self, agent: str) -> GameText:
        self._live_agent(agent, "observe")
        return GameText(self.text_observation(agent))

    def text_observation(self, agent: str) -> str:
        """What an LLM seated as ``agent`` reads: the messages since its last move, then what to do."""
        self._live_agent(agent, "text_observation")
        lines = [batch.text for batch in self._inboxes[agent].recent() if batch.text]
        # Two seats: "your opponent"; more: the other seat by name (TextArena's "Player i" is our player_i).
        two = len(self.possible_agents) == 2
        if self.game_over:
            if self.winner is None:  # every seat paid the same, or several share the top (a team's win)
                outcome = "a draw" if len(set(self._outcome.values())) == 1 else "no single winner"
            else:
                outcome = "won by you" if self.winner == agent else ("won by your opponent" if two else f"won by {self.winner}")
            reward = self._cumulative_rewards[agent]
            lines.append(f"The game is over: {outcome} (your reward {reward:+g}). {self.ending}".rstrip())
        elif agent == self.agent_selection:
            lines.append("It is your move.")
        else:
            lines.append("It is your opponent's move." if two else f"It is {self.agent_selection}'s move.")
        return "\n\n".join(lines)[-MAX_OBSERVATION_CHARS:]

    def check_action(self, agent: str, action: Any) -> None:
        """Refuse an action that is no move at all (not a ``str``, or longer than 2000 characters)."""
        if action.__class__ is not str or len(action) > MAX_MOVE_CHARS:
            shown = repr(action) if len(repr(action)) <= 80 else repr(action)[:77] + "..."
            raise IllegalMoveError(f"{self.metadata['name']}: {agent}'s move must be a str of at most "
                                   f"{MAX_MOVE_CHARS} characters, got {shown}")

    def step(self, action: Any) -> None:
        agent = self._mover(action)
        if agent is None:
            return
        state = self._game.state
        agents = self.possible_agents
        turn, player = state.turn, agents.index(agent)
        self._inboxes[agent].moved()  # the seat's inbox starts afresh
        done, _ = self._call("step", self._game.step, action)
        self.seat_moves[agent] += 1
        refused = state.turn == turn or bool(state.game_info[player].get("invalid_move"))
        self.infos = {a: {"move_refused": refused and a == agent} for a in agents}
        self._cumulative_rewards[agent] = 0.0
        self.rewards = dict.fromkeys(agents, 0.0)
        self._collect()
        if done:
            self._finish()
        elif self.seat_moves[agent] >= SEAT_MOVES:
            self.truncations = dict.fromkeys(agents, True)
            self.ending = f"Stopped: {agent} made {SEAT_MOVES} moves and TextArena had not ended the game."
        self._accumulate_rewards()

    def _finish(self) -> None:
        rewards, game_info = self._call("close", self._game.close)
        rewards = rewards or {}
        agents = self.possible_agents
        for index, agent in enumerate(agents):
            self.rewards[agent] = float(rewards.get(index, 0.0))
        self._outcome = dict(self.rewards)
        best = max(self.rewards.values())
        leaders = [agent for agent in agents if self.rewards[agent] == best]
        self.winner = leaders[0] if len(leaders) == 1 else None
        reasons = dict.fromkeys(str(info.get("reason") or "") for info in game_info.values())
        reasons.pop("", None)
        if not reasons and getattr(self._game.state, "info", None):
            reasons = {str(self._game.state.info.get("reason", "")): None}
        self.ending = " ".join(reasons)
        self.terminations = dict.fromkeys(agents, True)

    def render(self) -> str | None:
        """The messages of the seat on move (``"ansi"``); ``None`` without a mode."""
        if self.render_mode is None:
            return None
        self._require_reset("render")
        return self.text_observation(self.agent_selection)

    def close(self) -> None:
        """Nothing to release."""


class _GamePickler(pickle.Pickler):
    """Pickles a game without its generator, which :class:`_GameUnpickler` puts back as the env's own."""

    def __init__(self, file: io.BytesIO, generator: object) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._generator = generator

    def persistent_id(self, obj: Any) -> str | None:
        return "generator" if obj is self._generator else None


class _GameUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, generator: object) -> None:
        super().__init__(file)
        self._generator = generator

    def persistent_load(self, pid: Any) -> object:
        return self._generator


def raw_env(**kwargs: Any) -> TextArenaGameEnv:
    return TextArenaGameEnv(**kwargs)


def env(**kwargs: Any) -> AECEnv:
    """The raw game under PettingZoo's order checks and the game's own action check (no mask: moves are text)."""
    return ActionCheckWrapper(raw_env(**kwargs))
