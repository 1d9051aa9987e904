"""Verifying ids whose extra lives in a virtualenv of its own (ragen_bench.leaderboard.own_venv).

The worker path is checked on a cheap id made to look like one (BabyAI's extra declared an own-venv
extra that is missing here, its interpreter this very python): a clean run and tampered ones get the
same verdicts, to the character, as the replay in this process.  The NetHack test needs the real
thing, a python with nle (``RAGEN_BENCH_NETHACK_PYTHON`` or ``.venv-nethack``), and is skipped
without one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from types import SimpleNamespace
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ragen_bench import catalog
from ragen_bench.cli import main
from ragen_bench.eval import rundir
from ragen_bench.leaderboard import own_venv
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.verify import verify
from ragen_bench.leaderboard.viewer import viewer_data
from ragen_bench.registry import entry

from .conftest import one_line_error
from .test_leaderboard import copy, edit_record, make_submission, records, submission_info, write_records

BABYAI = "RAGEN/BabyAI-GoToLocal-v0"
NETHACK = "RAGEN/NetHack-v0"
TEXTWORLD = "RAGEN/TextWorld-CoinCollector-v0"


@pytest.fixture(scope="module")
def babyai_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The random agent on BabyAI's GoToLocal, 4 episodes (wins and losses both, at sampling seed 0)."""
    pytest.importorskip("minigrid")
    return make_submission(tmp_path_factory.mktemp("sub") / "babyai", "babyai", f"env={BABYAI}", "agent=random",
                           "limit=4")


def as_own_venv(monkeypatch: pytest.MonkeyPatch, extra: str) -> list[tuple[str, int]]:
    """``extra`` as one living in its own venv, missing here, whose python is this one; the list of the
    worker's runs, ``(task, records)``."""
    monkeypatch.setitem(catalog.OWN_VENV_EXTRAS, extra, f"scripts/setup_{extra}_venv.sh")
    real_missing = catalog.missing_extra
    monkeypatch.setattr(catalog, "missing_extra",
                        lambda env_id: "hint" if entry(env_id).extra == extra else real_missing(env_id))
    monkeypatch.setenv(own_venv.variable(extra), sys.executable)
    calls: list[tuple[str, int]] = []
    real = own_venv.run_worker

    def counted(python: str, header: Any, lines: Any, **named: Any) -> Any:
        calls.append((header["task"], len(lines)))
        return real(python, header, lines, **named)

    monkeypatch.setattr(own_venv, "run_worker", counted)
    return calls


@pytest.fixture
def worker_calls(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """BabyAI's extra as one living in its own venv (:func:`as_own_venv`)."""
    return as_own_venv(monkeypatch, "babyai")


def test_a_clean_run_replayed_by_the_worker_verifies_as_here(babyai_run: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    here = verify(babyai_run)
    with monkeypatch.context() as patch:
        patch.setitem(catalog.OWN_VENV_EXTRAS, "babyai", "scripts/setup_babyai_venv.sh")
        patch.setattr(catalog, "missing_extra", lambda env_id: "hint")
        patch.setenv(own_venv.variable("babyai"), sys.executable)
        away = verify(babyai_run)
    assert own_venv.elsewhere([BABYAI]) == {}  # unpatched: BabyAI's extra is the main install's
    assert (away.rows, away.turns, away.summary) == (here.rows, here.turns, here.summary)
    assert any(row["success"] for row in here.rows) and not all(row["success"] for row in here.rows)


def _reward(record: dict[str, Any]) -> None:
    record["turns"][0]["env_rewards"] = [1.0]


def _reply(record: dict[str, Any]) -> None:
    record["turns"][1]["raw_response"] = "<think></think><answer>pick up</answer>"


def _extra_turn(record: dict[str, Any]) -> None:
    record["turns"].append(dict(record["turns"][-1]))


def _tokens(record: dict[str, Any]) -> None:
    record["turns"][0]["prompt_tokens"] = 1  # replay cannot reproduce it; the token check refuses it


def _nested(record: dict[str, Any]) -> None:
    value: list[Any] = []
    for _ in range(900):  # the parser takes it; comparing it may exhaust the stack (test_leaderboard's depths)
        value = [value]
    record["x"] = value


@pytest.mark.parametrize("tamper", [_reward, _reply, _extra_turn, _tokens, _nested],
                         ids=lambda f: f.__name__.strip("_"))
def test_a_tampered_record_is_refused_by_the_worker_as_here(babyai_run: Path, tmp_path: Path,
                                                             worker_calls: list[tuple[str, int]],
                                                             monkeypatch: pytest.MonkeyPatch,
                                                             tamper: Callable[[dict[str, Any]], None]) -> None:
    sub = copy(babyai_run, tmp_path)
    edit_record(sub, 2, tamper)
    with pytest.raises(LeaderboardError) as away:
        verify(sub)
    assert worker_calls == [("replay", 4)]
    monkeypatch.delitem(catalog.OWN_VENV_EXTRAS, "babyai")  # the extra back in the main install: replayed here
    with pytest.raises(LeaderboardError) as here:
        verify(sub)
    assert str(away.value) == str(here.value) and away.value.keywords() == here.value.keywords()
    assert away.value.line == 3 and away.value.episode is not None


def test_every_check_still_comes_at_its_line(babyai_run: Path, tmp_path: Path,
                                             worker_calls: list[tuple[str, int]]) -> None:
    """A tampered record replayed by the worker, behind a line refused for another reason: that line's error."""
    sub = copy(babyai_run, tmp_path)
    items = records(sub)
    items[3]["turns"][0]["env_rewards"] = [1.0]
    write_records(sub, [items[0], items[0], *items[2:]])
    with pytest.raises(LeaderboardError) as caught:
        verify(sub)
    assert (caught.value.line, caught.value.problem) == (2, "episode appears twice (first on line 1)")
    assert worker_calls == [("replay", 4)]


@pytest.fixture(scope="module")
def textworld_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The random agent on TextWorld's coin collector, 2 episodes: frames that are texts."""
    pytest.importorskip("textworld")
    return make_submission(tmp_path_factory.mktemp("sub") / "textworld", "textworld", f"env={TEXTWORLD}",
                           "agent=random", "limit=2")


@pytest.mark.parametrize("run", ["babyai_run", "textworld_run"])
def test_the_viewer_draws_through_the_worker_as_here(run: str, request: pytest.FixtureRequest,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    sub = request.getfixturevalue(run)
    verified = SimpleNamespace(run=verify(sub))
    here = viewer_data([verified])
    calls = as_own_venv(monkeypatch, entry(verified.run.rows[0]["env_id"]).extra)
    away = viewer_data([verified])
    assert calls == [("frames", len(verified.run.rows))]
    assert away == here
    kinds = {type(frame) for episode in here[0]["entries"][sub.name].values() for frame in episode["frames"]}
    assert kinds == ({str} if run == "babyai_run" else {int})  # pictures' names; texts' indices


def test_the_worker_refuses_other_sources() -> None:
    header = {"config": {}, "fingerprint": "another version"}
    done = subprocess.run([sys.executable, "-I", "-m", own_venv.WORKER], input=json.dumps(header) + "\n",
                          capture_output=True, text=True, check=False)
    assert done.returncode == own_venv.OTHER_CODE and "differ from the caller's" in done.stderr, done.stderr
    assert done.stdout == ""


def test_a_missing_venv_is_one_line_naming_the_extra_and_its_setup(babyai_run: Path,
                                                                    worker_calls: list[tuple[str, int]],
                                                                    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv(own_venv.variable("babyai"))
    monkeypatch.setattr(own_venv, "CHECKOUT", tmp_path)  # no .venv-babyai there
    assert main(["leaderboard", "verify", str(babyai_run)]) == 2
    one_line_error(capsys, f"replaying {BABYAI} needs the 'babyai' extra",
                   "`bash scripts/setup_babyai_venv.sh --no-test`",
                   "RAGEN_BENCH_BABYAI_PYTHON")
    assert worker_calls == []
    python = tmp_path / ".venv-babyai" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')  # this venv's python, from there
    python.chmod(0o755)
    assert verify(babyai_run).turns > 0 and worker_calls == [("replay", 4)]  # the checkout's venv, by default
    monkeypatch.setenv(own_venv.variable("babyai"), str(tmp_path / "no-python"))
    with pytest.raises(LeaderboardError, match="RAGEN_BENCH_BABYAI_PYTHON=.*no-python is not an executable file"):
        verify(babyai_run)


# -- NetHack, for real --------------------------------------------------------------------


def _nethack_python() -> str:
    named = os.environ.get(own_venv.variable("nethack")) or str(own_venv.CHECKOUT / ".venv-nethack" / "bin" / "python")
    if not Path(named).is_file():
        pytest.skip("no python with the nethack extra (scripts/setup_nethack_venv.sh, or RAGEN_BENCH_NETHACK_PYTHON)")
    return named


@pytest.fixture(scope="module")
def nethack_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One NetHack episode of the random agent, played by the nethack venv's python."""
    python = _nethack_python()
    out = tmp_path_factory.mktemp("sub") / "nethack"
    subprocess.run([python, "-m", "ragen_bench.cli", "eval", f"env={NETHACK}", "agent=random", "limit=1",
                    f"out={out}", "progress=false"], check=True, capture_output=True)
    (out / rundir.LOCK).unlink()
    (out / "submission.json").write_text(json.dumps(submission_info("nethack")))
    return out


@pytest.mark.slow
def test_a_tampered_nethack_record_is_refused_through_the_worker(nethack_run: Path, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # The worker path even where nle is installed (the test run in .venv-nethack itself).
    monkeypatch.setattr(catalog, "missing_extra", lambda env_id: "hint")
    monkeypatch.setenv(own_venv.variable("nethack"), _nethack_python())
    assert verify(nethack_run).rows[0]["env_id"] == NETHACK
    sub = copy(nethack_run, tmp_path)
    turns = edit_record(sub, 0, lambda record: record["turns"][4].update(env_rewards=[5.0]))["turns"]
    with pytest.raises(LeaderboardError) as caught:
        verify(sub)
    assert len(turns) > 5
    error = caught.value
    assert (error.line, error.turn, error.field) == (1, 5, "env_rewards[0]"), str(error)
    assert (error.expected, error.found) == (0.0, 5.0)
