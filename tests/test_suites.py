"""Generalization suites: definitions, frozen files, checksums, tamper detection."""

from __future__ import annotations

import dataclasses
import json
import shutil

import pytest

from ragen_bench import panels, suites
from ragen_bench.registry import BUILTIN_IDS

SUITE_NAMES = [
    "balrog-v0",
    "breadth-v0",
    "ragen-bandit-generalization-v0",
    "ragen-generalization-v0",
    "ragen-sokoban-generalization-v0",
    "ragen2-v0",
    "textarena-v0",
]
OUR_IDS = [i for i in BUILTIN_IDS if not i.startswith("RAGEN/Sokoban-")]


def test_names_lists_the_frozen_suites():
    assert suites.names() == SUITE_NAMES == sorted(suites.DEFINITIONS)


# Families added after breadth-v0 was frozen (a suite never gains a member: they wait for breadth-v1).
AFTER_BREADTH_V0 = {"babyai", "human_eval", "textarena", "crafter", "nethack", "textworld"}


def test_breadth_suite_samples_every_single_agent_family_once_or_more():
    from ragen_bench.registry import ENTRIES

    suite = suites.get("breadth-v0")
    families = {panels.family(track.train.env_id) for track in suite.tracks}
    assert families == {row.family for row in ENTRIES} - AFTER_BREADTH_V0
    for track in suite.tracks:  # each id trained on its train panel, tested on its own test panel
        assert (track.train.split, [(p.env_id, p.split, p.axis) for p in track.evaluate]) == (
            "train", [(track.train.env_id, "test", "in-distribution")])


def test_textarena_suite_tests_every_single_player_game_on_its_own_test_panel():
    from ragen_bench.envs.textarena import games

    suite = suites.get("textarena-v0")
    assert [track.train.env_id for track in suite.tracks] == [games.env_id(g) for g in games.SINGLE_PLAYER]
    for track in suite.tracks:
        assert (track.train.split, [(p.env_id, p.split, p.axis, p.episodes) for p in track.evaluate]) == (
            "train", [(track.train.env_id, "test", "in-distribution", None)])


def test_sokoban_suite_is_ragens_generalization_table():
    suite = suites.get("ragen-sokoban-generalization-v0")
    (track,) = suite.tracks
    assert (track.train.env_id, track.train.split) == ("RAGEN/Sokoban-6x6-v0", "train")
    assert [(p.env_id, p.split, p.axis) for p in track.evaluate] == [
        ("RAGEN/Sokoban-6x6-v0", "test", "in-distribution"),
        ("RAGEN/Sokoban-8x8-v0", "test", "size"),
        ("RAGEN/Sokoban-6x6-AltVocab-v0", "test", "vocabulary"),
        ("RAGEN/FrozenLake-4x4-v0", "test", "environment"),
    ]


def test_bandit_suite_tests_held_out_names_and_reversed_semantics():
    (track,) = suites.get("ragen-bandit-generalization-v0").tracks
    assert track.train.env_id == "RAGEN/Bandit-v0"
    evaluated = {p.env_id: p.axis for p in track.evaluate}
    assert evaluated["RAGEN/BanditTest-v0"] == "arm-names" and evaluated["RAGEN/Bandit-Rev-v0"] == "arm-semantics"


def test_ragen2_suite_pairs_each_experiments_train_tag_with_its_validation_tags():
    from ragen_bench.registry import entry

    suite = suites.get("ragen2-v0")
    tracks = {track.name: track for track in suite.tracks}
    assert list(tracks) == ["sokoban", "frozen_lake", "bandit", "countdown", "metamathqa", "sudoku", "2048", "rubikscube"]
    # RAGEN-2's experiment configs validate on their training tag, the bandit also on BanditTest.
    for name, track in tracks.items():
        assert track.train.split == "train" and track.evaluate[0] == dataclasses.replace(
            track.train, split="test", axis="in-distribution", panel_checksum=track.evaluate[0].panel_checksum
        ), name
    assert [(p.env_id, p.axis) for p in tracks["bandit"].evaluate[1:]] == [("RAGEN/BanditTest-R2-v0", "arm-names")]
    tags = {name: entry(track.train.env_id).ragen_name for name, track in tracks.items()}
    assert tags == {
        "sokoban": "CoordSokoban",
        "frozen_lake": "CoordFrozenLake",  # with _3_frozen_lake.yaml's success_rate 1
        "bandit": "Bandit",
        "countdown": None,  # RAGEN's rules on generated instances (its data set is a download)
        "metamathqa": None,  # likewise
        "sudoku": "SimpleSudoku",
        "2048": "game_2048",
        "rubikscube": "rubikscube",
    }


def test_combined_suite_holds_both_tracks():
    combined = suites.get("ragen-generalization-v0")
    assert (
        combined.tracks
        == suites.get("ragen-sokoban-generalization-v0").tracks + suites.get("ragen-bandit-generalization-v0").tracks
    )
    assert len(combined.panels()) == 10  # per track: the training panel and four test panels
    assert len({(p.env_id, p.split) for p in combined.panels()}) == len(combined.panels())


@pytest.mark.parametrize("name", SUITE_NAMES)
def test_suite_files_match_definitions_and_current_panels(name):
    suite = suites.get(name)
    assert suite == suites.generate(name)
    for panel in suite.panels():
        assert panel.panel_checksum == panels.load(panel.env_id, panel.split).checksum
        assert panel.axis in suites.AXES
    with pytest.raises(dataclasses.FrozenInstanceError):
        suite.name = "other"  # type: ignore[misc]


@pytest.mark.parametrize(
    "edit",
    [
        {"panel_checksum": "0" * 64},
        {"axis": "size"},
        {"split": "val"},
        {"env_id": "RAGEN/Bandit-v0"},
    ],
    ids=lambda edit: next(iter(edit)),
)
def test_suite_checksum_changes_with_any_panel_field(edit):
    suite = suites.get("ragen-bandit-generalization-v0")
    track = suite.tracks[0]
    altered = dataclasses.replace(track, evaluate=(dataclasses.replace(track.evaluate[-1], **edit), *track.evaluate[1:]))
    assert suites.suite_checksum(suite.name, (altered,)) != suite.checksum


def test_suite_checksum_ignores_the_prose_description():
    suite = suites.get("ragen-bandit-generalization-v0")
    reworded = dataclasses.replace(suite, description="Reworded.")
    assert suites.suite_checksum(reworded.name, reworded.tracks) == suite.checksum


@pytest.fixture
def data_copy(tmp_path, monkeypatch):
    copy = tmp_path / "data"
    shutil.copytree(panels.data_dir(), copy)
    monkeypatch.setenv("RAGEN_BENCH_DATA_DIR", str(copy))
    return copy


def test_edited_suite_file_is_rejected(data_copy):
    path = data_copy / "suites" / "ragen-bandit-generalization-v0.json"
    data = json.loads(path.read_text())
    data["tracks"][0]["evaluate"].pop()
    path.write_text(json.dumps(data))
    with pytest.raises(suites.SuiteError, match="checksum does not match"):
        suites.get("ragen-bandit-generalization-v0")


def test_rebuilt_panel_invalidates_the_suite(data_copy):
    old = panels.load("RAGEN/Bandit-Rev-v0", "test")
    new = dataclasses.replace(
        old, seeds=old.seeds[:-1], obs_sha256=old.obs_sha256[:-1], optimal_length=old.optimal_length[:-1]
    )
    panels.write(new)
    with pytest.raises(suites.SuiteError, match="Bandit-Rev-v0/test"):
        suites.get("ragen-bandit-generalization-v0")
    assert suites.get("ragen-bandit-generalization-v0", check_panels=False).name == "ragen-bandit-generalization-v0"


def test_unknown_suite_names_the_available_ones():
    with pytest.raises(suites.SuiteError, match="ragen-generalization-v0"):
        suites.get("ragen-generalisation-v9")


def test_axes_are_documented_in_the_suites_readme():
    readme = (panels.data_dir() / "suites" / "README.md").read_text(encoding="utf-8")
    for axis in suites.AXES:
        assert f"`{axis}`" in readme, axis


@pytest.mark.parametrize("env_id", OUR_IDS)
def test_our_panels_exist_and_regenerate_exactly(env_id):
    assert panels.available(env_id) == ["train", "val", "test"]
    panels.load(env_id, "test").verify()


@pytest.mark.parametrize("env_id", OUR_IDS)
def test_env_cards_quote_the_current_panel_checksums(env_id):
    card = (panels.data_dir() / panels.family(env_id) / "README.md").read_text(encoding="utf-8")
    assert f"`{env_id}`" in card
    for split in panels.available(env_id):
        assert panels.load(env_id, split).checksum in card, (env_id, split)
