"""Hostile inputs to the eval harness and CLI: each class of defect, with the inputs that hit it.

* text a model may produce (lone surrogates, NUL, line and paragraph separators, RTL
  marks) is stored and read back exactly;
* every bad setting is refused before anything is written, with one line naming the key;
* env arguments reach the envs and their data files are part of the run's identity;
* resume counts each planned episode once (copied lines, foreign or conflicting records);
* merge recomputes completeness from the plan;
* user mistakes end in one line and exit status 2, Ctrl-C in exit status 130 with the
  finished episodes kept;
* an agent breaking the protocol stops the run in one line, and once it is fixed the same
  command finishes the run without replaying or losing an episode.

Distinct hostile inputs tried here: 71 = 7 text (5 replies, hypothesis-generated str, a
surrogate in a table) + 33 settings and targets + 1 changed data file + 8 resume records
+ 3 merge logs + 5 out/--out paths + 4 agent mistakes + 6 malformed run files + 2 server
answers (401, retries exhausted) + 1 Ctrl-C + 1 reply breaking the protocol.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ragen_bench import runfiles
from ragen_bench.chat import AgentReply, AgentRequest
from ragen_bench.cli import EXIT_INTERRUPTED, main
from ragen_bench.eval import compose_config, merge_runs, rundir, run_eval
from ragen_bench.eval.report import format_table
from ragen_bench.eval.rundir import RunDirError
from tests.conftest import one_line_error

ENV = "RAGEN/Sokoban-6x6-v0"
MATH = "RAGEN/MathQA-v0"
HERE = "tests.test_eval_hardening"

# Replies no parser should choke on and no file should mangle.
STRANGE_REPLIES = (
    "<think>\ud83d</think><answer>Up</answer>",  # a lone high surrogate (half an emoji)
    "<think>\udc00 low</think><answer>\x00Down</answer>",  # a lone low surrogate, NUL
    "<think>a\u2028b\u2029c</think><answer>Left</answer>",  # line/paragraph separators
    "<think>\u202eevil\u202c \u200f</think><answer>Right\r</answer>",  # RTL override, RTL mark, CR
    "\ufeff<answer>\uffff\U0010ffff</answer>",  # BOM, noncharacters
)


class ScriptedAgent:
    """Replies from a fixed list by turn; optionally interrupts (Ctrl-C) on a given call."""

    name = "scripted-test"
    interrupt_on_call: int | None = None
    calls = 0

    def __init__(self, replies: Sequence[str]):
        self.replies = replies

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        ScriptedAgent.calls += 1
        if ScriptedAgent.calls == ScriptedAgent.interrupt_on_call:
            raise KeyboardInterrupt
        return [AgentReply(self.replies[(r.turn - 1) % len(self.replies)]) for r in requests]

    def close(self) -> None:
        pass


# The factories take (and ignore) the optimal agent config's settings they are named in.
def make_strange_agent(**_settings: object) -> ScriptedAgent:
    return ScriptedAgent(STRANGE_REPLIES)


def make_plain_agent(**_settings: object) -> ScriptedAgent:
    return ScriptedAgent(["<think>x</think><answer>Up || Left</answer>", "<answer>Down</answer>"])


class ProtocolBreaker(ScriptedAgent):
    """The plain agent, until call ``breaks_on_call`` (counted across runs) reports
    ``prompt_tokens='many'``; ``breaks_on_call = None`` is the fixed agent.  ``asked``
    records the episode keys of every request."""

    name = "protocol-breaker"
    breaks_on_call: int | None = None
    asked: list[str] = []

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        ProtocolBreaker.asked += [request.episode_key for request in requests]
        replies = super().act(requests)
        if ScriptedAgent.calls == self.breaks_on_call:
            replies[-1] = AgentReply(replies[-1].text, prompt_tokens="many")  # type: ignore[arg-type]
        return replies


def make_protocol_breaker(**_settings: object) -> ProtocolBreaker:
    return ProtocolBreaker(["<think>x</think><answer>Up || Left</answer>", "<answer>Down</answer>"])


def eval_args(out: Path, *overrides: str) -> list[str]:
    return [f"env={ENV}", "limit=3", "progress=false", f"out={out}", *overrides]


def config(out: Path, *overrides: str) -> dict:
    return compose_config("eval", eval_args(out, *overrides))


# ---------------------------------------------------------------- text round trips


@pytest.mark.usefixtures("wide_terminal")
def test_strange_replies_are_stored_resumed_and_compared(tmp_path, capsys):
    out = tmp_path / "run"
    args = eval_args(out, f"agent.name={HERE}:make_strange_agent", "chat.max_turns=5", "samples=2")
    assert main(["eval", *args]) == 0
    records = rundir.read_episodes(out / rundir.EPISODES)
    assert len(records) == 6
    for record in records:
        replies = [turn["raw_response"] for turn in record["turns"]]
        assert replies == list(STRANGE_REPLIES[: len(replies)])  # every character back, exactly
    summary = (out / rundir.SUMMARY).read_bytes()

    assert main(["eval", *args]) == 0  # the resume reads every line back
    assert "0 new episodes; run complete" in capsys.readouterr().out
    assert (out / rundir.SUMMARY).read_bytes() == summary
    assert main(["compare", str(out), str(out)]) == 0
    assert capsys.readouterr().out.count(ENV) == 2


@given(st.text(st.characters(exclude_categories=()), max_size=40))
def test_any_str_round_trips_through_log_lines_and_json_files(text):
    record = {"env_id": text, "nested": [text, {text: text}]}
    assert json.loads(rundir.encode_line(record)) == record
    assert rundir.encode_line(record).count(b"\n") == 1  # one record, one line


def test_tables_print_lone_surrogates_escaped():
    table = format_table([{"run": "agent(m\ud83d)", "success": 1.0}])
    assert "agent(m\\ud83d)" in table
    table.encode("utf-8")  # printable on a UTF-8 terminal


def test_json_files_keep_lone_surrogates(tmp_path):
    data = {"model": "m\udcff", "board": "√"}
    runfiles.write_json_atomic(tmp_path / "x.json", data)
    assert rundir.read_json(tmp_path / "x.json") == data


# ---------------------------------------------------------------- config validation

BAD_SETTINGS = [
    ("chat.format_penalty=5", "chat.format_penalty"),
    ("chat.format_penalty=abc", "chat.format_penalty"),
    ("chat.format_penalty=nan", "chat.format_penalty"),
    ("chat.think=maybe", "chat.think"),
    ("chat.max_turns=2.5", "chat.max_turns"),
    ("chat.max_turns=0", "max_turns"),
    ("chat.history_window=true", "chat.history_window"),
    ("chat.template=nosuch", "nosuch"),
    ("chat.action_separator=' '", "action_separator"),
    ("+chat.temperature=1", "chat.temperature"),
    ("+bogus=1", "bogus"),
    ("samples=2.5", "samples"),
    ("samples=0", "samples"),
    ("samples=true", "samples"),
    ("limit=true", "limit"),
    ("limit=0", "limit"),
    ("sampling_seed=abc", "sampling_seed"),
    ("sampling_seed=-1", "sampling_seed"),
    ("shard=3/2", "shard"),
    ("shard=4/4", "shard"),
    ("shard=half", "shard"),
    ("lockstep_episodes=0", "lockstep_episodes"),
    ("lockstep_episodes=1.5", "lockstep_episodes"),
    ("progress=maybe", "progress"),
    ("env=RAGEN/Nope-v0", "unknown env id"),
    ("split=nosuch", "'nosuch'"),
    ("suite=ragen-generalization-v0", "exactly one of env=<id> or suite=<name>"),
    ("env_kwargs=5", "env_kwargs"),
    ("+env_kwargs.data_path=/no/such/file.jsonl", "env_kwargs.data_path"),
    ("+env_kwargs.bogus=1", "env_kwargs"),
]


@pytest.mark.parametrize("override, named", BAD_SETTINGS)
def test_bad_settings_are_refused_before_anything_is_written(tmp_path, capsys, override, named):
    out = tmp_path / "run"
    assert main(["eval", *eval_args(out, override)]) == 2
    one_line_error(capsys, named)
    assert not out.exists()


@pytest.mark.parametrize(
    "overrides, named",
    [(["env=null", "suite=nosuch"], "nosuch"), (["env=null"], "exactly one"),
     (["env=null", "suite=ragen-generalization-v0", "split=val"], "split 'val'")],
)
def test_bad_targets_are_refused(tmp_path, capsys, overrides, named):
    assert main(["eval", *eval_args(tmp_path / "run", *overrides)]) == 2
    one_line_error(capsys, named)
    assert not (tmp_path / "run").exists()


# ---------------------------------------------------------------- env arguments


def write_questions(path: Path, answer: str) -> Path:
    path.write_text(json.dumps({"question": "What is the answer to the unit test?", "answer": answer}) + "\n")
    return path


def test_env_kwargs_reach_the_env_and_their_data_file_is_part_of_the_run(tmp_path, capsys):
    data = write_questions(tmp_path / "q.jsonl", "42")
    args = [f"env={MATH}", "limit=2", "progress=false", f"out={tmp_path / 'run'}", "agent=optimal",
            f"+env_kwargs.data_path={data}"]
    assert main(["eval", *args]) == 0
    records = rundir.read_episodes(tmp_path / "run" / rundir.EPISODES)
    assert all("unit test" in record["messages"][1]["content"] for record in records)  # not built-in questions
    assert all(record["success"] for record in records)
    manifest = rundir.read_json(tmp_path / "run" / rundir.MANIFEST)
    assert manifest["config"]["env_kwargs"] == {"data_path": str(data)}
    import hashlib

    assert manifest["data_files"]["data_path"]["sha256"] == hashlib.sha256(data.read_bytes()).hexdigest()

    write_questions(data, "43")  # same name, other contents: another run
    assert main(["eval", *args]) == 2
    one_line_error(capsys, "data_files.data_path.sha256")


# ---------------------------------------------------------------- resume counts each planned episode once


@pytest.fixture
def finished(tmp_path) -> Path:
    out = tmp_path / "run"
    run_eval(config(out, "agent=random", "samples=2"))
    return out


def test_a_copied_line_is_ignored_and_reported(finished, capsys):
    log = finished / rundir.EPISODES
    summary = (finished / rundir.SUMMARY).read_bytes()
    lines = log.read_bytes().splitlines(keepends=True)
    log.write_bytes(b"".join(lines + lines[:2]))
    assert main(["eval", *eval_args(finished, "agent=random", "samples=2")]) == 0
    assert f"ignored 2 duplicate line(s) in {log}" in capsys.readouterr().out
    assert (finished / rundir.SUMMARY).read_bytes() == summary


@pytest.mark.parametrize(
    "change, line, message",
    [
        # A changed copy of line 1, appended as line 7.
        (lambda r: r.update(success=not r["success"]), 7, "different from line 1"),
        (lambda r: r.update(seed=987654321), 7, "not in this run's plan"),  # a foreign seed
        (lambda r: r.update(sample=2), 7, "not in this run's plan"),  # a sample beyond samples=2
        (lambda r: r.update(split="val"), 7, "not in this run's plan"),  # another split
        (lambda r: r.pop("seed"), 7, "not an episode record"),
        (lambda r: r.update(seed="x"), 7, "not an episode record"),
        # Line 1 itself replaced by a record that names its slot but lacks the rest.
        (lambda r: r.pop("turns"), 1, "not an episode record"),
    ],
)
def test_conflicting_foreign_or_broken_records_are_refused_naming_file_and_line(
    finished, capsys, change, line, message
):
    log = finished / rundir.EPISODES
    summary = (finished / rundir.SUMMARY).read_bytes()
    lines = log.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[0])
    change(record)
    edited = rundir.encode_line(record)
    log.write_bytes(b"".join(lines) + edited if line == 7 else edited + b"".join(lines[1:]))
    assert main(["eval", *eval_args(finished, "agent=random", "samples=2")]) == 2
    one_line_error(capsys, f"{log}: line {line}", message)
    assert (finished / rundir.SUMMARY).read_bytes() == summary


# ---------------------------------------------------------------- merge


@pytest.fixture
def shards(tmp_path) -> list[Path]:
    dirs = [tmp_path / f"s{i}" for i in range(2)]
    for index, out in enumerate(dirs):
        run_eval(config(out, "agent=random", "limit=4", f"shard={index}/2"))
    return dirs


def test_merge_recomputes_completeness_from_the_plan(shards, tmp_path):
    log = shards[0] / rundir.EPISODES
    log.write_bytes(b"".join(log.read_bytes().splitlines(keepends=True)[1:]))  # one episode lost
    assert rundir.read_json(shards[0] / rundir.MANIFEST)["complete"] is True  # the stale flag
    merge_runs(shards, tmp_path / "merged")
    manifest = rundir.read_json(tmp_path / "merged" / rundir.MANIFEST)
    assert manifest["complete"] is False and manifest["expected_episodes"] == 4
    assert len(rundir.read_episodes(tmp_path / "merged" / rundir.EPISODES)) == 3


def test_merge_refuses_an_episode_of_another_shard(shards, tmp_path):
    other = (shards[1] / rundir.EPISODES).read_bytes().splitlines(keepends=True)[0]
    with open(shards[0] / rundir.EPISODES, "ab") as handle:
        handle.write(other)
    with pytest.raises(RunDirError, match=r"line 3 holds episode .* not in this run's plan"):
        merge_runs(shards, tmp_path / "merged")


def test_merge_ignores_a_copied_line(shards, tmp_path):
    log = shards[0] / rundir.EPISODES
    log.write_bytes(log.read_bytes() * 2)
    merge_runs(shards, tmp_path / "merged")
    assert rundir.read_json(tmp_path / "merged" / rundir.MANIFEST)["complete"] is True
    assert len(rundir.read_episodes(tmp_path / "merged" / rundir.EPISODES)) == 4


# ---------------------------------------------------------------- user mistakes: one line, exit 2


def test_out_that_is_a_file_or_unwritable(tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main(["eval", *eval_args(a_file)]) == 2
    one_line_error(capsys, str(a_file), "not a directory")
    assert main(["eval", *eval_args(a_file / "sub")]) == 2
    one_line_error(capsys, str(a_file / "sub"))
    if os.geteuid() == 0:  # root writes through permission bits; /sys refuses everyone
        unwritable = Path("/sys/ragen-bench-test-run")
    else:
        locked_dir = tmp_path / "ro"
        locked_dir.mkdir(mode=0o500)
        unwritable = locked_dir / "run"
    assert main(["eval", *eval_args(unwritable)]) == 2
    one_line_error(capsys, str(unwritable))


def test_merge_out_that_is_a_file_or_an_input(shards, tmp_path, capsys):
    a_file = tmp_path / "file"
    a_file.write_text("x")
    assert main(["merge", "--out", str(a_file), *map(str, shards)]) == 2
    one_line_error(capsys, str(a_file))
    assert a_file.read_text() == "x"
    assert main(["merge", "--out", str(shards[1]), *map(str, shards)]) == 2
    one_line_error(capsys, str(shards[1]), "one of the inputs")


@pytest.mark.parametrize(
    "override, named",
    [
        ("agent.name=no_such_module_xyz:make", "no_such_module_xyz"),
        (f"agent.name={HERE}:no_such_factory", "no_such_factory"),
        ("agent.name=nosuch", "nosuch"),
        ("+agent.bogus_setting=1", "bogus_setting"),
    ],
)
def test_agent_mistakes_are_one_line(tmp_path, capsys, override, named):
    assert main(["eval", *eval_args(tmp_path / "run", override)]) == 2
    one_line_error(capsys, named)
    assert not (tmp_path / "run").exists()  # refused before a manifest was written


@pytest.mark.parametrize(
    "name, content",
    [("manifest.json", "{bad json"), ("manifest.json", "[1, 2]"), ("manifest.json", '{"format": 1}'),
     ("summary.json", "{bad json"), ("summary.json", '{"groups": [{"env_id": 1}]}'), ("summary.json", "null")],
)
def test_malformed_run_files_are_named(finished, capsys, name, content):
    (finished / name).write_text(content)
    assert main(["compare", str(finished)]) == 2
    one_line_error(capsys, str(finished / name))


def test_resuming_over_a_corrupt_manifest_names_it(finished, capsys):
    # The reader `ragen-bench train` uses for config.json too: the same message.
    (finished / "manifest.json").write_text('{"format": ')
    assert main(["eval", *eval_args(finished, "agent=random", "samples=2")]) == 2
    one_line_error(capsys, f"{finished / 'manifest.json'}: corrupt, not valid JSON")


class FixedStatus(BaseHTTPRequestHandler):
    status = 401

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
        self.rfile.read(int(self.headers["Content-Length"]))
        body = b'{"error": "nope"}'
        self.send_response(self.server.status)  # type: ignore[attr-defined]
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture
def server() -> Iterator[ThreadingHTTPServer]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), FixedStatus)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("status, named", [(401, "401"), (503, "503")])
def test_server_refusals_and_exhausted_retries_are_one_line(tmp_path, capsys, server, status, named):
    pytest.importorskip("httpx")
    server.status = status  # type: ignore[attr-defined]
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    overrides = ["agent=openai", "agent.model=m", f"agent.base_url={url}", "++agent.max_retries=1",
                 "++agent.backoff_base_s=0.01", "++agent.backoff_cap_s=0.01", "limit=1"]
    assert main(["eval", *eval_args(tmp_path / "run", *overrides)]) == 2
    one_line_error(capsys, named, url)


@pytest.mark.parametrize("env_id, breaks_on_call", [(ENV, 5), ("RAGEN/TicTacToe-v0", 4)])
def test_an_agent_breaking_the_protocol_stops_the_run_and_the_fixed_agent_finishes_it(
    tmp_path, capsys, env_id, breaks_on_call
):
    out = tmp_path / "run"
    args = [f"env={env_id}", "limit=6", "progress=false", f"out={out}", f"agent.name={HERE}:make_protocol_breaker",
            "lockstep_episodes=2", "chat.max_turns=2"]
    ScriptedAgent.calls, ProtocolBreaker.breaks_on_call, ProtocolBreaker.asked = 0, breaks_on_call, []
    try:
        assert main(["eval", *args]) == 2
    finally:
        ProtocolBreaker.breaks_on_call = None
    one_line_error(capsys, "agent 'protocol-breaker' broke the protocol", "prompt_tokens", "'many'")
    log = out / rundir.EPISODES
    kept = log.read_bytes()
    finished = {rundir.slot_of(record)[2:] for record in rundir.read_episodes(log)}  # (seed, sample)
    assert 0 < len(finished) < 6  # the groups played before the bad reply are on disk, no later one
    assert rundir.read_json(out / rundir.MANIFEST)["complete"] is False
    assert not (out / rundir.SUMMARY).exists()
    with rundir.locked(out):  # the lock was released
        pass

    ProtocolBreaker.asked = []
    assert main(["eval", *args]) == 0  # the same command, with the agent fixed
    assert f"{6 - len(finished)} new episodes; run complete" in capsys.readouterr().out
    assert log.read_bytes().startswith(kept)  # the earlier episodes are kept as written ...
    # ... and not played again (keys: env/split/seed/sample, and /seat in a game)
    asked = {tuple(map(int, key[len(env_id) + 1 :].split("/")[1:3])) for key in ProtocolBreaker.asked}
    assert asked and not asked & finished
    slots = [rundir.slot_of(record) for record in rundir.read_episodes(log)]
    assert len(slots) == len(set(slots)) == 6  # each planned episode exactly once
    manifest = rundir.read_json(out / rundir.MANIFEST)
    assert manifest["complete"] is True and manifest["sessions"] == 2
    # Nothing lost, nothing counted twice: the summary of a run the fixed agent played at once.
    assert main(["eval", *args[:3], f"out={tmp_path / 'reference'}", *args[4:]]) == 0
    assert (out / rundir.SUMMARY).read_bytes() == (tmp_path / "reference" / rundir.SUMMARY).read_bytes()


# ---------------------------------------------------------------- Ctrl-C


def test_ctrl_c_keeps_finished_episodes_and_the_rerun_completes(tmp_path, capsys):
    args = eval_args(tmp_path / "run", f"agent.name={HERE}:make_plain_agent", "limit=6", "lockstep_episodes=2",
                     "chat.max_turns=2")
    ScriptedAgent.calls, ScriptedAgent.interrupt_on_call = 0, 5  # groups of 2 take 2 calls: 2 groups done
    try:
        assert main(["eval", *args]) == EXIT_INTERRUPTED
    finally:
        ScriptedAgent.interrupt_on_call = None
    assert "interrupted" in one_line_error(capsys)
    log = tmp_path / "run" / rundir.EPISODES
    assert len(rundir.read_episodes(log)) == 4
    with rundir.locked(tmp_path / "run"):  # the lock was released
        pass
    assert main(["eval", *args]) == 0
    assert "2 new episodes; run complete" in capsys.readouterr().out
    assert len(rundir.read_episodes(log)) == 6

    assert main(["eval", *eval_args(tmp_path / "reference", *args[4:])]) == 0
    assert (tmp_path / "run" / rundir.SUMMARY).read_bytes() == (tmp_path / "reference" / rundir.SUMMARY).read_bytes()
