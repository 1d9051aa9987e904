"""PettingZoo's own API and seed tests on every multi-agent game, the id table, and the light import."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import warnings

import pytest

pytest.importorskip("pettingzoo")

from pettingzoo.test import api_test, parallel_api_test, parallel_seed_test, seed_test  # noqa: E402

import numpy as np  # noqa: E402

import ragen_bench  # noqa: E402
from ragen_bench.games.board import IllegalMoveError  # noqa: E402
from ragen_bench.games import GAME_IDS, game_entry, make_multiagent  # noqa: E402
from ragen_bench.games.registry import game_module  # noqa: E402
from tests.conftest import REPO_ROOT, run_python  # noqa: E402

OWN_GAME_IDS = tuple(env_id for env_id in GAME_IDS if game_entry(env_id).extra == "games")
# TextArena's 42 games share one class: a sample here (tests/test_textarena_games.py checks more).
CHECKED_IDS = tuple(env_id for env_id in GAME_IDS if game_entry(env_id).extra != "textarena"
                    or env_id in ("RAGEN/TA-TicTacToe-v0", "RAGEN/TA-KuhnPoker-v0"))


@pytest.fixture(autouse=True)
def _quiet_api_warnings():
    # api_test warns about dict observations and all-zero first boards, as it does for PettingZoo's own classic games.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


@pytest.mark.parametrize("env_id", CHECKED_IDS)
def test_pettingzoo_api_and_seed_tests_pass(env_id):
    module = game_module(env_id)
    make = functools.partial(module.env, **game_entry(env_id).kwargs)  # an OpenSpiel id names its game
    api_test(make(), num_cycles=300)
    seed_test(make, num_cycles=300)
    if game_entry(env_id).parallel:
        parallel_api_test(module.parallel_env(), num_cycles=300)
        parallel_seed_test(module.parallel_env)


@pytest.mark.parametrize("env_id", OWN_GAME_IDS)  # the OpenSpiel games: tests/test_openspiel.py
@pytest.mark.parametrize("action", [True, np.True_, None, 1.5, "A1", np.array([0, 1])])
def test_the_wrapped_env_refuses_a_non_move_as_the_raw_env_does(env_id, action):
    """Through env(), PettingZoo's wrappers never see it: the raw env's IllegalMoveError names the agent."""
    game = make_multiagent(env_id)
    game.reset(seed=0)
    game.step(0)  # player_0 moves; player_1's action is the bad one
    with pytest.raises(IllegalMoveError, match=r"player_1's action must be (an int|0 or 1), got "):
        game.step(action)
    assert game.agent_selection == "player_1" and not any(game.terminations.values())
    game.step(1)  # nothing was played: the game goes on
    if not game_entry(env_id).parallel:
        assert game.unwrapped.board.moves == [0, 1]


@pytest.mark.parametrize(("env_id", "action", "legal_range"), [
    ("RAGEN/TicTacToe-v0", 9, "0..8"),
    ("RAGEN/TicTacToe-v0", -1, "0..8"),
    ("RAGEN/TicTacToe-v0", np.int64(9), "0..8"),
    ("RAGEN/ConnectFour-v0", 7, "0..6"),
    ("RAGEN/ConnectFour-v0", -1, "0..6"),
])
def test_an_out_of_range_move_gets_the_raw_env_error_naming_the_range(env_id, action, legal_range):
    """Not PettingZoo's bare AssertionError (AssertOutOfBoundsWrapper), and nothing played or ended."""
    for game in (make_multiagent(env_id), game_module(env_id).raw_env()):
        game.reset(seed=0)
        game.step(0)
        with pytest.raises(IllegalMoveError, match=rf"player_1's action must be in {legal_range}, got {int(action)}$"):
            game.step(action)
        assert game.agent_selection == "player_1" and not any(game.terminations.values())
        game.step(1)
        assert game.unwrapped.board.moves == [0, 1]


def test_an_out_of_range_move_is_the_same_error_under_python_dash_o():
    """Under ``python -O`` the assertion is gone and PettingZoo would index the mask: an IndexError."""
    code = (
        "from ragen_bench.games import make_multiagent\n"
        "from ragen_bench.games.board import IllegalMoveError\n"
        "game = make_multiagent('RAGEN/TicTacToe-v0'); game.reset(seed=0)\n"
        "try:\n    game.step(9)\nexcept IllegalMoveError as error:\n    print(error)\n"
    )
    done = subprocess.run([sys.executable, "-O", "-c", code], capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "ragen_tictactoe_v0: player_0's action must be in 0..8, got 9\n"


@pytest.mark.parametrize("action", [None, True, 2])
def test_the_prisoners_dilemma_aec_view_refuses_a_bad_action_when_it_is_given(action):
    game = make_multiagent("RAGEN/PrisonersDilemma-v0")
    game.reset(seed=0)
    with pytest.raises(IllegalMoveError, match="player_0's action must be 0 or 1"):
        game.step(action)  # not only once player_1 has moved too
    assert game.agent_selection == "player_0"


def test_a_finished_agent_still_steps_none_through_the_wrapper():
    game = make_multiagent("RAGEN/TicTacToe-v0")
    game.reset(seed=0)
    for move in (0, 3, 1, 4, 2):  # X takes the top row
        game.step(move)
    assert all(game.terminations.values())
    done = game.agent_selection
    game.step(None)  # what PettingZoo's loop sends a finished agent
    assert game.agents == [agent for agent in ("player_0", "player_1") if agent != done]


@pytest.mark.parametrize("actions", [None, True, [0, 1], "cooperate"])
def test_the_parallel_step_takes_a_dict_only(actions):
    game = make_multiagent("RAGEN/PrisonersDilemma-v0", parallel=True)
    game.reset(seed=0)
    with pytest.raises(IllegalMoveError, match="step takes a dict of agent -> action, got "):
        game.step(actions)


@pytest.mark.parametrize("env_id", CHECKED_IDS)
@pytest.mark.parametrize(("seed", "error", "message"), [
    (-1, ValueError, "seed must be in 0..18446744073709551615, got -1"),
    (2**64, ValueError, "seed must be in 0..18446744073709551615, got 18446744073709551616"),
    (True, TypeError, "seed must be an int or None, got True"),
    (np.True_, TypeError, "seed must be an int or None, got "),
    (1.0, TypeError, "seed must be an int or None, got 1.0"),
])
def test_reset_refuses_a_bad_seed_by_name(env_id, seed, error, message):
    row = game_entry(env_id)
    for game in (make_multiagent(env_id), *([make_multiagent(env_id, parallel=True)] if row.parallel else [])):
        with pytest.raises(error, match=f"{game.unwrapped.metadata['name']}: {message}"):
            game.reset(seed=seed)
    make_multiagent(env_id).reset(seed=np.int64(2**40))  # numpy ints and large seeds are fine


@pytest.mark.parametrize("env_id", CHECKED_IDS)
def test_games_keep_the_single_agent_seed_contract(env_id):
    """One piece of code (SeedContract): the same checks as TextEnv's, the same episode for the same
    seed, and unseeded resets drawn from the env's own generator, seeded by the last seeded reset."""
    from ragen_bench.envs.base import SeedContract, TextEnv

    game = make_multiagent(env_id).unwrapped
    assert isinstance(game, SeedContract) and issubclass(TextEnv, SeedContract)
    assert type(game)._check_seed is TextEnv._check_seed

    def draws(game):
        game.reset(seed=11)
        seen = [int(game.np_random.integers(2**31))]
        for _ in range(3):
            game.reset()
            seen.append(int(game.np_random.integers(2**31)))
        return seen, getattr(game, "rounds", None)

    first, second = make_multiagent(env_id).unwrapped, make_multiagent(env_id).unwrapped
    assert draws(first) == draws(second)
    assert first.np_random_seed == 11


def test_make_multiagent_is_on_the_package_and_applies_the_id_kwargs():
    env = ragen_bench.make_multiagent("RAGEN/PrisonersDilemma-v0", parallel=True)
    assert (env.min_rounds, env.max_rounds, env.message_chars) == (5, 10, 200)
    shorter = make_multiagent("RAGEN/PrisonersDilemma-v0", parallel=True, max_rounds=6)
    assert shorter.max_rounds == 6
    assert make_multiagent("RAGEN/TicTacToe-v0").unwrapped.metadata["name"] == "ragen_tictactoe_v0"


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: make_multiagent("RAGEN/Chess-v0"), "unknown multi-agent id 'RAGEN/Chess-v0'"),
        (lambda: make_multiagent("RAGEN/Sokoban-6x6-v0"), "`ragen-bench envs list` shows all 58"),
        (lambda: make_multiagent("RAGEN/TicTacToe-v1"), "did you mean RAGEN/TicTacToe-v0, RAGEN/TA-TicTacToe-v0 or"),
        (lambda: make_multiagent("RAGEN/TicTacToe-v0", parallel=True), "turn-based"),
        (lambda: make_multiagent("RAGEN/PrisonersDilemma-v0", max_rounds=0), "min_rounds <= max_rounds"),
        (lambda: make_multiagent("RAGEN/PrisonersDilemma-v0", max_rounds=7.5), "max_rounds must be an int"),
        (lambda: make_multiagent("RAGEN/TicTacToe-v0", render_mode="human"), "render_mode"),
    ],
)
def test_make_multiagent_refuses_with_a_named_reason(call, message):
    with pytest.raises((KeyError, ValueError)) as caught:
        call()
    assert message in str(caught.value)


def test_core_import_does_not_load_pettingzoo_until_a_game_is_made():
    out = run_python(
        "import sys, ragen_bench\n"
        "before = 'pettingzoo' in sys.modules\n"
        "ragen_bench.make_multiagent('RAGEN/ConnectFour-v0')\n"
        "print(__import__('json').dumps([before, 'pettingzoo' in sys.modules]))"
    )
    assert json.loads(out) == [False, True]


_SCRIPTED_GAMES = """
import json
from ragen_bench.games.registry import game_module
from ragen_bench.games.opponents import OPPONENTS
out = {}
for family, env_id, first, second in [
    ("connect_four", "RAGEN/ConnectFour-v0", "strong", "random"),
    ("tictactoe", "RAGEN/TicTacToe-v0", "minimax", "random"),
]:
    game = game_module(env_id).raw_env()
    players = {"player_0": OPPONENTS[family][first](), "player_1": OPPONENTS[family][second]()}
    for seed in (3, 4):
        game.reset(seed=seed)
        while not game.game_over:
            game.step(players[game.agent_selection].choose(game, game.agent_selection))
        out[f"{env_id}/{seed}"] = game.board.moves
pd = game_module("RAGEN/PrisonersDilemma-v0").parallel_env()
out["pd"] = [pd.reset(seed=s) and pd.rounds for s in range(20)]
print(json.dumps(out))
"""


def test_seeded_games_are_identical_across_processes():
    first = json.loads(run_python(_SCRIPTED_GAMES, hash_seed="1"))
    assert first == json.loads(run_python(_SCRIPTED_GAMES, hash_seed="2"))
    # The seeds do matter: the random player's moves differ between seed 3 and 4.
    assert first["RAGEN/ConnectFour-v0/3"] != first["RAGEN/ConnectFour-v0/4"]
    assert set(first["pd"]) <= set(range(5, 11)) and len(set(first["pd"])) > 1
