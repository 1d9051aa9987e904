"""The Tic-Tac-Toe card's measured strength is what its command prints."""

from __future__ import annotations

import pytest

pytest.importorskip("pettingzoo")

from ragen_bench.games.opponents import MinimaxPlayer, RandomPlayer  # noqa: E402
from ragen_bench.games.strength import match  # noqa: E402
from ragen_bench.games.tictactoe import strength  # noqa: E402
from ragen_bench.games.tictactoe.env import TicTacToeEnv  # noqa: E402


@pytest.mark.parametrize(("first_on_even", "win", "draw", "mean_moves"), [(True, 185, 15, 6.99), (False, 179, 21, 6.89)])
def test_minimax_against_random_gives_the_cards_figures(first_on_even, win, draw, mean_moves):
    result = match(TicTacToeEnv(), MinimaxPlayer(), RandomPlayer(), 200, first_on_even)
    assert (result["win"], result["draw"], result["loss"], result["mean_moves"]) == (win, draw, 0, mean_moves)


def test_the_command_prints_both_seatings_and_self_play(capsys):
    assert strength.main(["20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [('"even seeds"' in line, '"opponent": "minimax"' in line) for line in lines] == [
        (True, False), (False, False), (True, True)]
    assert '"draw": 20, "loss": 0' in lines[2]
