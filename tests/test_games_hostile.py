"""Every multi-agent game under hostile use: calls before reset, unknown agent names, copies mid-game.

The shared rules live in :class:`ragen_bench.games.board.GameContract`; these tests run them over
all eleven games, raw and through ``env()`` (PettingZoo's API tests are in tests/test_games_api.py).
"""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import warnings

import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from ragen_bench.envs.base import ResetNeededError  # noqa: E402
from ragen_bench.games import GAME_IDS, game_entry, make_multiagent  # noqa: E402
from ragen_bench.games.board import AGENTS, GameResetNeededError, UnknownAgentError, check_agent  # noqa: E402
from ragen_bench.games.opponents import OPPONENTS  # noqa: E402
from tests.conftest import REPO_ROOT  # noqa: E402

# The games with discrete moves and action masks; TextArena's free-text games: tests/test_textarena_games.py.
MASKED_GAME_IDS = tuple(env_id for env_id in GAME_IDS if game_entry(env_id).extra != "textarena")

# A live game's per-agent calls, each with the arguments after the agent.
PER_AGENT_CALLS = {"observe": (), "text_observation": (), "legal_moves": ()}
PD_CALLS = {**PER_AGENT_CALLS, "history": ()}
# Names that are no seat: wrong number, wrong case, empty, and values that are not str at all.
UNKNOWN_AGENTS = ["player_9", "PLAYER_0", "player_0 ", "", None, 0, ["player_0"], np.array(["player_0"])]


def _calls(env_id: str) -> dict[str, tuple]:
    return PD_CALLS if game_entry(env_id).parallel else PER_AGENT_CALLS


def _wrapped_calls(env_id: str) -> dict[str, tuple]:
    """The per-agent calls ``env()`` answers: the Prisoner's Dilemma's AEC view (PettingZoo's
    ``parallel_to_aec``) passes on only the AEC API; its text view is on ``.unwrapped``."""
    return {"observe": ()} if game_entry(env_id).parallel else PER_AGENT_CALLS


def _raw(env_id: str, **kwargs):
    """The game itself (the Prisoner's Dilemma's parallel env, not its AEC view)."""
    return make_multiagent(env_id, **kwargs).unwrapped


def _first_move(env_id: str):
    """What ``step`` takes for the game's first move, raw."""
    return dict.fromkeys(AGENTS, 0) if game_entry(env_id).parallel else 0


def _a_legal_move(env) -> int:
    """The lowest legal move of the agent on move in ``env`` (an AEC env, wrapped or raw)."""
    return int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0])


@pytest.fixture(autouse=True)
def _quiet_pettingzoo():
    # PettingZoo warns about an illegal-move end in TerminateIllegalWrapper; not what is tested here.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        yield


# -- before the first reset ----------------------------------------------------------


@pytest.mark.parametrize("env_id", MASKED_GAME_IDS)
def test_the_raw_game_refuses_position_calls_before_reset_naming_the_game(env_id):
    game = _raw(env_id, render_mode="ansi")
    name = game.metadata["name"]
    for call, args in _calls(env_id).items():
        with pytest.raises(GameResetNeededError, match=rf"^{name}: call reset\(\) before {call}\(\)$"):
            getattr(game, call)("player_0", *args)
    if game_entry(env_id).parallel:
        with pytest.raises(GameResetNeededError, match=rf"^{name}: call reset\(\) before send_message\(\)$"):
            game.send_message("player_0", "hello")
    with pytest.raises(GameResetNeededError, match=rf"^{name}: call reset\(\) before step\(\)$"):
        game.step(_first_move(env_id))
    with pytest.raises(GameResetNeededError, match=rf"^{name}: call reset\(\) before render\(\)$"):
        game.render()
    # The spaces need no position, and the refusals changed nothing: the game then plays as usual.
    assert game.action_space("player_0").n == len(game.action_names)
    game.reset(seed=0)
    assert game.legal_moves("player_0")  # player_0 moves first in every game
    assert game.render() is not None


@pytest.mark.parametrize("env_id", MASKED_GAME_IDS)
def test_the_wrapped_game_refuses_as_the_raw_game_does(env_id):
    env = make_multiagent(env_id, render_mode="ansi")
    name = env.unwrapped.metadata["name"]
    calls = {**{call: (lambda c, a: lambda: getattr(env, c)("player_0", *a))(call, args)
                for call, args in _wrapped_calls(env_id).items()},
             "step": lambda: env.step(0), "render": env.render, "agent_iter": env.agent_iter}
    for call, make_call in calls.items():
        with pytest.raises(GameResetNeededError, match=rf"^{name}: call reset\(\) before {call}\(\)$"):
            make_call()
    env.reset(seed=0)
    env.step(_a_legal_move(env))
    assert env.unwrapped.text_observation("player_0")


def test_the_reset_error_is_the_single_agent_one_and_pettingzoos_one():
    """Code written for the single-agent envs (ResetNeededError) or for PettingZoo (AssertionError) catches it."""
    game = _raw("RAGEN/TicTacToe-v0")
    for expected in (ResetNeededError, AssertionError):
        with pytest.raises(expected):
            game.observe("player_0")


def test_before_reset_no_openspiel_game_is_over_or_won():
    game = _raw("RAGEN/OS-Hex-v0")
    assert (game.game_over, game.winner) == (False, None)
    board = _raw("RAGEN/TicTacToe-v0")
    assert (board.game_over, board.winner) == (False, None)  # the same answer as the board games give


# -- unknown agents ------------------------------------------------------------------


@pytest.mark.parametrize("env_id", MASKED_GAME_IDS)
@pytest.mark.parametrize("agent", UNKNOWN_AGENTS, ids=repr)
def test_every_per_agent_call_refuses_an_unknown_agent_by_name(env_id, agent):
    game = _raw(env_id)
    env = make_multiagent(env_id)
    name = game.metadata["name"]
    expected = f"{name}: unknown agent {agent!r}; the agents are player_0, player_1"
    # The spaces are answered before a reset too, so they are asked first.
    for target in (game, env):
        for call in ("observation_space", "action_space"):
            with pytest.raises(UnknownAgentError) as caught:
                getattr(target, call)(agent)
            assert str(caught.value) == expected
    game.reset(seed=0)
    env.reset(seed=0)
    for target, calls in ((game, _calls(env_id)), (env, _wrapped_calls(env_id))):
        for call, args in calls.items():
            with pytest.raises(UnknownAgentError) as caught:
                getattr(target, call)(agent, *args)
            assert str(caught.value) == expected
    if game_entry(env_id).parallel:
        # A message names a seat like any per-agent call.
        with pytest.raises(UnknownAgentError) as caught:
            game.send_message(agent, "hello")
        assert str(caught.value) == expected
    # Nothing moved: the real seats still play.
    env.step(_a_legal_move(env))
    assert game.legal_moves("player_0")


def test_the_unknown_agent_error_is_a_value_error_and_a_key_error_with_a_plain_message():
    with pytest.raises(ValueError) as caught:
        check_agent("g", "x", AGENTS)
    assert isinstance(caught.value, KeyError)
    assert str(caught.value) == "g: unknown agent 'x'; the agents are player_0, player_1"  # not quoted like a KeyError
    long = "p" * 500
    with pytest.raises(UnknownAgentError) as caught:
        check_agent("g", long, AGENTS)
    assert len(str(caught.value)) < 160 and str(caught.value).endswith("...; the agents are player_0, player_1")


@pytest.mark.parametrize("family", ["tictactoe", "connect_four"])
def test_scripted_opponents_refuse_a_seat_that_is_no_seat(family):
    env_id = {"tictactoe": "RAGEN/TicTacToe-v0", "connect_four": "RAGEN/ConnectFour-v0"}[family]
    game = _raw(env_id)
    game.reset(seed=0)
    for player in OPPONENTS[family].values():
        with pytest.raises(UnknownAgentError, match="unknown agent 'player_2'"):
            player().choose(game, "player_2")


# -- copies --------------------------------------------------------------------------


def _snapshot(env) -> dict:
    """Everything a player can read of ``env`` (wrapped AEC) now, as plain comparable values."""
    game = env.unwrapped
    seats = {}
    for agent in AGENTS:
        observation = env.observe(agent)
        seats[agent] = (
            observation["observation"].tolist(), observation["action_mask"].tolist(),
            game.text_observation(agent), game.legal_moves(agent),
        )
    return {
        "seats": seats,
        "agents": list(env.agents),
        "on_move": env.agent_selection if env.agents else None,
        "rewards": dict(env.rewards),
        "cumulative": dict(env._cumulative_rewards),
        "terminations": dict(env.terminations),
        "truncations": dict(env.truncations),
    }


def _play_on(env, chooser: np.random.Generator, moves: int | None) -> list[dict]:
    """Step ``env`` with legal moves drawn by ``chooser`` (``moves`` of them, or to the end); the snapshots."""
    seen = []
    while env.agents and (moves is None or len(seen) < moves):
        agent = env.agent_selection
        if env.terminations[agent] or env.truncations[agent]:
            env.step(None)
        else:
            mask = env.observe(agent)["action_mask"]
            env.step(int(chooser.choice(np.flatnonzero(mask))))
        seen.append(_snapshot(env))
    return seen


def _draws(env) -> list[int]:
    game = env.unwrapped
    streams = [game.np_random] + ([game.chance_rng] if hasattr(game, "chance_rng") else [])
    return [int(stream.integers(2**31)) for stream in streams]


def _mid_game(env_id: str, seed: int = 7, moves: int = 3):
    env = make_multiagent(env_id)
    env.reset(seed=seed)
    env.unwrapped.np_random.integers(10, size=2)  # an opponent's tie-breaks: the generator has moved on
    _play_on(env, np.random.default_rng(seed), moves)
    assert env.agents, f"{env_id}: the game ended before the copy was taken"
    return env


@pytest.mark.parametrize("env_id", MASKED_GAME_IDS)
def test_a_copy_mid_game_goes_on_exactly_as_the_original(env_id):
    original = _mid_game(env_id)
    copies = [copy.deepcopy(original), pickle.loads(pickle.dumps(original))]
    assert all(_snapshot(other) == _snapshot(original) for other in copies)
    # The same further moves (to the end of the game) give the same views, rewards and chance outcomes.
    expected = _play_on(original, np.random.default_rng(99), None)
    assert expected and not original.agents
    expected_draws = _draws(original)
    for other in copies:
        assert _play_on(other, np.random.default_rng(99), None) == expected
        assert _draws(other) == expected_draws


@pytest.mark.parametrize("env_id", MASKED_GAME_IDS)
def test_a_copy_is_independent_of_the_original(env_id):
    original = _mid_game(env_id)
    before = _snapshot(original)
    draws_before = _draws(copy.deepcopy(original))
    for other in (copy.deepcopy(original), pickle.loads(pickle.dumps(original.unwrapped))):
        if other.agents and hasattr(other, "agent_selection"):
            _play_on(other, np.random.default_rng(1), 2)
        else:  # the Prisoner's Dilemma itself (parallel): one round
            other.step(dict.fromkeys(other.agents, 1))
        _draws(other)
    assert _snapshot(original) == before and _draws(original) == draws_before


def test_a_copy_of_the_parallel_prisoners_dilemma_goes_on_as_the_original():
    game = make_multiagent("RAGEN/PrisonersDilemma-v0", parallel=True)
    game.reset(seed=3)
    game.send_message("player_0", "let us cooperate")
    game.step({"player_0": 0, "player_1": 1})
    game.send_message("player_1", "sorry")
    copies = [copy.deepcopy(game), pickle.loads(pickle.dumps(game))]
    rounds = [{"player_0": k % 2, "player_1": 0} for k in range(game.rounds)]

    def play(env):
        out = []
        for actions in rounds:
            if not env.agents:
                break
            observations, rewards, terminations, truncations, infos = env.step(actions)
            out.append(({a: o["observation"].tolist() for a, o in observations.items()}, rewards, terminations, infos,
                        [env.text_observation(a) for a in AGENTS]))
        return out

    expected = play(game)
    assert len(expected) == game.rounds - 1 and "sorry" in expected[0][4][0]
    assert all(play(other) == expected for other in copies)


def test_a_copy_before_reset_is_still_not_reset():
    game = _raw("RAGEN/OS-Nim-v0")
    for other in (copy.deepcopy(game), pickle.loads(pickle.dumps(game))):
        with pytest.raises(GameResetNeededError):
            other.observe("player_0")
        other.reset(seed=0)
        assert other.legal_moves("player_0")


_COPY_AT_EXIT = """
import copy, pickle
import numpy as np
from ragen_bench.games import GAME_IDS, game_entry, make_multiagent
kept = []
for env_id in (i for i in GAME_IDS if game_entry(i).extra != "textarena"):
    env = make_multiagent(env_id)
    kept.append(copy.deepcopy(env))  # before reset
    env.reset(seed=1)
    env.step(int(np.flatnonzero(env.observe(env.agent_selection)["action_mask"])[0]))
    kept += [copy.deepcopy(env), pickle.loads(pickle.dumps(env)), pickle.loads(pickle.dumps(env.unwrapped))]
print(len(kept))
"""


def test_copying_every_game_prints_nothing_at_exit():
    """No ``Exception ignored in __del__`` or other traceback when the copies are collected at exit."""
    done = subprocess.run([sys.executable, "-c", _COPY_AT_EXIT], capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout == f"{4 * len(MASKED_GAME_IDS)}\n"
