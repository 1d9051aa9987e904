"""``leaderboard verify`` and replies without content (``null_content``).

A submission whose agent got null-content answers (refusals, content filters) must show
them in ``summary.json`` (``null_content_replies``, ``null_content_reply_rate``), recomputed
by replay like every other number.  Summaries written before those fields existed (the
committed entries in ``leaderboard/``) may lack them, but only while the replay finds no
such reply to count.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.chat import AgentReply, AgentRequest
from ragen_bench.eval import compose_config, rundir, run_eval
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.schema import FORMAT
from ragen_bench.leaderboard.verify import verify

HERE = "tests.test_leaderboard_null_content"
NULL_FIELDS = ("null_content_replies", "null_content_reply_rate")


class RefusesOddSeeds:
    """The optimal agent, but the first turn of odd seeds gets a null-content refusal. Test only."""

    name = "refuses-odd-seeds"
    needs_live_env = True

    def __init__(self, **settings: Any) -> None:
        self.inner = OptimalAgent(**settings)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        replies = []
        for request, reply in zip(requests, self.inner.act(requests)):
            seed = int(request.episode_key.split("/")[-2])
            if request.turn == 1 and seed % 2:
                reply = AgentReply("", finish_reason="content_filter", null_content=True, refusal="I can't.")
            replies.append(reply)
        return replies

    def close(self) -> None:
        pass


def make_refusing_agent(**settings: Any) -> RefusesOddSeeds:
    return RefusesOddSeeds(**settings)


def make_submission(folder: Path, *overrides: str) -> Path:
    """A Sokoban test-panel run made with the real harness, plus ``submission.json``."""
    run_eval(compose_config("eval", ["env=RAGEN/Sokoban-6x6-v0", *overrides, f"out={folder}", "progress=false"]))
    (folder / rundir.LOCK).unlink()
    info = {"format": FORMAT, "name": folder.name, "model": "scripted", "recipe": "scripted", "date": "2026-12-01",
            "contact": "tests", "trained_on_train_panels": False}
    (folder / "submission.json").write_text(json.dumps(info))
    return folder


@pytest.fixture(scope="module")
def refusing(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Seeds 123..126: the two odd ones start with a refusal (4 episodes)."""
    return make_submission(tmp_path_factory.mktemp("sub") / "refusing", f"agent.name={HERE}:make_refusing_agent",
                           "limit=4")


@pytest.fixture(scope="module")
def clean(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_submission(tmp_path_factory.mktemp("sub") / "clean", "agent=optimal", "limit=2")


def copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


def edit_groups(sub: Path, *drop: str) -> None:
    path = sub / "summary.json"
    summary = json.loads(path.read_text())
    for group in summary["groups"]:
        for key in drop:
            del group[key]
    path.write_text(json.dumps(summary))


def refused(sub: Path) -> LeaderboardError:
    with pytest.raises(LeaderboardError) as caught:
        verify(sub)
    return caught.value


def test_replies_without_content_are_replayed_and_counted(refusing):
    run = verify(refusing)
    (group,) = run.summary["groups"]
    assert group["null_content_replies"] == 2
    assert group["null_content_reply_rate"] == 2 / run.turns
    records = [json.loads(line) for line in (refusing / rundir.EPISODES).read_bytes().splitlines()]
    nulls = [turn for record in records for turn in record["turns"] if turn.get("null_content")]
    assert [(t["finish_reason"], t["refusal"], t["valid"]) for t in nulls] == [("content_filter", "I can't.", False)] * 2


def test_a_summary_that_leaves_out_replies_without_content_is_refused(refusing, tmp_path):
    sub = copy(refusing, tmp_path)
    edit_groups(sub, *NULL_FIELDS)  # as a summary from before the fields existed would be
    error = refused(sub)
    assert error.file == str(sub / "summary.json") and error.field == "summary.groups[0].null_content_replies"
    assert (error.expected, error.found) == (2, "<absent>")


def test_a_summary_from_before_the_fields_verifies_while_there_is_nothing_to_count(clean, tmp_path):
    sub = copy(clean, tmp_path)
    edit_groups(sub, *NULL_FIELDS)
    assert verify(sub).summary["groups"][0].keys().isdisjoint(NULL_FIELDS)
    # Half of the pair is no older summary's shape: it is refused.
    sub = copy(clean, tmp_path / "half")
    edit_groups(sub, "null_content_reply_rate")
    assert refused(sub).field == "summary.groups[0].null_content_reply_rate"


def test_a_tampered_null_content_flag_is_refused(refusing, tmp_path):
    sub = copy(refusing, tmp_path)
    lines = (sub / rundir.EPISODES).read_bytes().splitlines()
    records = [json.loads(line) for line in lines]
    # Claiming a reply that has text had no content breaks the protocol on replay.
    line, even = next((n, r) for n, r in enumerate(records, start=1) if r["seed"] % 2 == 0)
    even["turns"][0]["null_content"] = True
    (sub / rundir.EPISODES).write_bytes(b"".join(rundir.encode_line(r) for r in records))
    error = refused(sub)
    assert (error.line, error.turn, error.field) == (line, 1, "turns") and "no text" in str(error)
    # Hiding that a reply had no content replays as an empty reply, but the count no longer matches.
    records = [json.loads(line) for line in lines]
    odd = next(r for r in records if r["seed"] % 2)
    del odd["turns"][0]["null_content"]
    (sub / rundir.EPISODES).write_bytes(b"".join(rundir.encode_line(r) for r in records))
    error = refused(sub)
    assert error.field == "summary.groups[0].null_content_replies" and (error.expected, error.found) == (1, 2)
