"""Scripted players for the games: who an LLM agent plays against, and reference points.

A player is an object with a ``name`` and ``choose(game, agent) -> int``, where
``game`` is the unwrapped game env and ``agent`` the seat it moves for.  Ties between
equally good moves are broken with ``game.np_random``, which ``reset(seed=...)``
seeds: the seed of a game decides every scripted choice in it.

Nothing here imports PettingZoo; the players only read the game's public state (OpenSpiel's
MCTS bot searches from the live OpenSpiel state, which it imports when it first moves).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ragen_bench.games.board import random_choice


class RandomPlayer:
    """A uniformly random legal move."""

    name = "random"

    def choose(self, game: Any, agent: str) -> int:
        return random_choice(game.np_random, game.legal_moves(agent))


class MinimaxPlayer:
    """Tic-Tac-Toe: a uniformly random move among the game-theoretically optimal ones (never loses)."""

    name = "minimax"

    def choose(self, game: Any, agent: str) -> int:
        from ragen_bench.games.tictactoe.rules import optimal_moves

        return random_choice(game.np_random, optimal_moves(game.board.flat(), game._seat(agent)))


class SearchPlayer:
    """Connect Four: alpha-beta to ``depth`` plies, random among the best-scored moves.

    With ``heuristic=False`` non-final positions score 0, so the player sees only
    wins and losses within its horizon (plain depth-limited minimax); with it, open
    lines and centre stones are scored (:func:`~ragen_bench.games.connect_four.rules.heuristic`).
    """

    def __init__(self, depth: int, heuristic: bool, name: str | None = None) -> None:
        if type(depth) is not int or not 1 <= depth <= 8:
            raise ValueError(f"search depth must be an int in 1..8, got {depth!r}")
        self.depth, self.heuristic = depth, heuristic
        self.name = name or f"{'heuristic' if heuristic else 'minimax'}-depth{depth}"

    def choose(self, game: Any, agent: str) -> int:
        from ragen_bench.games.connect_four.rules import best_moves

        position = game.board.position(game._seat(agent))
        return random_choice(game.np_random, best_moves(position, self.depth, self.heuristic))


# The Connect Four opponent the card measures; a new depth or evaluation needs a new name.
STRONG_DEPTH = 6


class FixedPlayer:
    """Prisoner's Dilemma: the same move every round."""

    def __init__(self, move: int, name: str) -> None:
        self.move, self.name = move, name

    def choose(self, game: Any, agent: str) -> int:
        return self.move


class TitForTat:
    """Prisoner's Dilemma: cooperate first, then repeat the other player's last move."""

    name = "tit_for_tat"

    def choose(self, game: Any, agent: str) -> int:
        history = game.history(agent)
        return history[-1][1] if history else 0


# OpenSpiel's MCTS opponent: simulations per move (a new count needs a new name), UCT constant.
MCTS_SIMULATIONS = 100
MCTS_UCT_C = 2.0


class MCTSPlayer:
    """OpenSpiel games: OpenSpiel's own MCTS bot, ``MCTS_SIMULATIONS`` random-rollout simulations a move.

    Perfect-information games get ``mcts.MCTSBot`` on the live state; the poker games get
    ``ismcts.ISMCTSBot``, which searches over the deals the seat's information allows
    (plain MCTS would read the opponent's card).  Each move's bot is seeded from
    ``game.np_random``, so the seed of a game decides every choice.
    """

    name = "mcts"

    def choose(self, game: Any, agent: str) -> int:
        import pyspiel
        from open_spiel.python.algorithms import ismcts, mcts

        seed = int(game.np_random.integers(2**31))
        evaluator = mcts.RandomRolloutEvaluator(n_rollouts=1, random_state=np.random.RandomState(seed))
        searcher = mcts.MCTSBot if game.spec.perfect_information else ismcts.ISMCTSBot
        bot = searcher(
            game=game._env, uct_c=MCTS_UCT_C, max_simulations=MCTS_SIMULATIONS, evaluator=evaluator,
            random_state=np.random.RandomState(seed + 1),
        )
        if not game.spec.perfect_information:
            # IS-MCTS draws the worlds it searches with an unseeded C++ sampler by default.
            sampler = pyspiel.UniformProbabilitySampler(seed + 2, 0.0, 1.0)
            bot.set_resampler(lambda state, player: state.resample_from_infostate(player, sampler))
        return int(bot.step(game.game_state.clone()))


class TextMovePlayer:
    """TextArena's games: a random move TextArena accepts, among those known of the game (legal-ish).

    Free-text games have no move list; the candidates are the game's known move set, where
    one is written down, and the bracketed moves its text has shown the seat
    (``move_options``).  They are tried in a random order (one permutation from
    ``np_random``), each on a copy of the game (``accepts``), and the first one TextArena
    takes is played; when none is taken, the first tried (TextArena then answers it as
    invalid), or ``[0]`` when nothing is known.
    """

    name = "random"

    def choose(self, game: Any, agent: str) -> str:
        options = game.move_options(agent) or ("[0]",)
        order = [options[int(i)] for i in game.np_random.permutation(len(options))]
        return next((move for move in order if game.accepts(agent, move)), order[0])


OPPONENTS: dict[str, dict[str, Callable[[], Any]]] = {
    "tictactoe": {"random": RandomPlayer, "minimax": MinimaxPlayer},
    "connect_four": {"random": RandomPlayer, "strong": lambda: SearchPlayer(STRONG_DEPTH, True, "strong")},
    "prisoners_dilemma": {
        "random": RandomPlayer,
        "tit_for_tat": TitForTat,
        "always_cooperate": lambda: FixedPlayer(0, "always_cooperate"),
        "always_defect": lambda: FixedPlayer(1, "always_defect"),
    },
    "openspiel": {"random": RandomPlayer, "mcts": MCTSPlayer},
    "textarena": {"random": TextMovePlayer},
}
