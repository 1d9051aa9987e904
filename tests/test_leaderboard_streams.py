"""Entries that carry the protocol (docs/train.md): several sampling streams per entry, pooled in the
pairing with the base entry, and the note on an entry whose test runs chose its checkpoint.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from ragen_bench.eval import rundir
from ragen_bench.eval.compose import compose_config
from ragen_bench.eval.run import run_eval
from ragen_bench.leaderboard.build import load_entries, paired_rows
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.pooled import mcnemar_exact
from ragen_bench.leaderboard.stats import p_text
from ragen_bench.leaderboard.verify import verify

from .test_leaderboard import submission_info

ENV = ["env=RAGEN/Bandit-v0", "limit=6", "progress=false"]
# The same three streams for both entries (a scripted agent's stream is its sampling seed alone).
STREAMS = {"trained": ("agent=optimal", [11, 12, 13]), "base": ("agent=random", [11, 12, 13])}


def eval_into(folder: Path, agent: str, seed: int, *extra: str) -> None:
    run_eval(compose_config("eval", [*ENV, agent, f"sampling_seed={seed}", *extra, f"out={folder}"]))
    (folder / rundir.LOCK).unlink()


@pytest.fixture(scope="module")
def subs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two entries, each a run_dir (stream 1) and two stream runs."""
    folder = tmp_path_factory.mktemp("streams")
    for name, (agent, seeds) in STREAMS.items():
        eval_into(folder / name, agent, seeds[0])
        for k, seed in enumerate(seeds[1:], start=2):
            eval_into(folder / name / "streams" / str(k), agent, seed)
        (folder / name / "submission.json").write_text(json.dumps(submission_info(name)))
    return folder


def write_info(sub: Path, **changes: Any) -> None:
    (sub / "submission.json").write_text(json.dumps(submission_info(sub.name, **changes)))


def wins(run: Path) -> dict[int, bool]:
    return {row["seed"]: row["success"] for row in map(json.loads, (run / "episodes.jsonl").read_text().splitlines())}


def test_stream_runs_are_verified_and_named(subs: Path, tmp_path: Path) -> None:
    shutil.copytree(subs, tmp_path / "s")
    write_info(tmp_path / "s" / "trained", stream_runs=["streams/2", "streams/3"])
    run = verify(tmp_path / "s" / "trained")
    assert [stream.name for stream in run.streams] == ["seed 12", "seed 13"]
    assert [len(stream.rows) for stream in run.streams] == [6, 6]


@pytest.mark.parametrize(("setup", "problem"), [
    (lambda sub: None, "stream run 'streams/9' is not a folder"),
    (lambda sub: shutil.copytree(sub, sub / "streams" / "9", ignore=shutil.ignore_patterns("streams")),
     "stream seed 11 appears twice"),
    (lambda sub: eval_into(sub / "streams" / "9", "agent=random", 9, "samples=2"),
     "stream run 'streams/9' may differ from run_dir only in the stream"),
    (lambda sub: eval_into(sub / "streams" / "9", "agent=random", 9, "limit=5"),
     "stream run 'streams/9' may differ from run_dir only in the stream"),
])
def test_a_bad_stream_run_is_refused(subs: Path, tmp_path: Path, setup: Any, problem: str) -> None:
    shutil.copytree(subs, tmp_path / "s")
    sub = tmp_path / "s" / "trained"
    setup(sub)
    write_info(sub, stream_runs=["streams/9"])
    with pytest.raises(LeaderboardError) as caught:
        verify(sub)
    assert caught.value.problem.startswith(problem)


def test_the_pairing_pools_the_streams_both_entries_hold(subs: Path, tmp_path: Path) -> None:
    shutil.copytree(subs, tmp_path / "s")
    root = tmp_path / "s"
    write_info(root / "base", stream_runs=["streams/2", "streams/3"])
    write_info(root / "trained", base_entry="base", stream_runs=["streams/2", "streams/3"], selected_on_test=True)
    entries, _ = load_entries(root)
    rows = paired_rows(entries)
    assert len(rows) == 4 and all(row["note"].startswith("test runs chose") for row in rows)
    counts = []
    for row, run, base in zip(rows, ["trained", "trained/streams/2", "trained/streams/3"],
                              ["base", "base/streams/2", "base/streams/3"]):
        ours, theirs = wins(root / run), wins(root / base)
        counts.append((sum(ours[s] and not theirs[s] for s in ours), sum(theirs[s] and not ours[s] for s in ours)))
        assert (row["only_entry"], row["only_base"]) == counts[-1]
    pooled = rows[-1]
    assert pooled["env"].startswith("pooled over 3 streams (exact sign test;")
    only_a, only_b = sum(c[0] for c in counts), sum(c[1] for c in counts)
    assert (pooled["pairs"], pooled["only_entry"], pooled["only_base"]) == (18, only_a, only_b)
    assert pooled["mcnemar_p"] == p_text(mcnemar_exact(only_a, only_b))
