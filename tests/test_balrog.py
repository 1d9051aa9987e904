"""Suites with episode counts (BALROG's protocol) and the balrog-v0 machinery: the count in the suite
file, eval playing exactly the counted seeds, the run recording them, verify holding an entry to them,
the definition built from the ids registered, and BALROG's published rows beside the suite's ranking.

The suites here are stand-ins written into a temporary folder: balrog-v0 is frozen only once every
world BALROG plays is registered (a suite never gains a member).
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from ragen_bench import panels, suites
from ragen_bench.data import balrog
from ragen_bench.eval import compose_config, rundir, run_eval
from ragen_bench.eval.merge import merge_runs
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.verify import verify
from ragen_bench.registry import ENV_IDS

from .test_leaderboard import edit_json, submission_info

COUNTED = "counted-v0"
# The stand-in: two counted panels and one without a count (the whole panel, or `limit`).
COUNTED_TRACKS = (
    ("sokoban", ("RAGEN/Sokoban-6x6-v0", "train"), (("RAGEN/Sokoban-6x6-v0", "test", "in-distribution", 3),
                                                    ("RAGEN/FrozenLake-4x4-v0", "test", "environment", 2))),
    ("bandit", ("RAGEN/Bandit-v0", "train"), (("RAGEN/Bandit-v0", "test", "in-distribution"),)),
)
BABYAI_IDS = [task.env_id for task in balrog.TASKS if task.world == "babyai" and task.env_id is not None]


@pytest.fixture(scope="module")
def suite_folder(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """A suites folder holding the stand-ins ``counted-v0`` and ``balrog-v0`` (BabyAI's ids: its optimal agent
    plays them), in place of ``data/suites/`` while this module runs."""
    folder = tmp_path_factory.mktemp("suites")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(suites, "suites_dir", lambda: folder)
        patch.setitem(suites.DEFINITIONS, COUNTED, ("Counts on two panels.", COUNTED_TRACKS))
        patch.setitem(suites.DEFINITIONS, balrog.SUITE, suites.balrog_definition(BABYAI_IDS)[0])
        for name in (COUNTED, balrog.SUITE):
            suites.write(suites.generate(name))
        patch.delitem(suites.DEFINITIONS, COUNTED)
        patch.delitem(suites.DEFINITIONS, balrog.SUITE)
        yield folder


def run(out: Path, *overrides: str, suite: str = COUNTED) -> Path:
    run_eval(compose_config("eval", [f"suite={suite}", "agent=optimal", f"out={out}", "progress=false", *overrides]))
    return out


def submit(folder: Path, name: str) -> Path:
    (folder / rundir.LOCK).unlink(missing_ok=True)
    (folder / "submission.json").write_text(json.dumps(submission_info(name)))
    return folder


def episodes_of(out: Path) -> dict[str, list[int]]:
    seeds: dict[str, list[int]] = {}
    for line in (out / rundir.EPISODES).read_text().splitlines():
        record = json.loads(line)
        seeds.setdefault(record["env_id"], []).append(record["seed"])
    return seeds


# -- the suite format --------------------------------------------------------------------


@pytest.mark.parametrize("name", [name for name in suites.names() if name != balrog.SUITE])
def test_a_suite_without_counts_is_written_byte_for_byte_as_before(name: str, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    committed = suites.suite_path(name).read_bytes()
    suite = suites.get(name)
    assert suite.episode_counts() == {}
    monkeypatch.setattr(suites, "suites_dir", lambda: tmp_path)
    assert suites.write(suite).read_bytes() == committed


def test_a_count_is_part_of_the_checksum_and_the_file(suite_folder: Path) -> None:
    suite = suites.get(COUNTED)
    assert suite.episode_counts() == {("RAGEN/Sokoban-6x6-v0", "test"): 3, ("RAGEN/FrozenLake-4x4-v0", "test"): 2}
    data = json.loads((suite_folder / f"{COUNTED}.json").read_text())
    evaluated = data["tracks"][0]["evaluate"] + data["tracks"][1]["evaluate"]
    assert [panel.get("episodes") for panel in evaluated] == [3, 2, None]
    uncounted = tuple(dataclasses.replace(track, evaluate=tuple(dataclasses.replace(panel, episodes=None)
                                                                for panel in track.evaluate))
                      for track in suite.tracks)
    assert suites.suite_checksum(COUNTED, uncounted) != suite.checksum


@pytest.mark.parametrize("count, problem", [(0, "positive integer"), ("3", "positive integer"),
                                            (True, "positive integer"), (257, "whose panel has 256 seeds")])
def test_a_bad_count_is_refused(suite_folder: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                count: Any, problem: str) -> None:
    data = json.loads((suite_folder / f"{COUNTED}.json").read_text())
    data["tracks"][0]["evaluate"][0]["episodes"] = count
    monkeypatch.setattr(suites, "suites_dir", lambda: tmp_path)
    # The checksum recomputed over the edited file: only the count is wrong.
    (tmp_path / f"{COUNTED}.json").write_text(json.dumps(_with_checksum(data)))
    with pytest.raises(suites.SuiteError, match=problem):
        suites.get(COUNTED)


def _with_checksum(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its checksum recomputed the way ``suite_checksum`` does, over the tracks as written."""
    import hashlib

    canonical = json.dumps({"name": data["name"], "tracks": data["tracks"]}, sort_keys=True, separators=(",", ":"))
    return {**data, "checksum": hashlib.sha256(canonical.encode("utf-8")).hexdigest()}


def test_tracks_sharing_a_panel_must_agree_on_its_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(suites, "suites_dir", lambda: tmp_path)
    sokoban = ("RAGEN/Sokoban-6x6-v0", "train")
    monkeypatch.setitem(suites.DEFINITIONS, "clash-v0", ("Two counts.", (
        ("a", sokoban, (("RAGEN/Sokoban-6x6-v0", "test", "in-distribution", 3),)),
        ("b", sokoban, (("RAGEN/Sokoban-6x6-v0", "test", "in-distribution", 4),)))))
    suites.write(suites.generate("clash-v0"))
    with pytest.raises(suites.SuiteError, match="different episode counts"):
        suites.get("clash-v0")


# -- eval, the run, verify ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def counted_run(suite_folder: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    return submit(run(tmp_path_factory.mktemp("entry") / "counted", "limit=4"), "counted")


def test_eval_plays_the_first_counted_seeds_of_each_panel(counted_run: Path) -> None:
    first = {env_id: panels.load(env_id, "test").seeds for env_id in
             ("RAGEN/Sokoban-6x6-v0", "RAGEN/FrozenLake-4x4-v0", "RAGEN/Bandit-v0")}
    # The counts, and limit=4 where the suite sets none.
    assert episodes_of(counted_run) == {"RAGEN/Sokoban-6x6-v0": list(first["RAGEN/Sokoban-6x6-v0"][:3]),
                                        "RAGEN/FrozenLake-4x4-v0": list(first["RAGEN/FrozenLake-4x4-v0"][:2]),
                                        "RAGEN/Bandit-v0": list(first["RAGEN/Bandit-v0"][:4])}


def test_the_run_records_each_count(counted_run: Path) -> None:
    manifest = json.loads((counted_run / rundir.MANIFEST).read_text())
    assert [env.get("episodes") for env in manifest["envs"]] == [3, 2, None]
    assert manifest["expected_episodes"] == 9 and manifest["complete"] is True
    groups = json.loads((counted_run / "summary.json").read_text())["groups"]
    assert {g["env_id"]: g["episodes"] for g in groups if g["env_id"] != "all"} == {
        "RAGEN/Sokoban-6x6-v0": 3, "RAGEN/FrozenLake-4x4-v0": 2, "RAGEN/Bandit-v0": 4}


def test_verify_accepts_an_entry_holding_exactly_the_counted_episodes(counted_run: Path) -> None:
    verified = verify(counted_run)
    assert len(verified.rows) == 9 and verified.summary["groups"][0]["success_rate"] == 1.0


def test_verify_refuses_an_entry_cut_below_the_counts(suite_folder: Path, tmp_path: Path) -> None:
    short = submit(run(tmp_path / "short", "limit=2"), "short")
    assert len(episodes_of(short)["RAGEN/Sokoban-6x6-v0"]) == 2
    with pytest.raises(LeaderboardError, match="plays 3 episodes of RAGEN/Sokoban-6x6-v0") as error:
        verify(short)
    assert error.value.field == "config.limit"


def test_verify_refuses_a_manifest_without_its_counts(counted_run: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(counted_run, tmp_path / "counted")
    edit_json(copy / rundir.MANIFEST, lambda manifest: manifest["envs"][0].pop("episodes"))
    with pytest.raises(LeaderboardError, match="episode counts differ"):
        verify(copy)


def test_verify_refuses_an_episode_past_the_count(counted_run: Path, tmp_path: Path) -> None:
    copy = shutil.copytree(counted_run, tmp_path / "counted")
    log = copy / rundir.EPISODES
    lines = log.read_text().splitlines()
    extra = json.loads(lines[0])
    extra["seed"] = panels.load("RAGEN/Sokoban-6x6-v0", "test").seeds[3]  # the fourth: past the count of 3
    log.write_text("\n".join([*lines, json.dumps(extra)]) + "\n")
    with pytest.raises(LeaderboardError, match="not in the run's plan"):
        verify(copy)


def test_shards_of_a_counted_suite_merge_into_the_whole_run(counted_run: Path, suite_folder: Path,
                                                            tmp_path: Path) -> None:
    shards = [run(tmp_path / f"shard{i}", "limit=4", f"shard={i}/2") for i in range(2)]
    summary = merge_runs(shards, tmp_path / "merged")
    assert summary["groups"] == json.loads((counted_run / "summary.json").read_text())["groups"]
    assert json.loads((tmp_path / "merged" / rundir.MANIFEST).read_text())["complete"] is True


# -- balrog-v0 ----------------------------------------------------------------------------


def test_balrog_tasks_are_balrogs_config() -> None:
    """Per world, the tasks and episodes of balrog-ai/BALROG's config.yaml (af7d1f17)."""
    tasks: dict[str, int] = {}
    for task in balrog.TASKS:
        tasks[task.world] = tasks.get(task.world, 0) + 1
        assert task.env_id is not None or task.note, task  # a task left out says why
    assert tasks == {"babyai": 5, "crafter": 1, "textworld": 3, "babaisai": 40, "minihack": 8, "nle": 1}
    assert balrog.EPISODES == {"babyai": 10, "crafter": 10, "textworld": 10, "babaisai": 3, "minihack": 5, "nle": 5}
    assert list(balrog.WORLDS) == list(balrog.EPISODES) and balrog.HISTORY_TURNS == 16


def test_balrog_definition_lists_the_ids_not_yet_registered() -> None:
    named = [task.env_id for task in balrog.TASKS if task.env_id is not None]
    (description, tracks), missing = suites.balrog_definition(BABYAI_IDS)
    assert [train for _, train, _ in tracks] == [(env_id, "train") for env_id in BABYAI_IDS]
    assert all(evaluate == ((train[0], "test", "in-distribution", 10),) for _, train, evaluate in tracks)
    assert missing == [env_id for env_id in named if env_id not in BABYAI_IDS] and "RAGEN/Crafter-v0" in missing
    # Against the registry: each named id is present or missing, never both.
    (_, present), absent = suites.balrog_definition(ENV_IDS)
    assert sorted([train[0] for _, train, _ in present] + absent) == sorted(named)
    assert "BabaIsAI" in description
    # Once every world is registered nothing is missing, and each id is played BALROG's episodes.
    (_, every), none = suites.balrog_definition(named)
    assert none == [] and len(every) == len(named)
    counts = {train[0]: evaluate[0][3] for _, train, evaluate in every}
    assert counts["RAGEN/Crafter-v0"] == 10 and counts["RAGEN/MiniHack-Quest-Easy-v0"] == 5
    assert counts["RAGEN/NetHack-v0"] == 5 and counts["RAGEN/TextWorld-CoinCollector-v0"] == 10


def test_balrog_is_frozen_over_every_id_that_plays_a_balrog_task() -> None:
    # The committed file itself: this module's fixture stands another balrog-v0 in for the suites folder.
    frozen = json.loads((panels.data_dir() / "suites" / f"{balrog.SUITE}.json").read_text())
    assert [track["train"]["env_id"] for track in frozen["tracks"]] == list(balrog.NAMED_IDS)
    assert set(balrog.NAMED_IDS) <= set(ENV_IDS) and suites.balrog_definition(ENV_IDS)[1] == []
    task_of = {task.env_id: task for task in balrog.TASKS}
    for track in frozen["tracks"]:
        (tested,) = track["evaluate"]
        assert tested["split"] == "test" and tested["episodes"] == balrog.EPISODES[task_of[tested["env_id"]].world]


def test_published_rows_are_balrogs_leaderboard() -> None:
    by_model = {row.model: row for row in balrog.PUBLISHED}
    # The text-track averages issue 31 quotes, to its one decimal.
    quoted = {"Grok-4": 43.6, "Gemini-2.5-Pro-Exp-03-25": 43.3, "GPT-4o-2024-05-13": 32.3,
              "GPT-4o-mini-2024-07-18": 17.4}
    assert {model: round(by_model[model].average, 1) for model in quoted} == quoted
    assert by_model["GPT-4o-2024-05-13"].progress == {"babyai": 77.6, "crafter": 33.1, "textworld": 39.31,
                                                      "babaisai": 33.66, "minihack": 10.0, "nle": 0.37}
    for row in balrog.PUBLISHED:  # the average is the mean of the six worlds, as BALROG's summary states it
        assert math.isclose(sum(row.progress.values()) / 6, row.average, abs_tol=0.01), row.model
        assert set(row.episodes) == set(balrog.WORLDS) and all(n > 0 for n in row.episodes.values())


def test_balrog_suite_end_to_end_with_its_paper_rows(suite_folder: Path, tmp_path: Path) -> None:
    """The stand-in balrog-v0 (BabyAI): BALROG's 10 episodes of each task, verified, built with the paper rows."""
    from ragen_bench.leaderboard.build import build

    entry = submit(run(tmp_path / "subs" / "optimal", suite=balrog.SUITE), "optimal")
    assert {env_id: len(seeds) for env_id, seeds in episodes_of(entry).items()} == dict.fromkeys(BABYAI_IDS, 10)
    assert len(verify(entry).rows) == 40
    build(tmp_path / "subs", tmp_path / "board")
    readme = (tmp_path / "board" / "README.md").read_text()
    assert "| 40/40 seeds x 1 |" in readme  # coverage: the whole of what the counts play
    heading = f"### suite {balrog.SUITE}: BALROG's published rows (reported, not verified)"
    assert heading in readme
    table = readme.split(heading, 1)[1]
    assert "| Grok-4 | naive | 2025-07-23 | 0.760 | 0.573 | 0.629 | 0.458 | 0.175 | 0.018 | 0.436 | 50/10/30/120/40/5 |" \
        in table
    # Our entry in BALROG's columns, above the published rows: BabyAI its only world here, solved throughout.
    ours = readme.split(f"### suite {balrog.SUITE}: our entries by BALROG's worlds", 1)[1].split(heading, 1)[0]
    assert "| average (1 world) |" in ours and "| optimal | scripted | 1.000 | - | - | - | - | - | 1.000 | 40/0/0/0/0/0 |" in ours
    page = (tmp_path / "board" / "index.html").read_text()
    assert 'id="paper-0"' in page and "BALROG&#x27;s published rows" in page and page.count("<tr>") > 26
    assert 'id="worlds-0"' in page and page.index('id="worlds-0"') < page.index('id="paper-0"')


def test_the_balrog_command_lists_the_ids_present_and_missing(capsys: pytest.CaptureFixture[str]) -> None:
    assert suites._main(["balrog"]) == 0
    lines = capsys.readouterr().out.splitlines()
    named = [task for task in balrog.TASKS if task.env_id is not None]
    assert [line for line in lines if line.startswith(("present", "missing"))] == [
        *(f"present  {task.env_id}  {balrog.EPISODES[task.world]} episodes" for task in named if task.env_id in ENV_IDS),
        *(f"missing  {task.env_id}" for task in named if task.env_id not in ENV_IDS)]


def test_our_entries_by_balrog_s_worlds_pool_each_world_s_episodes() -> None:
    from ragen_bench.leaderboard.paper import ours_by_world

    def row(env: str, progress: float, episodes: int) -> dict[str, Any]:
        return {"entry": "e", "model": "m", "env": env, "progress": progress, "episodes": episodes}

    detail = [row("RAGEN/BabyAI-GoToLocal-v0", 0.5, 10), row("RAGEN/BabyAI-PickupLoc-v0", 0.1, 10),
              row("RAGEN/Crafter-v0", 0.25, 10), row("RAGEN/MiniHack-Quest-Easy-v0", 0.2, 5),
              row("RAGEN/NetHack-v0", 0.01, 5)]
    table = ours_by_world(f"suite {balrog.SUITE}", detail)
    assert table is not None and table.columns["average"] == "average (4 worlds)"
    (ours,) = table.rows
    assert ours["babyai"] == pytest.approx(0.3) and ours["crafter"] == 0.25 and "textworld" not in ours
    assert ours["average"] == pytest.approx((0.3 + 0.25 + 0.2 + 0.01) / 4) and ours["episodes"] == "20/10/0/0/5/5"
    assert ours_by_world("suite breadth-v0", detail) is None and ours_by_world(f"suite {balrog.SUITE}", []) is None
