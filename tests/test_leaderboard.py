"""Leaderboard submissions: the schema, bounded data-only reading, and verification by replay.

Clean submissions are made with the real harness (``run_eval``); every tampering test
copies one, changes one thing and checks that ``verify`` refuses it with the right
file, line, episode, turn and field.  Hostile inputs tried here: 80 hand-written
(tampered numbers, text, structure, manifests, summaries, schema, sizes, paths, links)
plus the property tests' generated values for any checked record field and any part of the
manifest and summary.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
import tempfile
import tracemalloc
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any
from unittest import mock

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from ragen_bench import runfiles
from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.chat import AgentReply, AgentRequest, ChatConfig
from ragen_bench.cli import main
from ragen_bench.eval import compose_config, rundir, run_eval
from ragen_bench.eval.config import load
from ragen_bench.leaderboard import files
from ragen_bench.leaderboard.errors import LeaderboardError
from ragen_bench.leaderboard.schema import FORMAT, json_schema
from ragen_bench.leaderboard.verify import verify

from .conftest import REPO_ROOT, one_line_error

SUITE = "ragen-generalization-v0"
HERE = "tests.test_leaderboard"


class TokenAgent:
    """The optimal agent that reports token counts and, on the first turn of odd seeds,
    sends a malformed reply (so replay meets format penalties). Test only."""

    name = "token-test"
    needs_live_env = True

    def __init__(self, **settings: Any) -> None:
        self.inner = OptimalAgent(**settings)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        replies = []
        for request, reply in zip(requests, self.inner.act(requests)):
            seed = int(request.episode_key.split("/")[-2])
            replies.append(counted_reply(
                "I am not sure what to do." if request.turn == 1 and seed % 2 else reply.text, request))
        return replies

    def close(self) -> None:
        pass


def counted_reply(text: str, request: AgentRequest) -> AgentReply:
    """``text`` with plausible token counts: about 4 characters a token, as real tokenizers average."""
    prompt = sum(len(message["content"]) for message in request.messages)
    return AgentReply(text, prompt_tokens=prompt // 4 + 5, completion_tokens=len(text) // 4 + 1, finish_reason="stop")


def make_token_agent(**settings: Any) -> TokenAgent:
    return TokenAgent(**settings)


def submission_info(name: str, **changes: Any) -> dict[str, Any]:
    info = {
        "format": FORMAT, "name": name, "model": "scripted", "recipe": "scripted", "date": "2026-11-30",
        "contact": "tests", "trained_on_train_panels": False,
    }
    return {**info, **changes}


def make_submission(folder: Path, name: str, *overrides: str) -> Path:
    """An eval run made with the real harness, plus ``submission.json``."""
    run_eval(compose_config("eval", [*overrides, f"out={folder}", "progress=false"]))
    (folder / rundir.LOCK).unlink()
    (folder / "submission.json").write_text(json.dumps(submission_info(name)))
    return folder


@pytest.fixture(scope="session")
def clean_suite(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Random agent, every test panel of the suite, 2 seeds x 2 samples (32 episodes)."""
    return make_submission(tmp_path_factory.mktemp("sub") / "random", "random",
                           f"suite={SUITE}", "agent=random", "limit=2", "samples=2")


@pytest.fixture(scope="session")
def clean_tokens(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Token-reporting agent with malformed first turns, on Sokoban (6 episodes)."""
    return make_submission(tmp_path_factory.mktemp("sub") / "tokens", "tokens",
                           "env=RAGEN/Sokoban-6x6-v0", f"agent.name={HERE}:make_token_agent", "limit=6")


def copy(source: Path, tmp_path: Path) -> Path:
    target = tmp_path / source.name
    shutil.copytree(source, target)
    return target


def records(sub: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (sub / "episodes.jsonl").read_bytes().splitlines()]


def write_records(sub: Path, items: Sequence[dict[str, Any]]) -> None:
    (sub / "episodes.jsonl").write_bytes(b"".join(rundir.encode_line(record) for record in items))


def edit_record(sub: Path, index: int, change: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    items = records(sub)
    change(items[index])
    write_records(sub, items)
    return items[index]


def edit_json(path: Path, change: Callable[[Any], None]) -> None:
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))


def refused(sub: Path) -> LeaderboardError:
    with pytest.raises(LeaderboardError) as caught:
        verify(sub)
    return caught.value


def key(record: dict[str, Any]) -> str:
    return f"{record['env_id']}/{record['split']}/{record['seed']}/{record['sample']}"


# -- clean submissions ------------------------------------------------------------------


def test_clean_submission_passes_with_replayed_rows(clean_suite: Path, clean_tokens: Path) -> None:
    run = verify(clean_suite)
    assert len(run.rows) == 8 * 2 * 2
    assert run.turns == sum(len(record["turns"]) for record in records(clean_suite))
    assert run.info.name == "random"
    tokens = verify(clean_tokens)
    assert sum(row["tokens"] is not None for row in tokens.rows) == 6
    # The token agent's malformed first turns were replayed with their penalties.
    assert any(turn["format_penalty"] == -0.1 for record in records(clean_tokens) for turn in record["turns"])


def test_gzip_episode_log_passes(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    log = sub / "episodes.jsonl"
    (sub / "episodes.jsonl.gz").write_bytes(gzip.compress(log.read_bytes(), mtime=0))
    log.unlink()
    assert len(verify(sub).rows) == 32


def test_run_dir_inside_the_submission_folder(clean_suite: Path, tmp_path: Path) -> None:
    sub = tmp_path / "random"  # the submission's name
    shutil.copytree(clean_suite, sub / "runs" / "x")
    (sub / "runs" / "x" / "submission.json").rename(sub / "submission.json")
    edit_json(sub / "submission.json", lambda info: info.update(run_dir="runs/x"))
    assert len(verify(sub).rows) == 32


def test_cli_verify_exit_status(clean_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["leaderboard", "verify", str(clean_suite)]) == 0
    assert re.search(r"ok .*: 32 episodes \(\d+ turns\) replayed and matched in .* episodes/s", capsys.readouterr().out)
    sub = copy(clean_suite, tmp_path)
    edit_record(sub, 0, lambda r: r.update(success=not r["success"]))
    assert main(["leaderboard", "verify", str(sub)]) == 2
    error = capsys.readouterr().err.strip()
    assert error.startswith("ragen-bench leaderboard: error: ") and "field success" in error
    assert "\n" not in error


# -- the folder (build refuses nothing that verify passes) -------------------------------


def test_a_name_that_is_not_the_folder(clean_suite: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_json(sub / "submission.json", lambda info: info.update(name="optimal"))
    error = refused(sub)
    assert (error.file, error.field, error.expected, error.found) == (
        str(sub / "submission.json"), "name", "random", "optimal")
    assert main(["leaderboard", "verify", str(sub)]) == 2
    one_line_error(capsys, "must equal the submission's name")


def test_the_folder_name_of_a_relative_path(clean_suite: Path, tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    sub = copy(clean_suite, tmp_path)
    monkeypatch.chdir(sub)
    assert verify(".").info.name == "random"  # `.` is named by the folder it stands for
    monkeypatch.chdir(sub / "..")
    assert len(verify(Path("random")).rows) == 32


def test_a_symlinked_submission_folder(clean_suite: Path, tmp_path: Path) -> None:
    (tmp_path / "random").symlink_to(clean_suite, target_is_directory=True)
    error = refused(tmp_path / "random")
    assert error.file == str(tmp_path / "random") and "symbolic link" in error.problem


# -- tampered episodes --------------------------------------------------------------------


def test_changed_reward(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    def raise_reward(record: dict[str, Any]) -> None:
        record["turns"][0]["env_rewards"][0] += 1.0

    record = edit_record(sub, 2, raise_reward)
    error = refused(sub)
    assert (error.file, error.line, error.episode, error.turn, error.field) == (
        str(sub / "episodes.jsonl"), 3, key(record), 1, "env_rewards[0]")
    assert error.found == error.expected + 1.0
    assert "differs from the replay" in str(error)


def test_changed_total_reward(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_record(sub, 0, lambda r: r.update(total_reward=r["total_reward"] + 5))
    error = refused(sub)
    assert (error.line, error.turn, error.field) == (1, None, "total_reward")


def test_flipped_success(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    record = edit_record(sub, 5, lambda r: r.update(success=not r["success"]))
    error = refused(sub)
    assert (error.line, error.episode, error.field, error.found) == (6, key(record), "success", record["success"])
    assert error.expected is (not record["success"])


def test_success_as_number_is_not_true(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    items = records(sub)
    index = next(i for i, r in enumerate(items) if r["success"])
    edit_record(sub, index, lambda r: r.update(success=1))
    error = refused(sub)
    assert (error.field, error.expected, error.found) == ("success", True, 1)


def test_dropped_episode(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    items = records(sub)
    dropped = items.pop(7)
    write_records(sub, items)
    error = refused(sub)
    assert error.episode == key(dropped) and "missing" in error.problem and "exactly `samples` times" in error.problem


def test_duplicated_line(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    items = records(sub)
    write_records(sub, [*items, items[4]])
    error = refused(sub)
    assert (error.line, error.episode) == (33, key(items[4]))
    assert "appears twice (first on line 5)" in error.problem


def test_duplicated_seed(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    items = records(sub)
    first = items[0]
    index = next(i for i, r in enumerate(items) if (r["env_id"], r["sample"]) == (first["env_id"], first["sample"])
                 and r["seed"] != first["seed"])
    items[index]["seed"] = first["seed"]
    write_records(sub, items)
    error = refused(sub)
    assert error.line == index + 1 and "appears twice (first on line 1)" in error.problem


@pytest.mark.parametrize(("field", "value"), [
    ("seed", 5), ("sample", 2), ("split", "val"), ("env_id", "RAGEN/Sokoban-10x10-v0"),
])
def test_episode_outside_the_plan(clean_suite: Path, tmp_path: Path, field: str, value: Any) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_record(sub, 3, lambda r: r.update({field: value}))
    error = refused(sub)
    assert error.line == 4 and "not in the run's plan" in error.problem


def test_swapped_panel_checksums(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)

    def swap(manifest: dict[str, Any]) -> None:
        first, second = list(manifest["panels"])[:2]
        manifest["panels"][first], manifest["panels"][second] = manifest["panels"][second], manifest["panels"][first]

    edit_json(sub / "manifest.json", swap)
    error = refused(sub)
    assert error.file == str(sub / "manifest.json") and error.field.startswith("panels.")
    assert "panel checksums differ from the frozen panels" in error.problem


def test_episode_moved_to_another_panel(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    items = records(sub)
    # A Sokoban-6x6 episode relabelled as the same seed of the AltVocab panel, whose own record is dropped.
    index = next(i for i, r in enumerate(items) if r["env_id"] == "RAGEN/Sokoban-6x6-v0")
    moved = dict(items[index], env_id="RAGEN/Sokoban-6x6-AltVocab-v0")
    items = [r for r in items if key(r) != key(moved)]
    items[index if index < len(items) else -1] = moved
    write_records(sub, items)
    error = refused(sub)
    assert error.episode == key(moved) and error.turn == 1 and error.field.startswith("messages[1]")


def test_edited_action(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    items = records(sub)
    index = next(i for i, r in enumerate(items)
                 if r["env_id"].startswith("RAGEN/Sokoban") and r["turns"][0]["parsed_actions"] != ["Up"])
    edit_record(sub, index, lambda r: r["turns"][0].update(parsed_actions=["Up"]))
    error = refused(sub)
    assert (error.line, error.turn, error.field, error.found) == (index + 1, 1, "parsed_actions[0]", "Up")


def test_edited_executed_action_ids(clean_tokens: Path, tmp_path: Path) -> None:
    sub = copy(clean_tokens, tmp_path)
    edit_record(sub, 0, lambda r: r["turns"][-1]["action_ids"].reverse() or r["turns"][-1]["action_ids"].append(0))
    error = refused(sub)
    assert error.field.startswith("action_ids") and error.turn == len(records(clean_tokens)[0]["turns"])


def test_edited_observation(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    items = records(sub)
    index = next(i for i, r in enumerate(items) if len(r["turns"]) >= 2)
    edit_record(sub, index, lambda r: r["messages"][3].update(content=r["messages"][3]["content"].replace("#", "_", 1)))
    error = refused(sub)
    assert (error.line, error.turn, error.field) == (index + 1, 1, "messages[3].content (user message)")


def test_edited_first_prompt(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_record(sub, 0, lambda r: r["messages"][1].update(content=r["messages"][1]["content"] + " "))
    error = refused(sub)
    assert (error.turn, error.field) == (1, "messages[1].content (user message)")


def test_edited_raw_response(clean_suite: Path, tmp_path: Path) -> None:
    """The recorded actions must follow from the recorded text: edit the text only."""
    sub = copy(clean_suite, tmp_path)
    items = records(sub)
    index = next(i for i, r in enumerate(items) if r["env_id"] == "RAGEN/Sokoban-6x6-v0")
    old = items[index]["turns"][0]["parsed_actions"][0]
    new = "Down" if old != "Down" else "Up"
    turn = items[index]["turns"][0]
    edit_record(sub, index, lambda r: r["turns"][0].update(raw_response=turn["raw_response"].replace(old, new)))
    error = refused(sub)
    assert (error.turn, error.field, error.expected, error.found) == (1, "parsed_actions[0]", new, old)


def test_edited_think_text_changes_the_transcript(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    text = records(sub)[0]["turns"][0]["raw_response"]
    edit_record(sub, 0, lambda r: r["turns"][0].update(raw_response=text.replace("random", "careful")))
    error = refused(sub)
    assert (error.turn, error.field) == (1, "normalized_response")


@pytest.mark.parametrize("packed", [{"unicode_escape": "\\x"}, {"unicode_escape": "é"}, {"unicode_escape": 5}, None])
def test_malformed_raw_response(clean_suite: Path, tmp_path: Path, packed: Any) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_record(sub, 0, lambda r: r["turns"][0].update(raw_response=packed))
    error = refused(sub)
    assert (error.line, error.turn, error.field) == (1, 1, "raw_response")


def test_extra_turn_after_the_end(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    record = edit_record(sub, 0, lambda r: r["turns"].append(dict(r["turns"][-1])))
    error = refused(sub)
    assert error.turn == len(record["turns"]) and "already ended" in error.problem


def test_missing_last_turn(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    items = records(sub)
    index = next(i for i, r in enumerate(items) if len(r["turns"]) >= 2)
    edit_record(sub, index, lambda r: r["turns"].pop())
    error = refused(sub)
    assert error.line == index + 1 and "had not ended" in error.problem


def test_extra_field_in_a_record(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_record(sub, 0, lambda r: r.update(bonus=1))
    error = refused(sub)
    assert (error.field, error.found) == ("bonus", 1)


def test_turns_not_a_list(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_record(sub, 0, lambda r: r.update(turns={"0": r["turns"][0]}))
    assert refused(sub).field == "turns"


# -- tokens -------------------------------------------------------------------------------


def test_inflated_completion_tokens(clean_tokens: Path, tmp_path: Path) -> None:
    sub = copy(clean_tokens, tmp_path)
    edit_record(sub, 1, lambda r: r["turns"][0].update(completion_tokens=1_000_000))
    error = refused(sub)
    assert (error.line, error.turn, error.field) == (2, 1, "completion_tokens")
    assert "implausible" in error.problem and "more than the text can hold" in error.problem


def test_deflated_prompt_tokens(clean_tokens: Path, tmp_path: Path) -> None:
    sub = copy(clean_tokens, tmp_path)
    edit_record(sub, 0, lambda r: r["turns"][0].update(prompt_tokens=3))
    error = refused(sub)
    assert (error.field, error.turn) == ("prompt_tokens", 1) and "fewer than characters / 20" in error.problem


def test_negative_tokens_break_the_protocol(clean_tokens: Path, tmp_path: Path) -> None:
    sub = copy(clean_tokens, tmp_path)
    edit_record(sub, 0, lambda r: r["turns"][0].update(completion_tokens=-4))
    error = refused(sub)
    assert error.turn == 1 and "completion_tokens" in error.problem


def test_response_chars_must_fit_the_reply(clean_tokens: Path, tmp_path: Path) -> None:
    sub = copy(clean_tokens, tmp_path)
    edit_record(sub, 0, lambda r: r["turns"][0].update(response_chars=r["turns"][0]["response_chars"] + 100))
    assert refused(sub).field == "response_chars"


# -- manifest and summary -----------------------------------------------------------------


def test_edited_summary(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_json(sub / "summary.json", lambda s: s["groups"][3].update(success_rate=s["groups"][3]["success_rate"] + 0.25))
    error = refused(sub)
    assert error.file == str(sub / "summary.json") and error.field == "summary.groups[3].success_rate"
    assert error.found == error.expected + 0.25


def test_summary_with_a_dropped_group(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_json(sub / "summary.json", lambda s: s["groups"].pop())
    assert refused(sub).field == "summary.groups (length)"


def test_wrong_template_hash(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_json(sub / "manifest.json", lambda m: m.update(template_hash="0" * 64))
    error = refused(sub)
    assert (error.field, error.found) == ("template_hash", "0" * 64)
    # The suite's Bandit ids play RAGEN's one-action budget, the others the chat defaults: the run's hash
    # is the hash of every id's (ragen_bench.eval.budget.run_template_hash), not the defaults'.
    config = json.loads((clean_suite / "manifest.json").read_text())["config"]
    assert error.expected == load({**config, "out": None, "progress": False}).template_hash
    assert error.expected != ChatConfig().template_hash()


def test_chat_settings_changed_consistently(clean_tokens: Path, tmp_path: Path) -> None:
    """A manifest rewritten to other chat settings (with their true hash) no longer replays."""
    sub = copy(clean_tokens, tmp_path)
    chat = ChatConfig(format_penalty=-0.5)

    def change(manifest: dict[str, Any]) -> None:
        manifest["config"]["chat"]["format_penalty"] = -0.5
        manifest["template_hash"] = chat.template_hash()

    edit_json(sub / "manifest.json", change)
    error = refused(sub)
    first = records(clean_tokens)[0]
    penalized = [k for k, turn in enumerate(first["turns"], start=1) if turn["format_penalty"]]
    if penalized:  # the malformed turn's penalty is the first thing that differs
        assert (error.line, error.turn) == (1, penalized[0])
        assert (error.field, error.expected, error.found) == ("format_penalty", -0.5, -0.1)
    else:  # otherwise the episode's own record of the settings
        assert (error.line, error.field, error.found) == (1, "template_hash", first["template_hash"])


@pytest.mark.parametrize(("path", "value", "field"), [
    (("complete",), False, "complete"),
    (("config", "shard"), "1/2", "config.shard"),
    (("config", "env_kwargs"), {"data_path": "x.jsonl"}, "config.env_kwargs"),
    (("config", "suite"), "no-such-suite", "config"),
    (("config", "samples"), 3, "expected_episodes"),
    (("format",), "ragen-bench/run/v1", "format"),
    (("expected_episodes",), "32", "expected_episodes"),
])
def test_manifest_problems(clean_suite: Path, tmp_path: Path, path: tuple[str, ...], value: Any, field: str) -> None:
    sub = copy(clean_suite, tmp_path)

    def change(manifest: dict[str, Any]) -> None:
        target = manifest
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value

    edit_json(sub / "manifest.json", change)
    error = refused(sub)
    assert error.file == str(sub / "manifest.json") and error.field == field


@pytest.mark.parametrize("split", ["train", "val"])
def test_run_on_other_panels_than_test_is_refused(tmp_path: Path, split: str) -> None:
    # The tables have no split column: a train-panel number would read as a test one.
    sub = make_submission(tmp_path / split, split, "env=RAGEN/Bandit-v0", f"split={split}", "agent=random", "limit=2")
    error = refused(sub)
    assert (error.file, error.field, error.expected, error.found) == (str(sub / "manifest.json"), "config.split",
                                                                        "test", split)


def test_manifest_planning_too_many_episodes(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    # The eval config allows up to 10000 samples; over 8 whole panels that is 20 million episodes.
    edit_json(sub / "manifest.json", lambda m: m["config"].update(samples=10_000, limit=None))
    error = refused(sub)
    assert error.field == "config.samples" and "20480000 episodes, over the limit of 1000000" in error.problem


def test_manifest_env_version(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_json(sub / "manifest.json", lambda m: m["envs"][0].update(version="v1"))
    error = refused(sub)
    assert (error.field, error.expected, error.found) == ("envs[0].version", "v0", "v1")


# -- malformed, oversized, escaping -------------------------------------------------------


def test_malformed_episode_line(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    lines = (sub / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    lines[1] = lines[1][:50] + b"\n"
    (sub / "episodes.jsonl").write_bytes(b"".join(lines))
    error = refused(sub)
    assert (error.file, error.line) == (str(sub / "episodes.jsonl"), 2) and "not valid JSON" in error.problem


@pytest.mark.parametrize(("line", "problem"), [
    (b"[1, 2]\n", "not an episode record"),
    (b'{"env_id": "x", "seed": NaN}\n', "NaN is not a finite number"),
    (b"\xff\xfe\n", "not valid JSON"),
])
def test_bad_episode_lines(clean_suite: Path, tmp_path: Path, line: bytes, problem: str) -> None:
    sub = copy(clean_suite, tmp_path)
    (sub / "episodes.jsonl").write_bytes(line)
    error = refused(sub)
    assert error.line == 1 and problem in error.problem


# Spellings of numbers no float holds: each is legal JSON (or Python's JSON) and was read as inf or nan.
NOT_FINITE = ["1e999", "-1e999", "1E+400", "-0.5e99999", "1.7976931348623159e308", "NaN", "Infinity", "-Infinity",
              "1" + "0" * 309, "-" + str(2**1024), "9" * 5000]
# Where each is put: the file, the place in it, and the field the error must name.
NUMBER_PLACES = [
    ("episodes.jsonl", lambda items: items[0]["turns"][0]["env_rewards"], 0, "turns[0].env_rewards[0]"),
    ("summary.json", lambda summary: summary["groups"][1], "mean_return", "groups[1].mean_return"),
    ("manifest.json", lambda manifest: manifest["config"], "samples", "config.samples"),
    ("submission.json", lambda info: info, "notes", "notes"),
]


def put_number(sub: Path, name: str, place: Callable[[Any], Any], key: Any, literal: str) -> None:
    """Write ``literal`` as it is spelled (json.dumps would respell it) at ``place(document)[key]``."""
    path = sub / name
    marker = "__number__"
    if name == "episodes.jsonl":
        items = records(sub)
        place(items)[key] = marker
        text = b"".join(rundir.encode_line(item) for item in items).decode()
    else:
        document = json.loads(path.read_text())
        place(document)[key] = marker
        text = json.dumps(document)
    path.write_text(text.replace(f'"{marker}"', literal, 1))


@pytest.mark.parametrize("literal", NOT_FINITE)
@pytest.mark.parametrize(("name", "place", "key", "field"), NUMBER_PLACES, ids=[p[0] for p in NUMBER_PLACES])
def test_a_number_no_float_holds_is_refused_however_spelled(clean_suite: Path, tmp_path: Path, literal: str,
                                                            name: str, place: Any, key: Any, field: str) -> None:
    sub = copy(clean_suite, tmp_path)
    put_number(sub, name, place, key, literal)
    error = refused(sub)
    assert (error.file, error.field) == (str(sub / name), field)
    assert error.line == (1 if name == "episodes.jsonl" else None)
    assert error.problem.endswith("is not a finite number") and literal[:16] in error.problem
    assert len(str(error)) < 300  # a 5,000-digit int still gives a readable line


@pytest.mark.parametrize(("literal", "value"), [
    ("1.7976931348623157e308", 1.7976931348623157e308),  # the largest float
    ("-1.7976931348623157e308", -1.7976931348623157e308),
    ("1e-999", 0.0), ("-0", 0), ("-0.0", -0.0),
    (str(2**1024 - 2**970 - 1), 2**1024 - 2**970 - 1),  # the largest int float() rounds to a float
    (str(10**308), 10**308),
])
def test_every_finite_number_is_read(literal: str, value: Any) -> None:
    parsed = files.parse_json(f'{{"x": [{literal}]}}'.encode(), name="f")["x"][0]
    assert parsed == value and type(parsed) is type(value)


def _fits_a_float(number: int) -> bool:
    try:
        float(number)
    except OverflowError:
        return False
    return True


@example(2**1024 - 2**970 - 1)
@example(2**1024 - 2**970)  # the smallest int float() refuses
@example(-(2**1024 - 2**970))
@example(10**308 * 17)
@given(st.integers(min_value=-(10**320), max_value=10**320) | st.integers(min_value=2**1023, max_value=2**1025))
def test_an_int_is_read_exactly_when_a_float_holds_it(number: int) -> None:
    try:
        parsed = files.parse_json(f'{{"a": {{"b": [0, {number}]}}}}'.encode(), name="f")
    except LeaderboardError as error:
        assert not _fits_a_float(number) and error.field == "a.b[1]"
    else:
        assert _fits_a_float(number) and parsed == {"a": {"b": [0, number]}}


def test_the_field_of_a_number_in_a_repeated_key_is_found() -> None:
    """The search for the field sees every value the parser saw, also under a key that appears twice."""
    with pytest.raises(LeaderboardError) as caught:
        files.parse_json(b'{"k": [1], "k": [2, {"deep": [[3, -1e999]]}]}', name="f", unique_keys=False)
    assert caught.value.field == "k[1].deep[0][1]" and caught.value.problem == "-1e999 is not a finite number"


@pytest.mark.parametrize("depth", [900, 5_000, 100_000])
def test_deeply_nested_values(clean_suite: Path, tmp_path: Path, depth: int) -> None:
    sub = copy(clean_suite, tmp_path)
    lines = (sub / "episodes.jsonl").read_bytes().splitlines(keepends=True)
    nested = lines[0].rstrip()[:-1] + b', "x": ' + b"[" * depth + b"]" * depth + b"}\n"
    (sub / "episodes.jsonl").write_bytes(nested + b"".join(lines[1:]))
    error = refused(sub)
    assert error.line == 1 and ("nested too deeply" in error.problem or error.field == "x")


def test_log_without_final_newline(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    data = (sub / "episodes.jsonl").read_bytes()
    (sub / "episodes.jsonl").write_bytes(data[:-1])
    error = refused(sub)
    assert error.line == 32 and "no newline" in error.problem


@pytest.mark.parametrize("name", ["manifest.json", "summary.json", "submission.json"])
def test_malformed_json_files(clean_suite: Path, tmp_path: Path, name: str) -> None:
    sub = copy(clean_suite, tmp_path)
    (sub / name).write_text((sub / name).read_text()[:-20])
    error = refused(sub)
    assert error.file == str(sub / name) and "not valid JSON" in error.problem


def test_repeated_key_in_manifest(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    text = (sub / "manifest.json").read_text()
    (sub / "manifest.json").write_text(text.replace('"complete": true', '"complete": false, "complete": true', 1))
    assert "appears twice" in refused(sub).problem


def test_oversized_submission_file(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    (sub / "submission.json").write_text(json.dumps(submission_info("random", notes="x" * 70_000)))
    error = refused(sub)
    assert error.file == str(sub / "submission.json") and "over the limit of 65536" in error.problem


def test_oversized_episode_log(clean_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sub = copy(clean_suite, tmp_path)
    size = (sub / "episodes.jsonl").stat().st_size
    monkeypatch.setitem(files.LIMITS, "episodes.jsonl", size - 1)
    assert f"over the limit of {size - 1}" in refused(sub).problem


def test_gzip_bomb_is_refused_by_decompressed_size(
    clean_suite: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = copy(clean_suite, tmp_path)
    (sub / "episodes.jsonl").unlink()
    (sub / "episodes.jsonl.gz").write_bytes(gzip.compress(b" " * 50_000_000))
    monkeypatch.setitem(files.LIMITS, "episodes.jsonl", 10_000_000)
    assert "decompresses to over the limit of 10000000" in refused(sub).problem


def _bomb(path: Path, size: int) -> Path:
    """A gzip file of ``size`` spaces, written without ever holding them (about size / 1000 bytes)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 20)
    with path.open("wb") as handle:
        for _ in range(size // len(block)):
            handle.write(compressor.compress(block))
        handle.write(compressor.flush())
    return path


def test_gzip_bomb_is_refused_holding_a_chunk_not_the_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Decompression streams: the bomb is refused as its output passes the limit, and memory
    never holds anything near the limit (before, the output up to the limit was held twice)."""
    limit = 48 * 1024 * 1024
    monkeypatch.setitem(files.LIMITS, "episodes.jsonl", limit)
    bomb = _bomb(tmp_path / "episodes.jsonl.gz", 4 * limit)
    tracemalloc.start()
    try:
        with pytest.raises(LeaderboardError, match=f"decompresses to over the limit of {limit} bytes"):
            list(files.episode_lines(bomb))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < limit / 4, f"peak {peak / 2**20:.1f} MiB for a {limit / 2**20:.0f} MiB limit"


@pytest.mark.parametrize(("tail", "problem"), [
    (lambda data: data[:-9], "gzip data is truncated"),
    (lambda data: data + b"x", "holds data after the gzip stream"),
    (lambda data: data + gzip.compress(b"{}\n"), "holds data after the gzip stream"),
    (lambda data: data[:40] + bytes([data[40] ^ 0xFF]) + data[41:], "not valid gzip data"),
])
@pytest.mark.parametrize("chunk", [1, 7, files.CHUNK_BYTES])
def test_broken_gzip_is_refused_before_any_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int,
                                                  tail: Callable[[bytes], bytes], problem: str) -> None:
    monkeypatch.setattr(files, "CHUNK_BYTES", chunk)
    lines = b"".join(b'{"n": %d, "pad": "%s"}\n' % (n, b"ab" * n) for n in range(50))
    path = tmp_path / "episodes.jsonl.gz"
    path.write_bytes(tail(gzip.compress(lines, mtime=0)))
    records_seen = []
    with pytest.raises(LeaderboardError, match=problem):
        for _, record in files.episode_lines(path):
            records_seen.append(record)
    assert records_seen == []  # the whole stream is checked first


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"")), max_size=8),
       st.integers(1, 12), st.booleans())
def test_lines_across_chunks(tmp_path_factory: pytest.TempPathFactory, texts: list[bytes], chunk: int,
                             compress: bool) -> None:
    """Records, over-long lines and the last newline are found wherever chunks cut the log."""
    items = [{"t": text.hex()} for text in texts]
    data = b"".join(rundir.encode_line(item) for item in items)
    path = tmp_path_factory.mktemp("log") / ("episodes.jsonl.gz" if compress else "episodes.jsonl")
    longest = max([len(line) for line in data.split(b"\n")], default=0)
    limit = max(16, longest - 5)  # a line over it when one is longer than 21 bytes
    with mock.patch.object(files, "CHUNK_BYTES", chunk), mock.patch.object(files, "MAX_LINE_BYTES", limit):
        path.write_bytes(gzip.compress(data) if compress else data)
        long = [n for n, line in enumerate(data.split(b"\n"), start=1) if len(line) > limit]
        if long:
            with pytest.raises(LeaderboardError) as caught:
                list(files.episode_lines(path))
            length = len(data.split(b"\n")[long[0] - 1])
            assert (caught.value.line, caught.value.problem) == (
                long[0], f"line is {length} bytes, over the limit of {limit}")
        else:
            assert [record for _, record in files.episode_lines(path)] == items
        if data:
            path.write_bytes(gzip.compress(data[:-1]) if compress else data[:-1])
            with pytest.raises(LeaderboardError, match="no newline") as caught:
                list(files.episode_lines(path))
            assert caught.value.line == len(items)


def test_two_episode_logs(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    (sub / "episodes.jsonl.gz").write_bytes(gzip.compress((sub / "episodes.jsonl").read_bytes()))
    assert "exactly one of episodes.jsonl or episodes.jsonl.gz; found both" in refused(sub).problem


@pytest.mark.parametrize(("run_dir", "problem"), [
    ("../outside", "contains '..'"),
    ("runs/../../outside", "contains '..'"),
    ("/tmp", "must be relative"),
    ("\u00e9" * 200, "cannot be read (File name too long)"),  # 400 bytes: over the file system's 255
])
def test_run_dir_cannot_escape(clean_suite: Path, tmp_path: Path, run_dir: str, problem: str) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_json(sub / "submission.json", lambda info: info.update(run_dir=run_dir))
    error = refused(sub)
    assert problem in error.problem and error.field.endswith("run_dir")


@pytest.mark.parametrize(("relative", "problem"), [
    ("summary.json/x", "file is missing"),  # a file where the path needs a folder
    ("a/" + "\u00e9" * 150, "file is missing"),  # a missing folder is met before the name too long
    ("\u00e9" * 150, "cannot be read (File name too long)"),
])
def test_a_path_the_file_system_refuses_is_a_clean_refusal(clean_suite: Path, tmp_path: Path, relative: str,
                                                           problem: str) -> None:
    sub = copy(clean_suite, tmp_path)
    edit_json(sub / "submission.json", lambda info: info.update(training_metrics=relative))
    assert problem in refused(sub).problem


def test_symlinked_file_out_of_the_folder(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    outside = tmp_path / "elsewhere.jsonl"
    (sub / "episodes.jsonl").rename(outside)
    (sub / "episodes.jsonl").symlink_to(outside)
    error = refused(sub)
    assert error.file == str(sub / "episodes.jsonl") and "symbolic link" in error.problem


def test_symlinked_run_dir(clean_suite: Path, tmp_path: Path) -> None:
    sub = tmp_path / "random"
    sub.mkdir()
    shutil.copy(clean_suite / "submission.json", sub)
    (sub / "run").symlink_to(clean_suite, target_is_directory=True)
    edit_json(sub / "submission.json", lambda info: info.update(run_dir="run"))
    assert "symbolic link" in refused(sub).problem


def test_fifo_is_not_read(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    (sub / "summary.json").unlink()
    os.mkfifo(sub / "summary.json")
    assert "not a regular file" in refused(sub).problem


def test_missing_file(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    (sub / "manifest.json").unlink()
    error = refused(sub)
    assert (error.file, error.problem) == (str(sub / "manifest.json"), "file is missing")


# -- submission.json schema ---------------------------------------------------------------


@pytest.mark.parametrize(("changes", "field"), [
    ({"name": "../evil"}, "name"),
    ({"name": "a b"}, "name"),
    ({"trained_on_train_panels": "no"}, "trained_on_train_panels"),
    ({"date": "2026-02-30"}, "date"),
    ({"date": "30/11/2026"}, "date"),
    ({"link": "javascript:alert(1)"}, "link"),
    ({"format": "ragen-bench/submission/v0"}, "format"),
    ({"score": 1.0}, "score"),
    ({"contact": ""}, "contact"),
])
def test_schema_refusals(clean_suite: Path, tmp_path: Path, changes: dict[str, Any], field: str) -> None:
    sub = copy(clean_suite, tmp_path)
    (sub / "submission.json").write_text(json.dumps({**submission_info("random"), **changes}))
    error = refused(sub)
    assert error.field == field and "does not match the submission schema" in error.problem


def test_schema_missing_field(clean_suite: Path, tmp_path: Path) -> None:
    sub = copy(clean_suite, tmp_path)
    info = submission_info("random")
    del info["recipe"]
    (sub / "submission.json").write_text(json.dumps(info))
    assert refused(sub).field == "recipe"


def test_published_schema_is_the_models() -> None:
    """docs/leaderboard.md publishes exactly the schema the code validates with."""
    text = (REPO_ROOT / "docs" / "leaderboard.md").read_text()
    block = re.search(r"<!-- schema -->\n```json\n(.*?)\n```", text, re.S)
    assert block is not None, "docs/leaderboard.md lost its schema block"
    assert json.loads(block.group(1)) == json_schema()


# -- properties ---------------------------------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=3), children, max_size=3),
    max_leaves=12,
)


@given(json_values)
def test_strict_difference_of_equal_values_is_none(value: Any) -> None:
    assert runfiles.difference(value, json.loads(json.dumps(value)), strict=True) is None


@given(json_values, json_values)
def test_strict_difference_finds_every_difference(a: Any, b: Any) -> None:
    # JSON text equality is strict equality of JSON values (true is not 1, 1 is not 1.0).
    same = json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    assert (runfiles.difference(a, b, strict=True) is None) == same


def _leaves(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    if isinstance(value, dict):
        return [leaf for k, v in value.items() for leaf in _leaves(v, (*path, k))]
    if isinstance(value, list):
        return [leaf for i, v in enumerate(value) for leaf in _leaves(v, (*path, i))]
    return [path]


def _mutated(value: Any) -> Any:
    if isinstance(value, bool):
        return not value
    if isinstance(value, int):
        return value + 1
    if isinstance(value, float):
        return value + 0.5
    if isinstance(value, str):
        return value + "x"
    return 0  # None


# Fields replay cannot check (token counts are bounded separately, finish_reason is the agent's word).
UNCHECKED = {"prompt_tokens", "completion_tokens", "finish_reason"}


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_edit_of_a_checked_field_is_refused(clean_tokens: Path, data: st.DataObject) -> None:
    refuses_any_edit(clean_tokens, data)


def refuses_any_edit(source: Path, data: st.DataObject) -> None:
    """One checked leaf of one record of ``source``, drawn by hypothesis, changed: verify must refuse the copy."""
    items = records(source)
    index = data.draw(st.integers(0, len(items) - 1), label="line")
    leaves = [p for p in _leaves(items[index]) if not UNCHECKED & {str(part) for part in p}]
    path = data.draw(st.sampled_from(leaves), label="path")
    target = items[index]
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = _mutated(target[path[-1]])
    with tempfile.TemporaryDirectory() as folder:
        sub = copy(source, Path(folder))
        write_records(sub, items)
        with pytest.raises(LeaderboardError):
            verify(sub)


texts = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=20)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.dictionaries(st.text(max_size=4), texts | st.integers(), max_size=3), max_size=5), st.booleans())
def test_episode_log_round_trips(
    tmp_path_factory: pytest.TempPathFactory, items: list[dict[str, Any]], compress: bool
) -> None:
    """Any records the harness can write (line breaks, U+2028, lone surrogates, NUL) read back
    one per line, plain or gzip."""
    data = b"".join(rundir.encode_line(item) for item in items)
    folder = tmp_path_factory.mktemp("log")
    path = folder / ("episodes.jsonl.gz" if compress else "episodes.jsonl")
    path.write_bytes(gzip.compress(data) if compress else data)
    assert [record for _, record in files.episode_lines(path)] == items


@given(st.text(alphabet="ab./\\0-_", min_size=1, max_size=12))
def test_inside_never_leaves_the_root(relative: str) -> None:
    root = Path("/srv/submission")
    try:
        path = files.inside(root, relative, what="run_dir")
    except LeaderboardError:
        return
    assert Path(os.path.normpath(path)).is_relative_to(root)


def _nodes(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path into a JSON value, containers included."""
    children: list[tuple[Any, Any]] = []
    if isinstance(value, dict):
        children = list(value.items())
    elif isinstance(value, list):
        children = list(enumerate(value))
    return [path] * bool(path) + [node for k, v in children for node in _nodes(v, (*path, k))]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_manifest_or_summary_value_gives_a_clean_refusal(clean_suite: Path, data: st.DataObject) -> None:
    """Whatever value replaces any part of manifest.json or summary.json, the answer is a
    LeaderboardError (or a pass, when the value happens to be equivalent), never a traceback."""
    name = data.draw(st.sampled_from(["manifest.json", "summary.json"]), label="file")
    document = json.loads((clean_suite / name).read_text())
    path = data.draw(st.sampled_from(_nodes(document)), label="path")
    target = document
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = data.draw(json_values, label="value")
    with tempfile.TemporaryDirectory() as folder:
        sub = copy(clean_suite, Path(folder))
        (sub / name).write_text(json.dumps(document))
        try:
            verify(sub)
        except LeaderboardError:
            pass


def test_verify_speed_on_a_whole_sokoban_panel(tmp_path: Path) -> None:
    """256 Sokoban episodes verify in about 0.25 s here (docs/leaderboard.md); the bound is 20x that."""
    sub = make_submission(tmp_path / "sokoban", "sokoban", "env=RAGEN/Sokoban-6x6-v0", "agent=random")
    run = verify(sub)
    assert len(run.rows) == 256 and run.seconds < 5.0
