"""TextArena's games of two to six players as PettingZoo ids: free-text moves, the random state isolated, exact replay.

The default run plays a sample (the games the agent's own draws changed before isolation, and the
cheap classics); RAGEN_BENCH_FULL_SWEEPS=1 plays every id.
"""

from __future__ import annotations

import copy
import importlib
import json
import os
import random
import re
import subprocess
import sys
import warnings
from typing import Any

import numpy as np
import pytest

pytest.importorskip("pettingzoo")
pytest.importorskip("textarena")

from pettingzoo.test import api_test  # noqa: E402

from ragen_bench.cli import main  # noqa: E402
from ragen_bench.data import textarena as table  # noqa: E402
from ragen_bench.games import GAME_IDS, game_entry, make_multiagent  # noqa: E402
from ragen_bench.games.board import GameResetNeededError, IllegalMoveError, UnknownAgentError  # noqa: E402
from ragen_bench.games.opponents import OPPONENTS  # noqa: E402
from ragen_bench.games.textarena.games import SEATS, game_id  # noqa: E402
from tests.conftest import REPO_ROOT, run_python  # noqa: E402

ALL_IDS = [game_id(game) for game in SEATS]
MANY_IDS = [game_id(game) for game in table.MANY_PLAYERS]
FULL_SWEEPS = os.environ.get("RAGEN_BENCH_FULL_SWEEPS") == "1"
# Kuhn poker, Pig, Liar's Dice, Poker and Secret Mafia (6 seats) changed with the agent's draws before isolation.
SAMPLE = ALL_IDS if FULL_SWEEPS else [game_id(g) for g in ("KuhnPoker-v0", "PigDice-v0", "LiarsDice-v0", "TicTacToe-v0",
                                                          "SecretMafia-v0")]


def play(env_id: str, seed: int, draw_between: bool, max_moves: int = 60, env: Any = None) -> list:
    """Every seat played by the scripted ``random`` opponent from ``seed`` (in ``env``, else a new one): every
    view, move, reward, end."""
    env = env or make_multiagent(env_id)
    env.reset(seed=seed)
    game, player = env.unwrapped, OPPONENTS["textarena"]["random"]()
    transcript: list = [game.text_observation(seat) for seat in game.possible_agents]
    for _ in range(max_moves):
        if game.game_over:
            break
        seat = game.agent_selection
        if draw_between:
            random.random(), np.random.rand(), random.shuffle(list(range(10)))
        move = player.choose(game, seat)
        env.step(move)
        transcript.append((seat, move, game.text_observation(seat), dict(game.rewards), game.infos[seat]))
    transcript.append((game.winner, game.ending, game.game_over))
    return transcript


def test_the_games_are_game_ids_and_registering_them_imports_no_library():
    assert len(ALL_IDS) == 47 and set(ALL_IDS) <= set(GAME_IDS)
    assert {game_entry(i).seats for i in MANY_IDS} == {3, 4, 6} and {game_entry(i).seats for i in ALL_IDS} == {2, 3, 4, 6}
    tables = (table.TWO_PLAYER, table.SINGLE_PLAYER, table.LEFT_OUT, table.MANY_PLAYERS)
    assert sum(map(len, tables)) == 95 == len(set().union(*tables))  # TextArena 0.7.4's base games, each once
    out = run_python("import sys, ragen_bench\nfrom ragen_bench.games import GAME_IDS\n"
                     "print(sum(i.startswith('RAGEN/TA-') for i in GAME_IDS), 'textarena' in sys.modules)")
    assert out.split() == ["47", "False"]


@pytest.mark.parametrize("env_id", SAMPLE)
def test_the_agents_draws_between_moves_leave_the_game_and_the_game_leaves_the_process_state(env_id):
    plain = play(env_id, 5, draw_between=False)
    assert len(plain) > 4  # the game went past its opening
    assert play(env_id, 5, draw_between=True) == plain
    before = random.getstate(), np.random.get_state()[1].tolist()
    play(env_id, 6, draw_between=False)
    assert (random.getstate(), np.random.get_state()[1].tolist()) == before


@pytest.mark.parametrize("env_id", SAMPLE)
def test_a_seed_deals_the_same_game_whatever_was_played_before_in_the_env(env_id):
    # Kuhn poker shuffles one deck in place, game after game: a seed's deal would follow the games before it.
    env = make_multiagent(env_id)
    first = play(env_id, 5, draw_between=False, env=env)
    play(env_id, 6, draw_between=False, env=env)
    assert play(env_id, 5, draw_between=False, env=env) == first == play(env_id, 5, draw_between=False)


def test_a_game_pickle_refuses_is_deep_copied_at_each_reset_and_deals_the_same():
    # Resets unpickle the new game (pickled once); a game holding something pickle refuses falls back on a deep copy.
    env_id = game_id("KuhnPoker-v0")
    env = make_multiagent(env_id)
    game = env.unwrapped
    game._new_game.unpicklable = lambda: None
    game._new_game_bytes = game._pickled(game._new_game)
    assert game._new_game_bytes is None and make_multiagent(env_id).unwrapped._new_game_bytes
    first = play(env_id, 5, draw_between=False, env=env)
    play(env_id, 6, draw_between=False, env=env)
    assert play(env_id, 5, draw_between=False, env=env) == first == play(env_id, 5, draw_between=False)


_CROSS = """
import json, sys
sys.path.insert(0, '.')
from tests.test_textarena_games import play
print(json.dumps({{env_id: [play(env_id, seed, draw_between=True) for seed in (3, 4)] for env_id in {ids!r}}}, default=str))
"""


def test_games_are_identical_across_processes_and_hash_seeds():
    code = _CROSS.format(ids=SAMPLE)
    runs = [run_python(code, hash_seed=seed, timeout=600) for seed in ("0", "4242")]
    assert runs[0] == runs[1]
    seeds = json.loads(runs[0])[SAMPLE[0]]
    assert seeds[0] != seeds[1]  # the seed deals


@pytest.mark.parametrize("env_id", ["RAGEN/TA-TicTacToe-v0", "RAGEN/TA-Battleship-v0", "RAGEN/TA-ThreePlayerTicTacToe-v0",
                                    "RAGEN/TA-SecretMafia-v0"])
def test_pettingzoo_api_test_passes(env_id):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "Observation is not a NumPy array": the view is text
        api_test(make_multiagent(env_id), num_cycles=100)


def test_a_move_textarena_refuses_is_answered_as_textarena_does():
    env = make_multiagent("RAGEN/TA-TicTacToe-v0")
    env.reset(seed=0)
    game = env.unwrapped
    env.step("[4]")
    assert game.infos["player_0"] == {"move_refused": False} and game.agent_selection == "player_1"
    env.step("[4]")  # taken: a warning, and the same seat is asked again
    assert game.infos["player_1"] == {"move_refused": True} and game.agent_selection == "player_1"
    assert "attempted an invalid move" in game.text_observation("player_1")
    env.step("nonsense")  # a second one in a row loses the game
    assert game.game_over and game.winner == "player_0"
    assert game._cumulative_rewards == {"player_0": 1.0, "player_1": -1.0}
    view = game.text_observation("player_1")
    assert view.startswith("[Player 1] nonsense\n\nCurrent Board:")  # its own move, then what TextArena sent
    assert view.endswith("The game is over: won by your opponent (your reward -1). "
                         "The submitted move does not follow the correct format.")


def test_the_random_opponent_plays_only_moves_textarena_takes_where_the_move_set_is_known():
    for env_id in ("RAGEN/TA-TicTacToe-v0", "RAGEN/TA-ConnectFour-v0", "RAGEN/TA-Nim-v0", "RAGEN/TA-Battleship-v0"):
        transcript = play(env_id, 1, draw_between=False, max_moves=200)
        assert not any(step[4]["move_refused"] for step in transcript[2:-1]), env_id
        assert transcript[-1][2]  # played to the end


def test_bad_calls_are_refused_by_name():
    env = make_multiagent("RAGEN/TA-Nim-v0")
    with pytest.raises(GameResetNeededError, match="ragen_textarena_Nim_v0: call reset"):
        env.unwrapped.observe("player_0")
    env.reset(seed=1)
    for action in (3, None, b"[0 1]", "x" * 2001):
        with pytest.raises(IllegalMoveError, match="player_0's move must be a str of at most 2000 characters"):
            env.step(action)
    with pytest.raises(UnknownAgentError, match="unknown agent 'player_2'"):
        env.unwrapped.text_observation("player_2")
    with pytest.raises(ValueError, match="unknown TextArena game 'Wordle-v0'"):
        make_multiagent("RAGEN/TA-Nim-v0", game="Wordle-v0")


def test_a_game_textarena_does_not_end_is_truncated_after_the_seat_limit(monkeypatch):
    # The module (the package's name ``env`` is its env() function).
    monkeypatch.setattr(importlib.import_module("ragen_bench.games.textarena.env"), "SEAT_MOVES", 2)
    transcript = play("RAGEN/TA-Poker-v0", 3, draw_between=False)
    assert transcript[-1] == (None, "Stopped: player_0 made 2 moves and TextArena had not ended the game.", True)


# Games whose seats get messages without moves between ones with moves: ``valid`` then falls back on every
# move the seat was shown, which a late read must merge from several batches at once.
SHOWN_BEFORE = [game_id(g) for g in ("IteratedMatchingPennies-v0", "Snake-v0", "Surround-v0")]


@pytest.mark.parametrize("env_id", sorted({*SAMPLE, *SHOWN_BEFORE}))
def test_views_and_moves_read_late_equal_those_read_at_every_move(env_id):
    # A seat's text and bracketed moves are read from TextArena's messages only when asked: an env read
    # every few moves (several batches of messages then read at once) shows what one read after every move shows.
    eager, late = make_multiagent(env_id), make_multiagent(env_id)
    eager.reset(seed=7)
    late.reset(seed=7)
    player, seats = OPPONENTS["textarena"]["random"](), eager.unwrapped.possible_agents

    def views(env: Any) -> list:
        game = env.unwrapped
        return [(game.text_observation(seat), game.action_space(seat).valid, game.legal_moves(seat)) for seat in seats]

    for move_number in range(40):
        if eager.unwrapped.game_over:
            break
        seen = views(eager)
        if move_number % 3 == 2:
            assert views(late) == seen, move_number
        move = player.choose(eager.unwrapped, eager.agent_selection)
        eager.step(move)
        late.step(move)
    assert views(late) == views(eager) and copy.deepcopy(late).observe("player_0") == eager.observe("player_0")


def test_a_copy_mid_game_goes_on_exactly_as_the_original():
    env = make_multiagent("RAGEN/TA-KuhnPoker-v0")
    env.reset(seed=2)
    game, player = env.unwrapped, OPPONENTS["textarena"]["random"]()
    env.step(player.choose(game, game.agent_selection))
    twin = copy.deepcopy(env)
    for _ in range(4):
        for one in (env, twin):
            if not one.unwrapped.game_over:
                one.step(player.choose(one.unwrapped, one.unwrapped.agent_selection))
    assert twin.unwrapped.text_observation("player_1") == game.text_observation("player_1")
    assert twin.unwrapped.np_random.integers(2**31) == game.np_random.integers(2**31)


def _verified(out: Any, capsys: Any) -> str:
    """``leaderboard verify`` of the eval run in ``out`` (made a submission): how many episodes it matched."""
    from tests.test_leaderboard import submission_info

    (out / "submission.json").write_text(json.dumps(submission_info(out.name)))
    for lock in out.glob("*.lock"):
        lock.unlink()
    capsys.readouterr()
    assert main(["leaderboard", "verify", str(out)]) == 0
    return re.search(r"\d+ episodes", capsys.readouterr().out)[0]


def test_eval_of_the_random_agent_is_verified_by_replay(tmp_path, capsys):
    out = tmp_path / "ta"
    assert main(["eval", "env=RAGEN/TA-TicTacToe-v0", "agent=random", "limit=4", f"out={out}", "progress=false"]) == 0
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    assert {e["game"]["agent_seat"] for e in episodes} == {"player_0", "player_1"}
    assert all(isinstance(move, str) for e in episodes for _, move in e["game"]["moves"])
    # Tic-Tac-Toe lists the open cells after every move: drawn from the newest list, no move is illegal.
    assert json.loads((out / "summary.json").read_text())["games"][0]["illegal_move_rate"] == 0.0
    assert _verified(out, capsys) == "4 episodes"


def test_envs_show_names_the_free_text_moves_and_the_seed_view(capsys):
    assert main(["envs", "show", "RAGEN/TA-KuhnPoker-v0"]) == 0
    page = capsys.readouterr().out
    assert "actions: free text, one move a turn" in page and "opponents: random (default random)" in page
    assert "agent seat: player_1\n--- first view of player_0\nYou are Player 0 in a 3 round game of Kuhn Poker." in page


def test_a_person_plays_a_game_with_typed_moves(tmp_path):
    command = [sys.executable, "-m", "ragen_bench.cli", "play", "RAGEN/TA-TicTacToe-v0", "--seed", "124",
               "--out", str(tmp_path / "play")]
    done = subprocess.run(command, input="[4]\n[0]\n[8]\n", capture_output=True, text=True, timeout=300, cwd=REPO_ROOT)
    assert done.returncode == 0, done.stderr
    assert "The game is over: won by you (your reward +1). Player 0 has won!" in done.stdout
    assert "1 episode(s) played; run complete" in done.stdout


def test_a_seat_wins_alone_or_with_its_team_draws_when_all_are_level_and_two_seats_keep_their_rule():
    from ragen_bench.chat.game import seat_outcome

    assert [seat_outcome("player_1", {}, seat) for seat in ("player_0", "player_1")] == ["loss", "win"]
    two = {"player_0": 0.0, "player_1": 0.0}
    assert seat_outcome(None, two, "player_0") == "draw"
    mafia = {"player_0": -1.0, "player_1": 1.0, "player_2": -1.0, "player_3": 1.0}  # a team of two won
    assert [seat_outcome(None, mafia, seat) for seat in mafia] == ["loss", "win", "loss", "win"]
    level = dict.fromkeys(("player_0", "player_1", "player_2"), 30.0)
    assert [seat_outcome(None, level, seat) for seat in level] == ["draw"] * 3


def test_a_game_of_six_seats_goes_round_the_seats_against_a_random_player_at_each_other_and_is_verified(tmp_path, capsys):
    from ragen_bench.leaderboard.errors import LeaderboardError
    from ragen_bench.leaderboard.verify_games import check_seats

    env_id, out = "RAGEN/TA-SecretMafia-v0", tmp_path / "mafia"
    assert main(["eval", f"env={env_id}", "agent=random", "limit=6", f"out={out}", "progress=false"]) == 0
    episodes = sorted((json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()),
                      key=lambda e: e["seed"])
    assert [e["game"]["agent_seat"] for e in episodes] == [f"player_{seed % 6}" for seed in range(123, 129)]
    for e in episodes:
        game, seat = e["game"], e["game"]["agent_seat"]
        assert set(game["totals"]) == {f"player_{i}" for i in range(6)} and game["opponent_trajectory"] is None
        assert {who for who, _ in game["moves"]} - {seat}  # the other seats moved too
        assert e["success"] == (game["outcome"] == "win")
        best = max(game["totals"].values())
        assert game["outcome"] == ("win" if game["totals"][seat] == best else "loss")  # Mafia or village won
    assert _verified(out, capsys) == "6 episodes"
    # A game entry plays every seat: five seeds leave one out.
    with pytest.raises(LeaderboardError, match=r"plays only player_0, .*player_4: a game entry plays all 6 seats"):
        check_seats([(env_id, "test", seed, 0) for seed in range(126, 131)], name="mafia")
    check_seats([(env_id, "test", seed, 0) for seed in range(126, 132)], name="mafia")


@pytest.mark.parametrize("env_id", ["RAGEN/TA-TicTacToe-v0", "RAGEN/TA-ThreePlayerGOPS-v0"])
def test_a_game_run_renders_its_free_text_moves(tmp_path, env_id):
    from ragen_bench.render import iter_frames

    out = tmp_path / "run"
    assert main(["eval", f"env={env_id}", "agent=random", "limit=1", f"out={out}", "progress=false"]) == 0
    record = json.loads((out / "episodes.jsonl").read_text().splitlines()[0])
    frames = list(iter_frames(record, {}, None))
    moves = record["game"]["moves"]
    assert len(frames) == len(moves) + 1
    assert all(f"{seat} plays {move}" in frame.caption for frame, (seat, move) in zip(frames[1:], moves))
    assert frames[-1].caption.endswith(f"agent ({record['game']['agent_seat']}): {record['game']['outcome']}")
