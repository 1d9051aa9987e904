"""The game scripts in scripts/ run, and the Tic-Tac-Toe card's measured strength is what its command prints."""

from __future__ import annotations

import importlib.util
import json

import pytest

pytest.importorskip("pettingzoo")

from ragen_bench.games import connect_four, tictactoe  # noqa: E402
from ragen_bench.games.opponents import OPPONENTS, MinimaxPlayer, RandomPlayer  # noqa: E402
from ragen_bench.games.strength import match  # noqa: E402
from ragen_bench.games.tictactoe.env import TicTacToeEnv  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402


def _script(name: str):
    """A script of ``scripts/`` as a module (scripts are not in the package)."""
    spec = importlib.util.spec_from_file_location(name, REPO_ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize(("first_on_even", "win", "draw", "mean_moves"), [(True, 185, 15, 6.99), (False, 179, 21, 6.89)])
def test_minimax_against_random_gives_the_cards_figures(first_on_even, win, draw, mean_moves):
    result = match(tictactoe.env(), MinimaxPlayer(), RandomPlayer(), 200, first_on_even)
    assert (result["win"], result["draw"], result["loss"], result["mean_moves"]) == (win, draw, 0, mean_moves)


@pytest.mark.parametrize(("make", "players", "games"), [
    (lambda: (tictactoe.env(), TicTacToeEnv()), ("minimax", "random"), 60),
    (lambda: (connect_four.env(), connect_four.raw_env()), ("strong", "random"), 4),
])
def test_the_wrapped_env_plays_the_raw_envs_games(make, players, games):
    wrapped, raw = make()
    family = "tictactoe" if "minimax" in players else "connect_four"
    first, second = (OPPONENTS[family][name]() for name in players)
    results = [match(env, first, second, games) for env in (wrapped, raw)]
    assert [dict(r, seconds=0) for r in results[:1]] == [dict(r, seconds=0) for r in results[1:]]


def test_the_command_prints_both_seatings_and_self_play(capsys):
    assert _script("tictactoe_strength").main(["20"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [('"even seeds"' in line, '"opponent": "minimax"' in line) for line in lines] == [
        (True, False), (False, False), (True, True)]
    assert '"draw": 20, "loss": 0' in lines[2]


def test_the_connect_four_command_prints_one_line_per_rival(capsys):
    assert _script("connect_four_strength").main(["1"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 5 and all('"player": ' in line and '"games": 1' in line for line in lines)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # PettingZoo's classic games, imported as peers
def test_the_speed_script_prints_one_json_line_per_measurement(capsys):
    assert _script("games_bench").main(["0.01"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    measured = [row for row in rows if "what" in row]
    assert {row["what"] for row in measured} >= {"RAGEN/TicTacToe-v0 env()", "connect_four strong"}
    assert all(row.get("steps/s", row.get("moves/s", 0)) > 0 for row in measured)
