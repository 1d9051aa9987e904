"""Crash safety: SIGKILL a real ``ragen-bench eval`` mid-run, resume, compare.

Also the run-directory primitives underneath: torn-tail repair, atomic JSON files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from ragen_bench import runfiles
from ragen_bench.agents.scripted import RandomAgent
from ragen_bench.chat import AgentReply, AgentRequest
from ragen_bench.eval import rundir
from ragen_bench.eval.rundir import RunDirError

from .conftest import REPO_ROOT

ENV = "RAGEN/Sokoban-6x6-v0"
# Seconds per batched agent call: slow enough to kill mid-run, and part of the run's
# config, so every run of one directory uses the same value.
DELAY = 0.03


class SlowRandomAgent(RandomAgent):
    """The random agent, sleeping ``delay`` seconds per batched call (test only)."""

    def __init__(self, *, delay: float, **settings):
        super().__init__(**settings)
        self.delay = delay

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        time.sleep(self.delay)
        return super().act(requests)


def make_slow_random_agent(**settings):
    return SlowRandomAgent(**settings)


def eval_command(out: Path) -> list[str]:
    return [
        sys.executable, "-m", "ragen_bench.cli", "eval", f"env={ENV}", "limit=24", "samples=2", "lockstep_episodes=4",
        "agent=random", f"agent.name={__name__}:make_slow_random_agent", f"+agent.delay={DELAY}", "sampling_seed=3",
        "progress=false", f"out={out}",
    ]


def run_to_completion(out: Path) -> None:
    done = subprocess.run(eval_command(out), cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr


def count_lines(path: Path) -> int:
    return path.read_bytes().count(b"\n") if path.exists() else 0


def kill_after(out: Path, min_lines: int) -> None:
    """Start the eval and SIGKILL it once the log holds ``min_lines`` finished episodes."""
    process = subprocess.Popen(eval_command(out), cwd=REPO_ROOT, stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE)
    log = out / rundir.EPISODES
    deadline = time.monotonic() + 120
    while count_lines(log) < min_lines:
        assert process.poll() is None, f"eval ended before it could be killed: {process.stderr.read()!r}"
        assert time.monotonic() < deadline, "eval made no progress"
        time.sleep(0.005)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    process.stderr.close()


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> Path:
    """The same eval, never interrupted."""
    out = tmp_path_factory.mktemp("eval") / "reference"
    run_to_completion(out)
    return out


def test_sigkill_then_resume_equals_an_uninterrupted_run(tmp_path, reference):
    crashed = tmp_path / "crashed"
    for min_lines in (5, 17, 29):  # kill three times, each later in the run
        kill_after(crashed, min_lines)
        lines_now = count_lines(crashed / rundir.EPISODES)
        assert min_lines <= lines_now < 48, "a kill lost finished episodes, or the run ended before it"
        manifest = rundir.read_json(crashed / rundir.MANIFEST)
        assert manifest["complete"] is False
    run_to_completion(crashed)

    def records(run: Path) -> list[str]:
        return [json.dumps(r, sort_keys=True) for r in rundir.read_episodes(run / rundir.EPISODES)]

    resumed = records(crashed)
    assert len(resumed) == len(set(resumed)) == 48  # no duplicates
    assert sorted(resumed) == sorted(records(reference))  # exactly the full set
    assert (crashed / rundir.SUMMARY).read_bytes() == (reference / rundir.SUMMARY).read_bytes()
    manifest = rundir.read_json(crashed / rundir.MANIFEST)
    assert manifest["complete"] and manifest["sessions"] == 4


def test_resume_truncates_a_torn_final_line_and_reruns_that_episode(tmp_path, reference):
    torn = tmp_path / "torn"
    torn.mkdir()
    (torn / rundir.MANIFEST).write_bytes((reference / rundir.MANIFEST).read_bytes())
    (torn / ".manifest.json.abc.tmp").write_bytes(b"{half")  # a writer killed before its rename
    full = (reference / rundir.EPISODES).read_bytes().splitlines(keepends=True)
    # Ten complete episodes, then half of the eleventh as a crash mid-write leaves it.
    (torn / rundir.EPISODES).write_bytes(b"".join(full[:10]) + full[10][: len(full[10]) // 2])
    run_to_completion(torn)
    records = rundir.read_episodes(torn / rundir.EPISODES)
    assert len(records) == 48 == len({rundir.slot_of(r) for r in records})
    assert (torn / rundir.SUMMARY).read_bytes() == (reference / rundir.SUMMARY).read_bytes()
    assert not list(torn.glob("*.tmp")) and not list(torn.glob(".*.tmp"))


# ---------------------------------------------------------------- rundir primitives


def write_log(path: Path, payload: bytes) -> Path:
    log = path / rundir.EPISODES
    log.write_bytes(payload)
    return log


GOOD = b'{"env_id":"E","split":"s","seed":1,"sample":0}\n{"env_id":"E","split":"s","seed":2,"sample":0}\n'


@pytest.mark.parametrize("tail", [b'{"env_id":"E","spl', b'{"env_id":"E"}', b"\x00\x00\x00\n", b"[1, 2]\n"])
def test_torn_tail_is_detected_and_repaired(tmp_path, tail):
    log = write_log(tmp_path, GOOD + tail)
    with pytest.raises(RunDirError, match="torn final line 3"):
        rundir.read_episodes(log)
    assert [r["seed"] for r in rundir.read_episodes(log, repair=True)] == [1, 2]
    assert log.read_bytes() == GOOD


def test_a_bad_line_before_the_last_is_corruption_not_a_crash(tmp_path):
    lines = GOOD.splitlines(keepends=True)
    log = write_log(tmp_path, lines[0] + b"garbage\n" + lines[1])
    with pytest.raises(RunDirError, match="line 2 is not a complete JSON record"):
        rundir.read_episodes(log, repair=True)
    assert log.read_bytes() == lines[0] + b"garbage\n" + lines[1]  # left untouched


def test_episode_log_appends_whole_lines_and_survives_reopening(tmp_path):
    path = tmp_path / rundir.EPISODES
    with rundir.EpisodeLog(path) as log:
        log.append({"seed": 1, "board": "√ #"})
    with rundir.EpisodeLog(path) as log:
        log.append({"seed": 2})
        log.sync()
    assert path.read_text(encoding="utf-8") == '{"seed":1,"board":"√ #"}\n{"seed":2}\n'


def test_write_json_atomic_replaces_whole_files_and_leaves_no_temp_files(tmp_path):
    target = tmp_path / "manifest.json"
    runfiles.write_json_atomic(target, {"a": 1})
    runfiles.write_json_atomic(target, {"b": [1, 2]})
    assert json.loads(target.read_text()) == {"b": [1, 2]}
    assert [p.name for p in tmp_path.iterdir()] == ["manifest.json"]
    assert oct(os.stat(target).st_mode & 0o777) == "0o644"


def test_write_json_atomic_keeps_the_old_file_when_writing_fails(tmp_path):
    target = tmp_path / "summary.json"
    runfiles.write_json_atomic(target, {"ok": True})
    with pytest.raises(TypeError):
        runfiles.write_json_atomic(target, {"bad": object()})
    assert json.loads(target.read_text()) == {"ok": True}
    assert [p.name for p in tmp_path.iterdir()] == ["summary.json"]


def test_first_difference_names_nested_keys():
    old = {"agent": {"name": "hf", "temperature": 0.0}, "limit": 4}
    assert runfiles.first_difference(old, old) is None
    assert runfiles.first_difference(old, {**old, "limit": 5}) == "limit"
    assert runfiles.first_difference(old, {**old, "agent": {"name": "hf", "temperature": 0.7}}) == "agent.temperature"
    assert runfiles.first_difference(old, {**old, "extra": 1}) == "extra"


def test_a_carriage_return_in_a_torn_tail_does_not_split_it(tmp_path):
    log = write_log(tmp_path, GOOD + b'{"env_id":\r"E"')
    assert len(rundir.read_episodes(log, repair=True)) == 2
    assert log.read_bytes() == GOOD


def test_empty_and_missing_logs_hold_no_episodes(tmp_path):
    assert rundir.read_episodes(tmp_path / "absent.jsonl") == []
    assert rundir.read_episodes(write_log(tmp_path, b"")) == []
