"""An iterated Prisoner's Dilemma with a message channel, on PettingZoo's Parallel API."""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping
from typing import Any

import numpy as np
from gymnasium import spaces
from pettingzoo import ParallelEnv
from pettingzoo.utils import parallel_to_aec

from ragen_bench.games.board import AGENTS, ActionCheckWrapper, GameContract, IllegalMoveError

ACTION_NAMES = ("cooperate", "defect")
_PAST = ("cooperated", "defected")
COOPERATE, DEFECT = 0, 1
# PAYOFF[(own, other)]: the textbook values, temptation 5 > reward 3 > punishment 1 > sucker 0.
PAYOFF = {(COOPERATE, COOPERATE): 3, (COOPERATE, DEFECT): 0, (DEFECT, COOPERATE): 5, (DEFECT, DEFECT): 1}
MESSAGE_CHARS = 200


def clean_message(text: str, limit: int) -> str:
    """``text`` as one line of at most ``limit`` characters.

    Line breaks and other control or format characters become spaces, so a message
    cannot fake lines of the observation it is shown in (``Round 3: ...``).
    """
    flat = "".join(" " if unicodedata.category(ch)[0] in "CZ" and ch != " " else ch for ch in text)
    return " ".join(flat.split())[:limit].rstrip()


class PrisonersDilemmaEnv(GameContract, ParallelEnv):
    """Both players choose to cooperate or defect each round, for a hidden number of rounds.

    ## Description
    Each round both agents move at once.  Before a round each may send the other one
    short message (:meth:`send_message`); it appears in the other's text view of the
    next decision.  The number of rounds is drawn by the seed from
    ``min_rounds..max_rounds`` and is not shown to the agents (they are told the
    range), so the last round cannot be planned for exactly.

    ## Action Space
    ``Discrete(2)`` per agent: 0 ``cooperate``, 1 ``defect`` (``action_names``).

    ## Observation Space
    ``Dict(observation=Box(0, 2, (max_rounds, 2), int8), action_mask=Box(0, 1, (2,), int8))``:
    row ``k`` holds round ``k``'s moves as (own, other), 1 cooperate, 2 defect, 0 not
    played yet.  Both actions are always legal (the mask is all ones).
    ``text_observation(agent)`` is the LLM view: rules reminder, the moves and payoffs
    so far, and the other agent's latest message.  Before the first reset the per-agent
    views, ``send_message``, ``step`` and ``render`` raise ``GameResetNeededError``; an agent
    name other than ``player_0``/``player_1`` raises ``UnknownAgentError``.

    ## Starting State
    No round played, no message.  ``reset(seed=s)`` draws the number of rounds.

    ## Rewards
    Per round, to each agent: 3 both cooperate, 1 both defect, 5 to a defector whose
    opponent cooperated and 0 to that cooperator.

    ## Episode End
    Termination for both after the last round; no truncation.

    ## Information
    ``infos[agent]`` holds ``round`` (rounds played) and, at the end, ``rounds`` (the
    drawn number) and ``total`` (the agent's summed payoff).

    ## Arguments
    ``min_rounds``/``max_rounds`` (default 5 and 10, 1 <= min <= max <= 100) bound the
    number of rounds; ``message_chars`` (default 200) cuts each message.

    ## Version History
    * v0: initial version.
    """

    metadata = {"render_modes": ["ansi"], "name": "ragen_prisoners_dilemma_v0", "is_parallelizable": True}

    def __init__(
        self, min_rounds: int = 5, max_rounds: int = 10, message_chars: int = MESSAGE_CHARS,
        render_mode: str | None = None,
    ) -> None:
        for name, value in (("min_rounds", min_rounds), ("max_rounds", max_rounds), ("message_chars", message_chars)):
            if type(value) is not int:
                raise ValueError(f"{self.metadata['name']}: {name} must be an int, got {value!r}")
        if not 1 <= min_rounds <= max_rounds <= 100:
            raise ValueError(
                f"{self.metadata['name']}: need 1 <= min_rounds <= max_rounds <= 100, got {min_rounds}, {max_rounds}"
            )
        if not 0 <= message_chars <= 2000:
            raise ValueError(f"{self.metadata['name']}: message_chars must be in 0..2000, got {message_chars}")
        if render_mode not in (None, "ansi"):
            raise ValueError(f"{self.metadata['name']}: render_mode must be None or 'ansi', got {render_mode!r}")
        self.min_rounds, self.max_rounds, self.message_chars = min_rounds, max_rounds, message_chars
        self.render_mode = render_mode
        self.possible_agents = list(AGENTS)
        self.action_names = ACTION_NAMES
        self.max_seat_moves = max_rounds
        history = spaces.Box(0, 2, shape=(max_rounds, 2), dtype=np.int8)
        mask = spaces.Box(0, 1, shape=(2,), dtype=np.int8)
        self.observation_spaces = {a: spaces.Dict({"observation": history, "action_mask": mask}) for a in AGENTS}
        self.action_spaces = {a: spaces.Discrete(2) for a in AGENTS}
        self.instruction = (
            "You are playing an iterated Prisoner's Dilemma against one other player. Each round "
            "you both choose, at the same time, to cooperate or to defect. Payoffs per round: both "
            "cooperate 3 points each; both defect 1 point each; if one defects and the other "
            "cooperates, the defector gets 5 and the cooperator 0. The game lasts between "
            f"{min_rounds} and {max_rounds} rounds; the exact number is not told. Your goal is "
            "to score as many points as you can. Answer with cooperate or defect."
        )
        self.agents: list[str] = []
        self._moves: list[tuple[int, int]] = []
        self._inbox = dict.fromkeys(AGENTS, "")
        self._outbox = dict.fromkeys(AGENTS, "")
        self.rounds = max_rounds

    def observation_space(self, agent: str) -> spaces.Space:
        return self.observation_spaces[self._check_agent(agent)]

    def action_space(self, agent: str) -> spaces.Space:
        return self.action_spaces[self._check_agent(agent)]

    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None):
        self._seed_generator(self._check_seed(seed))
        self.rounds = int(self.np_random.integers(self.min_rounds, self.max_rounds + 1))
        self.agents = list(AGENTS)
        self._moves = []
        self._inbox = dict.fromkeys(AGENTS, "")
        self._outbox = dict.fromkeys(AGENTS, "")
        self._game_started = True
        return {a: self.observe(a) for a in AGENTS}, {a: {"round": 0} for a in AGENTS}

    def legal_moves(self, agent: str) -> list[int]:
        return [COOPERATE, DEFECT] if self._live_agent(agent, "legal_moves") in self.agents else []

    def send_message(self, agent: str, text: str) -> str:
        """Queue ``agent``'s message for the next round; returns it as the other agent will see it.

        A name that is no seat is :class:`UnknownAgentError`, as in every per-agent call; a seat
        after the last round is :class:`IllegalMoveError`, as in ``step``.
        """
        if self._live_agent(agent, "send_message") not in self.agents:
            raise IllegalMoveError(f"{self.metadata['name']}: the game is over; call reset()")
        if not isinstance(text, str):
            raise IllegalMoveError(f"{self.metadata['name']}: {agent}'s message must be a str, got {type(text).__name__}")
        self._outbox[agent] = clean_message(text, self.message_chars)
        return self._outbox[agent]

    def _seat(self, agent: str, call: str) -> int:
        return AGENTS.index(self._live_agent(agent, call))

    def observe(self, agent: str) -> dict[str, np.ndarray]:
        me = self._seat(agent, "observe")
        history = np.zeros((self.max_rounds, 2), dtype=np.int8)
        for k, moves in enumerate(self._moves):
            history[k] = (moves[me] + 1, moves[1 - me] + 1)
        return {"observation": history, "action_mask": np.ones(2, dtype=np.int8)}

    def history(self, agent: str) -> list[tuple[int, int]]:
        """The rounds played so far as (own move, other's move) pairs for ``agent``."""
        me = self._seat(agent, "history")
        return [(moves[me], moves[1 - me]) for moves in self._moves]

    def totals(self) -> dict[str, int]:
        return {a: sum(PAYOFF[(m[i], m[1 - i])] for m in self._moves) for i, a in enumerate(AGENTS)}

    def text_observation(self, agent: str) -> str:
        me = self._seat(agent, "text_observation")
        lines = []
        for k, moves in enumerate(self._moves, start=1):
            own, other = moves[me], moves[1 - me]
            lines.append(
                f"Round {k}: you {_PAST[own]}, the other player {_PAST[other]}; "
                f"you scored {PAYOFF[(own, other)]}."
            )
        total = self.totals()[agent]
        if not lines:
            lines.append("No round has been played yet.")
        message = self._inbox[agent]
        lines.append(f'The other player says: "{message}"' if message else "The other player sent no message.")
        if agent in self.agents:
            lines.append(f"Your score so far: {total}. Choose for round {len(self._moves) + 1}: cooperate or defect.")
        else:
            lines.append(f"The game is over after {len(self._moves)} rounds. Your score: {total}.")
        return "\n".join(lines)

    def check_action(self, agent: str, action: Any) -> None:
        """Refuse anything but 0 or 1 (``env()`` checks each agent's action as it is given, too)."""
        if isinstance(action, (bool, np.bool_)) or not isinstance(action, (int, np.integer)) or action not in (0, 1):
            raise IllegalMoveError(f"{self.metadata['name']}: {agent}'s action must be 0 or 1, got {action!r}")

    def step(self, actions: dict[str, Any]):
        self._require_reset("step")
        if not self.agents:
            raise IllegalMoveError(f"{self.metadata['name']}: the game is over; call reset()")
        if not isinstance(actions, Mapping):
            raise IllegalMoveError(
                f"{self.metadata['name']}: step takes a dict of agent -> action, got {actions!r}"
            )
        missing = [a for a in self.agents if a not in actions]
        if missing:
            raise IllegalMoveError(f"{self.metadata['name']}: no action for {missing}")
        if unknown := [a for a in actions if a not in self.agents]:
            # A misspelt seat would otherwise be dropped without a word.
            raise IllegalMoveError(f"{self.metadata['name']}: actions for agents not in the game: {unknown}")
        for agent in self.agents:
            self.check_action(agent, actions[agent])
        moves = (int(actions[AGENTS[0]]), int(actions[AGENTS[1]]))
        self._moves.append(moves)
        # A message sent before this round is read before the next decision.
        self._inbox = {AGENTS[0]: self._outbox[AGENTS[1]], AGENTS[1]: self._outbox[AGENTS[0]]}
        self._outbox = dict.fromkeys(AGENTS, "")
        rewards = {a: PAYOFF[(moves[i], moves[1 - i])] for i, a in enumerate(AGENTS)}
        done = len(self._moves) >= self.rounds
        infos: dict[str, dict[str, Any]] = {a: {"round": len(self._moves)} for a in AGENTS}
        if done:
            totals = self.totals()
            for agent in AGENTS:
                infos[agent].update(rounds=self.rounds, total=totals[agent])
        observations = {a: self.observe(a) for a in AGENTS}
        terminations = dict.fromkeys(AGENTS, done)
        truncations = dict.fromkeys(AGENTS, False)
        if done:
            self.agents = []
        return observations, rewards, terminations, truncations, infos

    def render(self) -> str | None:
        if self.render_mode is None:
            return None
        self._require_reset("render")
        return "\n".join(f"{ACTION_NAMES[a]} / {ACTION_NAMES[b]}" for a, b in self._moves)

    def close(self) -> None:
        """Nothing to release."""


def parallel_env(**kwargs) -> PrisonersDilemmaEnv:
    return PrisonersDilemmaEnv(**kwargs)


def raw_env(**kwargs):
    """The AEC view (agents move in turn; moves are revealed together), as PettingZoo builds it."""
    return parallel_to_aec(parallel_env(**kwargs))


def env(**kwargs):
    return ActionCheckWrapper(raw_env(**kwargs))
