"""TextArena's single-player games as ids: frozen registration, the random state isolated, exact replay.

The default run checks a sample of the ids (the four whose episodes the agent's own draws changed
before isolation, plus cheap ones); RAGEN_BENCH_FULL_SWEEPS=1 checks every id.
"""

from __future__ import annotations

import copy
import json
import os
import pickle
import random
import sys

import gymnasium
import numpy as np
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import catalog, panels, registry
from ragen_bench.cli import main
from ragen_bench.data import textarena as table
from ragen_bench.envs.textarena import games
from ragen_bench.envs.textarena.library import IsolatedRandom
from ragen_bench.envs.textarena.shown import Inbox
from tests import env_contract
from tests.conftest import REPO_ROOT, run_python

pytest.importorskip("textarena")

ALL_IDS = [games.env_id(game) for game in games.SINGLE_PLAYER]
FULL_SWEEPS = os.environ.get("RAGEN_BENCH_FULL_SWEEPS") == "1"
# 2048, Blackjack and Minesweeper changed when the agent drew random numbers (scripts/textarena_survey.py).
SAMPLE = ALL_IDS if FULL_SWEEPS else [games.env_id(g) for g in ("2048-v0", "Blackjack-v0", "Minesweeper-v0", "Sokoban-v0")]
# Moves that reach past the opening of most games: bracketed moves of several shapes, and a non-move.
MOVES = ["[3 3]", "[up]", "[1]", "[hit]", "[0 1]", "nonsense", "[left]", "[2 2]", "[stand]", "[down]"] * 3


def play(env_id: str, seed: int, draw_between: bool) -> list:
    """The transcript of ``MOVES`` from ``seed``; with ``draw_between`` the agent draws random numbers between calls."""
    env = gymnasium.make(env_id)
    observation, info = env.reset(seed=seed)
    transcript = [observation, info]
    for move in MOVES:
        if draw_between:
            random.random(), np.random.rand(), random.shuffle(list(range(10)))
        step = env.step(move)
        transcript.append(step)
        if step[2] or step[3]:
            break
    return transcript


def test_registration_is_frozen_data_and_imports_no_library():
    out = run_python(
        "import sys, gymnasium, ragen_bench\n"
        "ta = [i for i in ragen_bench.ENV_IDS if i.startswith('RAGEN/TA-')]\n"
        "print(len(ta), 'textarena' in sys.modules, all(i in gymnasium.registry for i in ta))"
    )
    assert out.split() == [str(len(games.SINGLE_PLAYER)), "False", "True"]


def test_the_table_covers_every_base_game_once():
    from textarena.envs.registration import ENV_REGISTRY

    base = {name for name in ENV_REGISTRY if name.count("-") == 1 and name.endswith("-v0")}
    assert len(base) == 95
    assert set(games.SINGLE_PLAYER) <= base and set(games.LEFT_OUT) <= base
    assert not set(games.SINGLE_PLAYER) & set(games.LEFT_OUT)
    rows = [registry.entry(env_id) for env_id in ALL_IDS]
    assert {(row.family, row.extra) for row in rows} == {("textarena", "textarena")}
    assert not set(ALL_IDS) & set(registry.BUILTIN_IDS)


def test_the_extra_pins_the_library_and_make_installs_it():
    import importlib.metadata

    assert importlib.metadata.version("textarena") == "0.7.4"
    assert 'textarena = ["textarena==0.7.4", "numpy", "ragen-bench[games]"]' in (REPO_ROOT / "pyproject.toml").read_text()
    assert ",textarena," in (REPO_ROOT / "Makefile").read_text()


def test_each_budget_is_the_games_own_move_limit_one_move_a_turn():
    for game, limit in table.SINGLE_PLAYER.items():
        budget = registry.chat_budget(games.env_id(game))
        moves = limit or table.OPEN_GAME_MOVES
        assert (budget.max_turns, budget.max_actions_per_turn, budget.max_actions_per_episode) == (moves, 1, moves)
        assert ("limit on the game's moves" in budget.basis) == bool(limit), game


@pytest.mark.parametrize("env_id", SAMPLE)
def test_the_agents_own_draws_never_change_the_episode(env_id):
    assert play(env_id, 7, draw_between=True) == play(env_id, 7, draw_between=False)


@pytest.mark.parametrize("env_id", SAMPLE)
def test_the_process_random_state_is_left_as_it_was(env_id):
    env_contract.assert_global_rngs_untouched(env_id, MOVES[:6])


def test_making_and_playing_leave_a_fresh_process_random_state_as_it_was():
    """Importing textarena draws from ``random``, and RushHour deals a puzzle when it is built: neither shows."""
    out = run_python(
        "import random, gymnasium, ragen_bench\n"
        "random.seed(99); before = random.getstate()\n"
        "env = gymnasium.make('RAGEN/TA-RushHour-v0'); env.reset(seed=0); env.step('[A+]')\n"
        "print(random.getstate() == before)"
    )
    assert out.split() == ["True"]


def test_without_isolation_the_draws_would_change_the_game():
    """The failure the isolation prevents: TextArena's Minesweeper reads the global ``random`` on its first move."""
    from ragen_bench.envs.textarena.library import make_game

    def boards(draw: bool) -> str:
        game = make_game("Minesweeper-v0")
        game.reset(num_players=1, seed=3)
        if draw:
            random.random()
        game.step("[3 3]")
        return str(game.state.game_state["grid"])

    assert boards(False) != boards(True)


def test_isolated_random_keeps_its_own_stream_and_restores_the_processes():
    from textarena import core  # a TextArena module that draws from ``random``

    own = random.Random(5)
    rng = IsolatedRandom(5)
    random.seed(1)
    assert rng.call(lambda: core.random.random()) == own.random()
    assert random.random() == random.Random(1).random()  # the process's stream did not move
    assert core.random is random
    with pytest.raises(ZeroDivisionError):
        rng.call(lambda: [core.random.random() for _ in range(3)] and 1 / 0)
    assert core.random is random  # put back when the call raised, too
    [own.random() for _ in range(3)]
    assert rng.call(lambda: core.random.random()) == own.random()  # the game keeps the failed call's draws
    restored = pickle.loads(pickle.dumps(rng))
    assert restored.call(lambda: core.random.random()) == rng.call(lambda: core.random.random())


def test_same_episodes_in_fresh_processes():
    # Four fresh interpreters: the default run plays the three ids the agent's draws changed (Sokoban's
    # generation, ~0.7 s a deal, only in the full sweep).
    plan = {env_id: MOVES for env_id in (ALL_IDS if FULL_SWEEPS else [i for i in SAMPLE if "Sokoban" not in i])}
    env_contract.assert_same_in_fresh_processes(plan)


def test_a_copy_goes_on_as_the_original():
    env = gymnasium.make("RAGEN/TA-2048-v0").unwrapped
    env.reset(seed=4)
    env.step("[up]")
    for twin in (copy.deepcopy(env), pickle.loads(pickle.dumps(env))):
        assert [twin.step(m)[0] for m in ("[left]", "[down]")] == [env.step(m)[0] for m in ("[left]", "[down]")]
        env.reset(seed=4)
        env.step("[up]")


def test_outcome_is_paid_on_the_last_step_and_success_is_a_solved_game():
    env = gymnasium.make("RAGEN/TA-ThreeCardMonte-v0").unwrapped
    outcomes = set()
    for seed in range(6):
        env.reset(seed=seed)
        observation, reward, terminated, truncated, info = env.step("[1]")
        assert terminated and not truncated and reward == info["score"]
        assert info["success"] == (reward == 1.0)
        outcomes.add(info["success"])
    assert outcomes == {True, False}


def test_valid_lists_the_moves_the_games_text_has_shown():
    env = gymnasium.make("RAGEN/TA-2048-v0").unwrapped
    env.reset(seed=4)
    rules = env.action_space.valid
    assert set(rules) >= {"[Up]", "[Down]", "[Left]", "[Right]"} and "[Player 0]" not in rules
    env.step("[up]")  # the answer is a board, no bracketed move: every move the episode has shown
    assert set(env.action_space.valid) == set(rules)
    env.step("[zz]")  # the player's own words never count as a move shown, even when TextArena echoes them
    assert "[zz]" not in env.action_space.valid and "[Up]" in env.action_space.valid
    env.reset(seed=4)
    assert env.action_space.valid == rules  # a new episode starts from its own text
    cups = gymnasium.make("RAGEN/TA-ThreeCardMonte-v0").unwrapped
    cups.reset(seed=0)
    assert set(cups.action_space.valid) >= {"[0]", "[1]", "[2]"}


def test_valid_is_the_newest_list_the_game_has_shown():
    # Many games restate the moves open now after every move: the newest list is the one that holds, the
    # older ones (and a player's words, which may quote any move) are stale.
    inbox = Inbox()
    inbox.add([(-1, "Rules: answer like [up] or [down]", 0)])
    assert inbox.valid() == ("[up]", "[down]")
    inbox.moved()
    inbox.add([(-1, "Open now: [a1] [a2] [b1]", 0), (0, "I play [zz]", 0), (-1, "Open now: [a2] [b1]", 0)])
    inbox.add([(-1, "Player 1 moved.", 0)])  # a batch with no move shown leaves the newer list standing
    assert inbox.valid() == ("[a2]", "[b1]")
    inbox.moved()  # nothing shown since the last move: every move the episode has shown, the newest first
    assert inbox.valid() == ("[b1]", "[a2]", "[down]", "[up]")


def test_a_game_with_a_known_move_set_lists_exactly_the_moves_textarena_takes():
    hanoi = gymnasium.make("RAGEN/TA-TowerOfHanoi-v0").unwrapped
    hanoi.reset(seed=123)
    assert hanoi.action_space.valid == ("[A B]", "[A C]")  # only tower A holds disks
    hanoi.step("[A C]")
    assert set(hanoi.action_space.valid) == {"[A B]", "[C A]", "[C B]"}
    pegs = gymnasium.make("RAGEN/TA-PegJump-v0").unwrapped
    pegs.reset(seed=123)
    for move in pegs.action_space.valid:  # each listed jump is taken; the first unlisted one is not
        assert pegs.step(move)[4]["action_is_valid"]
        pegs.reset(seed=123)
    assert not pegs.step("[1 2]")[4]["action_is_valid"]


def test_reading_the_moves_taken_never_changes_the_episode():
    # Bandit draws a reward from the game's generator at every press: the trials on copies must put it back.
    def play(read: bool) -> list:
        env = gymnasium.make("RAGEN/TA-Bandit-v0").unwrapped
        env.reset(seed=130)
        texts = []
        for press in range(20):
            if read:
                assert len(env.action_space.valid) == 5
            texts.append(env.step(("[red]", "[blue]", "[purple]")[press % 3])[0])
        return texts

    assert play(read=True) == play(read=False)


def test_the_invalid_move_that_ends_the_game_is_not_a_valid_action():
    env = gymnasium.make("RAGEN/TA-Bandit-v0").unwrapped
    env.reset(seed=123)
    assert not env.step("[nothing]")[4]["action_is_valid"]  # a warning
    _, reward, terminated, _, info = env.step("[nothing]")  # the second in a row ends the game
    assert terminated and reward == -1.0 and not info["action_is_valid"]
    assert env.action_space.valid == ()  # nothing is taken once the game has ended


def test_the_random_agent_draws_the_moves_shown(tmp_path):
    # Three-card Monte shows its cups as [0] [1] [2]: a random cup wins about a third of the games.  Before
    # ``valid`` the agent wrote random characters and never won.
    out = tmp_path / "run"
    assert main(["eval", "env=RAGEN/TA-ThreeCardMonte-v0", "agent=random", "limit=48", f"out={out}",
                 "progress=false"]) == 0
    episodes = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    env = gymnasium.make("RAGEN/TA-ThreeCardMonte-v0").unwrapped
    for episode in episodes:  # each first move is one of those the deal's text shows (cups and the rules' examples)
        env.reset(seed=episode["seed"])
        assert episode["turns"][0]["parsed_actions"][0] in env.action_space.valid
    assert 8 <= sum(episode["success"] for episode in episodes) <= 28


def test_panels_are_frozen_and_disjoint():
    # Sokoban deals in ~0.7 s a seed: its panels are regenerated in the full sweep (and by `envs verify`).
    for env_id in (ALL_IDS if FULL_SWEEPS else [env_id for env_id in SAMPLE if "Sokoban" not in env_id]):
        seeds = {split: set(panels.load(env_id, split).seeds) for split in panels.SPLITS}
        assert not seeds["train"] & seeds["val"] and not seeds["val"] & seeds["test"]
        assert not seeds["train"] & seeds["test"]
        panels.load(env_id, "test").verify()


def test_a_missing_extra_is_one_clear_error(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "textarena", None)  # as if the extra were not installed
    assert main(["envs", "show", "RAGEN/TA-2048-v0"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pip install 'ragen-bench[textarena]'" in err[0]


def test_envs_list_counts_the_family():
    families = {(row["family"], row["kind"]): row for row in catalog.family_rows()}
    assert families["textarena", "single-agent"]["ids"] == str(len(games.SINGLE_PLAYER))
    assert families["textarena", "single-agent"]["extra"] == "textarena"


def test_the_doc_lists_every_game_left_out_with_its_reason():
    page = (REPO_ROOT / "docs" / "textarena.md").read_text(encoding="utf-8")
    for game, reason in games.LEFT_OUT.items():
        assert f"`{game}`" in page and reason in page, game
    for env_id in ALL_IDS:
        assert f"`{env_id}`" in page, env_id
