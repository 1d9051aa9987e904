"""A world's own score (``progress``): from ``info["progress"]`` into the record, the summary, verify and the ranking.

Crafter plays it here (the main venv has the extra); its score is BALROG's: achievements unlocked / 22.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from ragen_bench.chat.episode import progress_of
from ragen_bench.chat.trajectory import Trajectory
from ragen_bench.cli import main
from ragen_bench.leaderboard import verify
from ragen_bench.leaderboard.errors import LeaderboardError

pytest.importorskip("crafter")

CRAFTER = "RAGEN/Crafter-v0"


def test_progress_of_reads_the_info_and_refuses_an_env_s_bad_value():
    assert progress_of({"success": True}) is None
    assert progress_of({"progress": 0.5}) == 0.5
    with pytest.raises(ValueError, match="must be within \\[0, 1\\]"):
        progress_of({"progress": 42.0})


def _record_lines(run: Path) -> list[dict]:
    return [json.loads(line) for line in (run / "episodes.jsonl").read_text().splitlines()]


@pytest.fixture(scope="module")
def crafter_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("progress") / "run"
    # 60 replies of 5 random actions each: enough for the random agent to unlock an achievement or two.
    assert main(["eval", f"env={CRAFTER}", "split=test", "agent=random", "limit=3", "chat.max_turns=60",
                 f"out={out}"]) == 0
    return out


def test_each_record_carries_the_world_s_score_after_its_last_step(crafter_run: Path):
    records = _record_lines(crafter_run)
    assert len(records) == 3
    for record in records:
        last_info = [turn["info"] for turn in record["turns"] if turn["info"]][-1]
        trajectory = Trajectory.from_dict(record)
        assert record["progress"] == last_info["progress"] == trajectory.progress == trajectory.scored_progress
        assert math.isclose(record["progress"] * 22, round(record["progress"] * 22))
    assert any(record["progress"] > 0 for record in records), "no achievement in 300 random actions"
    assert not any(record["success"] for record in records)


def test_the_summary_averages_it_and_the_table_shows_it(crafter_run: Path, capsys: pytest.CaptureFixture[str]):
    records = _record_lines(crafter_run)
    (group,) = json.loads((crafter_run / "summary.json").read_text())["groups"]
    assert group["progress"] == pytest.approx(sum(r["progress"] for r in records) / 3)
    assert group["success_rate"] == 0.0 and group["progress"] > 0
    assert main(["compare", str(crafter_run)]) == 0
    assert "progress" in capsys.readouterr().out


def test_a_record_without_progress_keeps_its_old_shape():
    record = {"env_id": "E", "split": "test", "seed": 1, "sample": 0, "template_hash": "h", "messages": [],
              "turns": [], "success": True, "total_reward": 1.0, "num_turns": 0, "num_actions": 0,
              "num_valid_actions": 0, "num_effective_actions": 0, "optimal_length": None, "terminated": True,
              "truncated": False}
    trajectory = Trajectory.from_dict(record)
    assert trajectory.progress is None and trajectory.to_dict() == record


def _submission(tmp_path: Path, run: Path) -> Path:
    import shutil

    entry = tmp_path / "crafter-random"
    shutil.copytree(run, entry / "run")
    (entry / "submission.json").write_text(json.dumps({
        "format": "ragen-bench/submission/v1", "name": "crafter-random", "model": "scripted random policy",
        "recipe": "scripted", "date": "2026-12-03", "contact": "tests", "trained_on_train_panels": False,
        "run_dir": "run"}))
    return entry


def test_verify_replays_the_progress_and_refuses_an_edited_one(crafter_run: Path, tmp_path: Path):
    entry = _submission(tmp_path, crafter_run)
    verified = verify.verify(entry)
    assert verified.summary["groups"][0]["progress"] > 0
    records = _record_lines(entry / "run")
    records[0]["progress"] = 1.0
    (entry / "run" / "episodes.jsonl").write_text("".join(json.dumps(record) + "\n" for record in records))
    with pytest.raises(LeaderboardError, match="progress"):
        verify.verify(entry)


def test_a_summary_may_lack_progress_only_where_it_says_nothing_beyond_success(crafter_run: Path, tmp_path: Path):
    entry = _submission(tmp_path, crafter_run)
    summary_path = entry / "run" / "summary.json"
    summary = json.loads(summary_path.read_text())
    for group in summary["groups"]:
        del group["progress"], group["progress_ci95"]
    summary_path.write_text(json.dumps(summary))
    with pytest.raises(LeaderboardError, match="summary"):
        verify.verify(entry)  # Crafter's progress differs from its success: an old summary would hide it
