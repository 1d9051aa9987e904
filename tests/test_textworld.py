"""TextWorld ids (RAGEN/TextWorld-<type>-v0): BALROG's three game types, frozen game files, textworld 1.7.0.

The text view (``game_text``) and the id table are tested without the library; the tests that play
need the ``textworld`` extra and skip without it (fail in CI), saying what to install.
"""

from __future__ import annotations

import copy
import gzip
import hashlib
import importlib.util
import json
import shutil
import sys

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import catalog, panels
from ragen_bench.data import balrog
from ragen_bench.data.textworld import BALROG_STEPS, GAME_TYPES, SPLITS
from ragen_bench.envs.base import MissingExtra
from ragen_bench.envs.textworld import backend, game_text
from ragen_bench.envs.textworld.env import MAX_STEPS, REFUSED
from ragen_bench.registry import BUILTIN_IDS, ENV_IDS, chat_budget, entry
from tests.conftest import REPO_ROOT, in_ci, run_python

IDS = [f"RAGEN/TextWorld-{kind}-v0" for kind in GAME_TYPES]
GAMES = REPO_ROOT / "data" / "textworld" / "games"


@pytest.fixture(scope="module")
def textworld() -> None:
    """Skip (fail in CI) when the extra is missing."""
    if importlib.util.find_spec("textworld") is None:
        if in_ci():
            pytest.fail(f"{backend.INSTALL_HINT}; CI=true, so this is a failure, not a skip")
        pytest.skip(backend.INSTALL_HINT)


# -- the text view, a pure function ---------------------------------------------------------------


def test_game_text_drops_the_status_line_the_prompt_and_extra_blank_lines():
    feedback = "\nYou are carrying nothing.\n\n\n\n>" + " " * 120 + "-= Messy Basement =-0/4"
    assert game_text(feedback) == "You are carrying nothing."
    assert game_text("-= Office =-\nAn office.\n\n\n\nExits: east.\n\n>") == "-= Office =-\nAn office.\n\nExits: east."


def test_game_text_at_reset_keeps_only_what_follows_the_objective_as_balrog_does():
    intro = "  ____ banner ____\n\nYour task: take the coin.\n\n-= Office =-\nAn office.\n\n>" + " " * 40 + "-= Office =-0/1"
    assert game_text(intro, "Your task: take the coin.") == "-= Office =-\nAn office."
    assert game_text(intro, "an objective not in the text").startswith("____ banner ____")
    assert game_text("\n\n>") == "(no text)"


# -- registration, the frozen games and the missing extra ----------------------------------------


def test_ids_are_registered_without_importing_textworld():
    out = run_python(
        "import sys, gymnasium, ragen_bench\n"
        "env = gymnasium.make('RAGEN/TextWorld-Cooking-v0')\n"
        "print('textworld' in sys.modules, 'jericho' in sys.modules)"
    )
    assert out.strip() == "False False"
    assert [i for i in ENV_IDS if i.startswith("RAGEN/TextWorld-")] == IDS
    assert all(entry(i).extra == "textworld" and entry(i).kwargs == {"game_type": i[16:-3]} for i in IDS)
    assert not set(IDS) & set(BUILTIN_IDS)
    # Each of BALROG's TextWorld tasks is one of these ids, its game type's task name BALROG's.
    played = {task.name: task.env_id for task in balrog.TASKS if task.world == "textworld"}
    assert played == {row[4]: f"RAGEN/TextWorld-{kind}-v0" for kind, row in GAME_TYPES.items()}


def test_every_split_s_games_are_frozen_checksummed_and_apart():
    table = json.loads((GAMES / "manifest.json").read_text())
    for kind, splits in SPLITS.items():
        seeds = [seed for split in splits.values() for seed in split]
        assert len(seeds) == len(set(seeds)) and len(splits["test"]) == balrog.EPISODES["textworld"]
        assert sorted(table[kind], key=int) == sorted(map(str, seeds), key=int)
        for seed in seeds:
            for suffix in backend.SUFFIXES:
                unpacked = gzip.decompress((GAMES / kind / f"{seed}.{suffix}.gz").read_bytes())
                assert hashlib.sha256(unpacked).hexdigest() == table[kind][str(seed)][suffix]


def test_the_manifest_is_what_the_generation_script_computes_from_the_files_there():
    # The script's own manifest(): every file in data/textworld/games, so a stray or missing game shows.
    spec = importlib.util.spec_from_file_location("textworld_games", REPO_ROOT / "scripts" / "textworld_games.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.manifest() == json.loads((GAMES / "manifest.json").read_text())


@pytest.mark.parametrize("missing", ["textworld", "jericho"])
def test_either_missing_library_names_the_extra(monkeypatch, tmp_path, missing):
    monkeypatch.setenv("RAGEN_BENCH_CACHE", str(tmp_path))
    if importlib.util.find_spec("textworld") is not None:
        import textworld  # noqa: F401  (whole, before jericho goes: a half-imported textworld would stay behind)
    monkeypatch.setitem(sys.modules, missing, None)  # import now raises ModuleNotFoundError
    with pytest.raises(MissingExtra, match=r"ragen-bench\[textworld\]"):
        gymnasium.make("RAGEN/TextWorld-CoinCollector-v0").reset(seed=123)


def test_the_catalog_marks_the_ids_when_textworld_is_missing(monkeypatch):
    found = importlib.util.find_spec
    monkeypatch.setattr(catalog.importlib.util, "find_spec", lambda name: None if name == "textworld" else found(name))
    assert {catalog.missing_extra(env_id) for env_id in IDS} == {backend.INSTALL_HINT}


def test_a_bad_game_type_is_refused_by_name():
    with pytest.raises(ValueError, match="TextWorldEnv: game_type"):
        gymnasium.make("RAGEN/TextWorld-Cooking-v0", game_type="Zork")


def test_a_tampered_game_file_is_refused(textworld, monkeypatch, tmp_path):
    copy = tmp_path / "data"
    shutil.copytree(REPO_ROOT / "data" / "textworld", copy / "textworld")
    packed = copy / "textworld" / "games" / "CoinCollector" / "124.json.gz"
    packed.write_bytes(gzip.compress(gzip.decompress(packed.read_bytes()) + b" "))
    monkeypatch.setenv("RAGEN_BENCH_DATA_DIR", str(copy))
    monkeypatch.setenv("RAGEN_BENCH_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(backend, "manifest", backend.manifest.__wrapped__)
    with pytest.raises(backend.GameFileError, match=r"CoinCollector/124.json.gz does not match its checksum"):
        gymnasium.make("RAGEN/TextWorld-CoinCollector-v0").reset(seed=124)


# -- playing --------------------------------------------------------------------------------------


def _play_optimal(env, seed: int) -> tuple[list[str], dict]:
    env.reset(seed=seed)
    commands = []
    while (command := env.optimal_action()) is not None:
        commands.append(command)
        _, _, terminated, truncated, info = env.step(command)
    assert terminated and not truncated and info["success"] and info["progress"] == 1.0, (env.game_type, seed)
    return commands, info


# The walkthroughs' longest test-panel wins (the card states them).
LONGEST_WALKTHROUGH = {"TreasureHunter": 20, "Cooking": 75, "CoinCollector": 20}


@pytest.mark.parametrize("env_id", IDS)
def test_the_walkthrough_wins_every_test_game_within_balrog_s_80_step_budget(textworld, env_id):
    env = gymnasium.make(env_id).unwrapped
    lengths = [len(_play_optimal(env, seed)[0]) for seed in panels.load(env_id, "test").seeds]
    budget = chat_budget(env_id)
    assert max(lengths) == LONGEST_WALKTHROUGH[env.game_type] <= MAX_STEPS == env.max_steps == BALROG_STEPS == 80
    assert (budget.max_turns, budget.max_actions_per_turn, budget.max_actions_per_episode) == (MAX_STEPS, 1, MAX_STEPS)


def test_the_score_is_balrog_s_points_share_and_leaving_the_walkthrough_ends_the_optimal_agent(textworld):
    env = gymnasium.make("RAGEN/TextWorld-Cooking-v0").unwrapped
    _, info = env.reset(seed=124)
    assert info["points"] == 0 and info["max_points"] > 1 and info["optimal_length"] is None
    while info["points"] == 0:
        _, reward, terminated, _, info = env.step(env.optimal_action())
    assert reward == 1.0 and not terminated and info["progress"] == pytest.approx(1 / info["max_points"])
    env.step("look")
    assert env.optimal_action() is None and env.optimal_plan(3) == []


def test_meta_commands_are_refused_and_the_episode_is_cut_at_balrog_s_80_steps(textworld):
    env = gymnasium.make("RAGEN/TextWorld-CoinCollector-v0").unwrapped
    first, _ = env.reset(seed=125)
    assert env.step("restart")[0] == REFUSED and env.step("look")[0] == first
    assert env.step("go\n  nowhere")[0] != REFUSED  # whitespace collapsed: one command
    for step in range(4, MAX_STEPS + 1):
        _, _, terminated, truncated, _ = env.step("inventory")
        assert not terminated and truncated == (step == MAX_STEPS)


def test_the_goal_command_prints_the_objective_reset_leaves_out(textworld):
    env = gymnasium.make("RAGEN/TextWorld-TreasureHunter-v0").unwrapped
    first, _ = env.reset(seed=123)
    goal = env.step("goal")[0]
    assert goal and goal not in first and env._objective.strip() in goal


def test_a_copy_mid_episode_and_a_closed_env_go_on_exactly_as_the_original(textworld):
    env = gymnasium.make("RAGEN/TextWorld-Cooking-v0").unwrapped
    env.reset(seed=128)
    for command in ("inventory", "restart", *env.optimal_plan(6)):
        env.step(command)
    twin, closed = copy.deepcopy(env), copy.deepcopy(env)
    closed.close()
    for command in ("look", "examine cookbook", "go north", "take knife", "inventory"):
        expected = env.step(command)
        assert twin.step(command) == expected == closed.step(command)


def test_held_out_games_are_reached_only_by_their_own_seeds(textworld):
    env = gymnasium.make("RAGEN/TextWorld-CoinCollector-v0").unwrapped
    train = SPLITS["CoinCollector"]["train"]
    assert env.reset(seed=123)[1]["game_seed"] == 123 and env.reset(seed=1001)[1]["game_seed"] == 1001
    assert [env.reset(seed=seed)[1]["game_seed"] for seed in (0, 1, 2, 10_002, 2**40)] == [train[s % 2] for s in (0, 1, 2, 10_002, 2**40)]
    assert {env.reset()[1]["game_seed"] for _ in range(6)} <= set(train)  # unseeded resets too


@pytest.mark.parametrize("env_id", IDS)
def test_panels_regenerate(textworld, env_id):
    for split in ("train", "val", "test"):
        panel = panels.load(env_id, split)
        panel.verify()
        assert panel.seeds == SPLITS[entry(env_id).kwargs["game_type"]][split]


def episodes_digest() -> str:
    """Every id's walkthrough on two test games plus a fixed walk, as one digest."""
    digest = hashlib.sha256()
    for env_id in IDS:
        env = gymnasium.make(env_id).unwrapped
        for seed in panels.load(env_id, "test").seeds[:2]:
            commands, info = _play_optimal(env, seed)
            digest.update(repr((commands, info, env.render_text())).encode())
        env.reset(seed=panels.load(env_id, "val").seeds[0])
        for command in ("look", "go north", "go east", "inventory", "take coin", "examine cookbook", "go south"):
            digest.update(repr(env.step(command)).encode())
    return digest.hexdigest()


def test_same_episodes_in_a_fresh_process(textworld):
    fresh = run_python("from tests.test_textworld import episodes_digest; print(episodes_digest())", hash_seed="4242")
    assert fresh.strip() == episodes_digest()
