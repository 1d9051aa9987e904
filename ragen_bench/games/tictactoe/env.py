"""Tic-Tac-Toe on PettingZoo's AEC API, with a text view for LLM agents."""

from __future__ import annotations

from ragen_bench.games.board import BoardGameEnv, wrap
from ragen_bench.games.tictactoe import picture
from ragen_bench.games.tictactoe.rules import TicTacToeRules


class TicTacToeEnv(BoardGameEnv):
    """Three in a row on a 3x3 grid; two seats, X moves first.

    ## Description
    ``player_0`` plays X and moves first, ``player_1`` plays O.  Players take turns
    marking an empty cell; a full row, column or diagonal of one's own marks wins, and
    a full board without one is a draw.  Perfect play from both sides draws.

    ## Action Space
    ``Discrete(9)``: the cell, row-major.  ``action_names`` are ``A1 A2 A3 B1 .. C3``
    (row letter, column number).  A move into an occupied cell is illegal (masked).

    ## Observation Space
    ``Dict(observation=Box(0, 1, (3, 3, 2), int8), action_mask=Box(0, 1, (9,), int8))``:
    plane 0 the observer's own marks, plane 1 the opponent's.  The mask is all zeros
    for the agent not on move.  ``text_observation(agent)`` is the LLM view: the
    agent's mark, the grid (``X``, ``O``, ``.``) and the legal move names.

    ## Starting State
    The empty grid, ``player_0`` on move.

    ## Rewards
    Win +1, loss -1, draw 0 for both, all given on the final move.  Through ``env()``
    an illegal move ends the game: -1 for the mover, 0 for the other.

    ## Episode End
    Termination on a win or a full board (at most 9 moves); no truncation.

    ## Information
    ``infos`` are empty dicts; the winner is ``env.unwrapped.winner`` (``None`` for a draw).

    ## Arguments
    ``render_mode``: ``None``, ``"ansi"`` (``render()`` returns the grid text) or
    ``"rgb_array"`` (a picture of the grid, drawn by ``picture.draw``).
    The seed of ``reset`` changes no position; it seeds ``np_random``, the built-in
    opponents' tie-breaking generator.

    ## Version History
    * v0: initial version.
    """

    rules = TicTacToeRules
    metadata = {
        "render_modes": ["ansi", "rgb_array"], "render_fps": 2, "name": "ragen_tictactoe_v0", "is_parallelizable": False,
    }
    draw_board = staticmethod(picture.draw)
    instruction = (
        "You are playing Tic-Tac-Toe on a 3x3 grid against an opponent. Players take turns; "
        "X moves first. Put your mark in an empty cell; three of your marks in a row, column "
        "or diagonal wins. Cells are named by row letter (A-C) and column number (1-3), e.g. B2 "
        "is the centre. Answer with the name of one empty cell."
    )


def raw_env(**kwargs) -> TicTacToeEnv:
    return TicTacToeEnv(**kwargs)


def env(**kwargs):
    return wrap(raw_env(**kwargs))
