"""Connect Four on PettingZoo's AEC API, with a text view for LLM agents."""

from __future__ import annotations

from ragen_bench.games.board import BoardGameEnv, wrap
from ragen_bench.games.connect_four import picture
from ragen_bench.games.connect_four.rules import ConnectFourRules


class ConnectFourEnv(BoardGameEnv):
    """Drop stones into a 6x7 upright grid; four in a line wins.

    ## Description
    ``player_0`` plays X and moves first, ``player_1`` plays O.  A move drops a stone
    into a column; it falls to the lowest empty cell.  Four of one's own stones in a
    row, column or diagonal wins; a full grid without one is a draw.

    ## Action Space
    ``Discrete(7)``: the column, left to right; ``action_names`` are ``1`` .. ``7``.
    A full column is illegal (masked).

    ## Observation Space
    ``Dict(observation=Box(0, 1, (6, 7, 2), int8), action_mask=Box(0, 1, (7,), int8))``:
    row 0 is the top; plane 0 the observer's stones, plane 1 the opponent's.  The mask
    is all zeros for the agent not on move.  ``text_observation(agent)`` is the LLM
    view: a header of column numbers, the grid (``X``, ``O``, ``.``, top row first)
    and the legal columns.

    ## Starting State
    The empty grid, ``player_0`` on move.

    ## Rewards
    Win +1, loss -1, draw 0 for both, given on the final move.  Through ``env()`` an
    illegal move ends the game: -1 for the mover, 0 for the other.

    ## Episode End
    Termination on a win or a full grid (at most 42 moves); no truncation.

    ## Information
    ``infos`` are empty dicts; the winner is ``env.unwrapped.winner`` (``None`` for a draw).

    ## Arguments
    ``render_mode``: ``None``, ``"ansi"`` or ``"rgb_array"`` (a picture of the grid,
    drawn by ``picture.draw``).  The seed of ``reset`` changes no
    position; it seeds ``np_random``, the built-in opponents' tie-breaking generator.

    ## Version History
    * v0: initial version.
    """

    rules = ConnectFourRules
    metadata = {
        "render_modes": ["ansi", "rgb_array"], "render_fps": 2, "name": "ragen_connect_four_v0", "is_parallelizable": False,
    }
    draw_board = staticmethod(picture.draw)
    instruction = (
        "You are playing Connect Four against an opponent on a grid of 6 rows and 7 columns. "
        "Players take turns; X moves first. A move drops your stone into a column, where it "
        "falls to the lowest empty cell. Four of your stones in a row, column or diagonal wins. "
        "Columns are numbered 1 to 7 from the left. Answer with the number of one column that is not full."
    )


def raw_env(**kwargs) -> ConnectFourEnv:
    return ConnectFourEnv(**kwargs)


def env(**kwargs):
    return wrap(raw_env(**kwargs))
