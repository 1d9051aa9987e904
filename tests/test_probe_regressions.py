"""Regressions found by a second hostile-input probe (after the hardening issue's fixes).

Each test pins one defect class the probe hit: an env pickled mid-episode, a refused
first reset, settings that hang or mean nothing, agents that fail inside
``act``/``close``, tampered episode records, I/O errors that named no file.

Distinct hostile inputs tried here: 26 env copies (13 ids x pickle/deepcopy) + 2
pickled fresh/finished envs + 9 refused first resets + 11 CLI settings + 3 temperatures
+ 4 format penalties + 3 errors in act() + 1 in close() + 12 tampered records + 2
nested-JSON lines + 2 failing write/fsync calls + 1 nested-JSON server answer + 2 answers
too long to give + 3 nested-JSON data/panel/suite files + 1 directory named as a suite + 3
missing panels + 1 out= directory of other files + 2 merge --out directories + 8 Bandit
arm names + 4 Hydra overrides + 2 shared env/repeated episode + 3 non-agents + 4 samples
+ 4 separators + hypothesis-generated str through AnyText flattening + 3 async vector envs
(123 plus the generated strings).
"""

from __future__ import annotations

import copy
import errno
import json
import math
import pickle
import shutil
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import gymnasium
import pytest
from hypothesis import given
from hypothesis import strategies as st

import ragen_bench  # noqa: F401  (registers the ids)
from ragen_bench import data, panels, suites
from ragen_bench.agents.sampling import SamplingSettings
from ragen_bench.agents import make_agent
from ragen_bench.chat import AgentError, AgentReply, AgentRequest, ChatConfig, ChatEpisode, run_lockstep
from ragen_bench.chat.config import MAX_FORMAT_PENALTY
from ragen_bench.cli import main
from ragen_bench.envs.bandit import BanditEnv
from ragen_bench.envs.base import AnyText, EpisodeFinishedError
from ragen_bench.envs.datafiles import InstanceFileError
from ragen_bench.envs.math_qa import MathQAEnv
from ragen_bench.envs.math_qa.questions import MAX_ANSWER_CHARS
from ragen_bench.eval import compose_config, rundir, run_eval
from ragen_bench.eval.config import MAX_SAMPLES
from ragen_bench.registry import BUILTIN_IDS
from tests.conftest import one_line_error

# -- envs copied mid-episode ------------------------------------------------------------------


def _first_action(env: gymnasium.Env) -> object:
    action = env.unwrapped.optimal_action()
    return action if action is not None else (0 if env.unwrapped.action_names else "1")


@pytest.mark.parametrize(
    "copier", [lambda env: pickle.loads(pickle.dumps(env)), copy.deepcopy], ids=["pickle", "deepcopy"]
)
@pytest.mark.parametrize("env_id", BUILTIN_IDS)
def test_an_env_copied_mid_episode_steps_like_the_original(env_id: str, copier) -> None:
    # A pickled env used to come back with a phase marker that failed the identity
    # check, so its first step raised EpisodeFinishedError on a live episode.
    env = gymnasium.make(env_id)
    env.reset(seed=0)
    env.step(_first_action(env))
    twin = copier(env)
    if env.unwrapped.episode_finished:
        with pytest.raises(EpisodeFinishedError):
            twin.step(_first_action(env))
        return
    action = _first_action(env)
    assert twin.step(action)[:4] == env.step(action)[:4]


def test_a_pickled_finished_env_is_still_finished_and_a_fresh_one_needs_reset() -> None:
    env = gymnasium.make("RAGEN/Bandit-v0")
    fresh = pickle.loads(pickle.dumps(env))
    with pytest.raises(gymnasium.error.ResetNeeded):
        fresh.step(0)
    env.reset(seed=3)
    env.step(0)  # one pull ends a Bandit episode
    finished = pickle.loads(pickle.dumps(env))
    with pytest.raises(EpisodeFinishedError):
        finished.step(0)


# -- a refused first reset --------------------------------------------------------------------


@pytest.mark.parametrize("env_id", ["RAGEN/Sokoban-6x6-v0", "RAGEN/FrozenLake-4x4-v0", "RAGEN/MathQA-v0"])
@pytest.mark.parametrize("bad_seed", [-1, 1.5, "7"])
def test_steps_after_a_refused_first_reset_work(env_id: str, bad_seed: object) -> None:
    # Gymnasium's passive checker (1.4) recorded nothing when the first reset raised,
    # then crashed on the second step with a bare TypeError; our ids do not install it.
    env = gymnasium.make(env_id)
    with pytest.raises((TypeError, ValueError), match="seed"):
        env.reset(seed=bad_seed)
    env.reset(seed=5)
    for _ in range(2):
        if env.unwrapped.episode_finished:
            break
        env.step(_first_action(env))


# -- settings that hang or mean nothing -----------------------------------------------------

EVAL_ENV = "RAGEN/Bandit-v0"


def eval_args(out: Path, *overrides: str) -> list[str]:
    """CLI overrides of a short random-agent run into ``out``; later ``agent=``/``out=`` win."""
    given = {override.split("=", 1)[0] for override in overrides}
    defaults = ["agent=random", f"out={out}"]
    return [f"env={EVAL_ENV}", "limit=2", "progress=false"] + [
        d for d in defaults if d.split("=", 1)[0] not in given
    ] + list(overrides)


BAD_SETTINGS = [
    # The plan is built up front: 10**23 samples stalled the command forever.
    ("samples=99999999999999999999999", "samples"),
    (f"samples={MAX_SAMPLES + 1}", "samples"),
    # An empty out= silently wrote to the default runs/<agent>-<env>-<split>.
    ("out=", "out"),
    # vLLM seeds numpy's 32-bit legacy generator with it.
    (f"sampling_seed={2**32}", "sampling_seed"),
    ("agent.sampling_seed=-1", "sampling_seed"),
    ("agent=hf agent.temperature=nan", "temperature"),
    ("agent=hf agent.temperature=inf", "temperature"),
    # Summed over turns this reached -inf, which JSON files cannot hold.
    ("chat.format_penalty=-1e308", "format_penalty"),
    ("chat.format_penalty=-1e7", "format_penalty"),
    # gymnasium.make calls str methods on render_mode (AttributeError).
    ("+env_kwargs.render_mode=5", "render_mode"),
    ("+env_kwargs.render_mode=[ansi]", "render_mode"),
]


@pytest.mark.parametrize("override, named", BAD_SETTINGS)
def test_bad_settings_are_refused_before_anything_is_written(tmp_path, monkeypatch, capsys, override, named):
    monkeypatch.chdir(tmp_path)  # where a default out= would go
    out = tmp_path / "run"
    assert main(["eval", *eval_args(out, *override.split(" "))]) == 2
    one_line_error(capsys, named)
    assert not out.exists() and not (tmp_path / "runs").exists()


def test_samples_at_the_bound_still_run(tmp_path):
    result = run_eval(compose_config("eval", eval_args(tmp_path / "run", "limit=1", "samples=3")))
    assert result.complete and result.new_episodes == 3
    assert MAX_SAMPLES >= 1000  # pass@k with k up to 512 must stay possible


def test_sampling_settings_refuse_non_finite_temperatures():
    for temperature in (math.nan, math.inf, -0.5):
        with pytest.raises(ValueError, match="temperature"):
            SamplingSettings(temperature=temperature)
    assert SamplingSettings(temperature=0.0).temperature == 0.0


def test_chat_config_bounds_the_format_penalty():
    for penalty in (-1e308, math.nan, -math.inf, 2e6):
        with pytest.raises(ValueError, match="format_penalty"):
            ChatConfig(format_penalty=penalty)
    assert ChatConfig(format_penalty=-MAX_FORMAT_PENALTY).format_penalty == -MAX_FORMAT_PENALTY


# -- agents that fail inside act() or close() -----------------------------------------------

HERE = "tests.test_probe_regressions"


class FailingAgent:
    """Valid replies, except that ``act`` or ``close`` raises the configured error."""

    name = "failing-test"
    act_error: Exception | None = None
    close_error: Exception | None = None

    def act(self, requests):
        if FailingAgent.act_error is not None:
            raise FailingAgent.act_error
        return [AgentReply("<think>x</think><answer>Phoenix</answer>") for _ in requests]

    def close(self) -> None:
        if FailingAgent.close_error is not None:
            raise FailingAgent.close_error


def make_failing_agent(**_settings: object) -> FailingAgent:
    return FailingAgent()


@pytest.fixture
def failing(monkeypatch) -> type[FailingAgent]:
    monkeypatch.setattr(FailingAgent, "act_error", None)
    monkeypatch.setattr(FailingAgent, "close_error", None)
    return FailingAgent


@pytest.mark.parametrize("error", [ValueError("model exploded"), KeyError("boom"), OSError("disk gone")])
def test_an_error_inside_act_names_the_agent(tmp_path, capsys, failing, error):
    # These print as one bare line ("boom") that did not say what failed.
    failing.act_error = error
    assert main(["eval", *eval_args(tmp_path / "run", f"agent.name={HERE}:make_failing_agent")]) == 2
    one_line_error(capsys, "'failing-test'", "act()", type(error).__name__)


def test_an_error_inside_close_names_the_agent_and_the_rerun_finishes(tmp_path, capsys, failing):
    # Used to end in a RuntimeError traceback with no summary written.
    failing.close_error = RuntimeError("close failed")
    args = eval_args(tmp_path / "run", f"agent.name={HERE}:make_failing_agent")
    assert main(["eval", *args]) == 2
    one_line_error(capsys, "'failing-test'", "close()", "close failed")
    assert len(rundir.read_episodes(tmp_path / "run" / rundir.EPISODES)) == 2
    assert main(["eval", *args]) == 0  # nothing left to play: no agent is built
    assert "0 new episodes; run complete" in capsys.readouterr().out


# -- tampered episode records ---------------------------------------------------------------


@pytest.fixture
def finished(tmp_path) -> Path:
    out = tmp_path / "run"
    run_eval(compose_config("eval", eval_args(out)))
    return out


def _edit_turns(record: dict, **fields: object) -> None:
    record["turns"] = [dict(turn, **fields) for turn in record["turns"]]


TAMPERED = [
    # Each of these used to be coerced (bool("no") is True, float("1") is 1.0) or
    # passed through (NaN, negative token counts) into a different summary.
    (lambda r: r.update(success="no"), "success"),
    (lambda r: r.update(success=1), "success"),
    (lambda r: r.update(total_reward="1"), "total_reward"),
    (lambda r: r.update(total_reward=math.nan), "total_reward"),
    (lambda r: r.update(total_reward=math.inf), "total_reward"),
    (lambda r: r.update(num_turns=2.7), "num_turns"),
    (lambda r: r.update(num_actions=-1), "num_actions"),
    (lambda r: r.update(optimal_length="3"), "optimal_length"),
    (lambda r: _edit_turns(r, prompt_tokens=-5), "prompt_tokens"),
    (lambda r: _edit_turns(r, completion_tokens=True), "completion_tokens"),
    (lambda r: _edit_turns(r, format_penalty=math.nan), "format_penalty"),
    (lambda r: r.update(turns=[5]), "turns"),
]


@pytest.mark.parametrize("change, field", TAMPERED)
def test_a_tampered_record_is_refused_naming_file_line_and_field(finished, capsys, change, field):
    log = finished / rundir.EPISODES
    summary = (finished / rundir.SUMMARY).read_bytes()
    lines = log.read_bytes().splitlines(keepends=True)
    record = json.loads(lines[-1])
    change(record)
    log.write_bytes(b"".join(lines[:-1]) + rundir.encode_line(record))
    assert main(["eval", *eval_args(finished)]) == 2
    one_line_error(capsys, f"{log}: line {len(lines)}", field)
    assert (finished / rundir.SUMMARY).read_bytes() == summary


def test_a_deeply_nested_torn_tail_is_repaired_not_a_recursion_error(finished, capsys):
    log = finished / rundir.EPISODES
    intact = log.read_bytes()
    log.write_bytes(intact + b"[" * 100_000 + b"]" * 100_000)  # no newline: a torn tail
    assert main(["eval", *eval_args(finished)]) == 0
    assert log.read_bytes() == intact
    log.write_bytes(intact + b"[" * 100_000 + b"]" * 100_000 + b"\n" + intact.splitlines(keepends=True)[0])
    assert main(["eval", *eval_args(finished)]) == 2
    one_line_error(capsys, f"{log}: line 3", "not a complete JSON record")


def test_a_failing_write_or_fsync_names_the_log(tmp_path, monkeypatch):
    # os.write/os.fsync errors carry no file name; a full disk printed "[Errno 28] ...".
    log = rundir.EpisodeLog(tmp_path / rundir.EPISODES)

    def full_disk(*_args):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(rundir.os, "write", full_disk)
    with pytest.raises(OSError) as raised:
        log.append({"a": 1})
    assert raised.value.filename == str(tmp_path / rundir.EPISODES) and raised.value.errno == errno.ENOSPC
    monkeypatch.setattr(rundir.os, "fsync", full_disk)
    with pytest.raises(OSError, match="No space") as raised:
        log.close()
    assert raised.value.filename == str(tmp_path / rundir.EPISODES)
    log.close()  # the descriptor was released anyway: a second close does nothing


# -- an OpenAI-compatible server nesting its JSON too deep -----------------------------------


class _DeepThenValid(BaseHTTPRequestHandler):
    """First answer: JSON nested 100 000 arrays deep (RecursionError in json); then a valid one."""

    calls = 0

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["Content-Length"]))
        _DeepThenValid.calls += 1
        message = {"choices": [{"message": {"content": "<answer>Up</answer>"}, "finish_reason": "stop"}]}
        body = b"[" * 100_000 + b"]" * 100_000 if _DeepThenValid.calls == 1 else json.dumps(message).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *_args: object) -> None:
        pass


def test_a_too_deeply_nested_answer_is_a_retried_server_fault():
    # json raised RecursionError, which the agent did not catch: a traceback, no retry.
    from ragen_bench.agents.openai_compat import make_openai_agent

    server = ThreadingHTTPServer(("127.0.0.1", 0), _DeepThenValid)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    agent = make_openai_agent(
        "m", base_url=f"http://127.0.0.1:{server.server_port}/v1", max_retries=1, backoff_base_s=0.01, timeout_s=30
    )
    try:
        (reply,) = agent.act([AgentRequest(messages=[{"role": "user", "content": "hi"}], episode_key="k", turn=1)])
    finally:
        agent.close()
        server.shutdown()
        server.server_close()
    assert (reply.text, _DeepThenValid.calls) == ("<answer>Up</answer>", 2)


# -- data files, panels and suites ----------------------------------------------------------

DEEP_JSON = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    "row, message",
    [
        # The optimal agent's answer is cut by the action space's bound, so the row scored 0.
        ({"question": "Digits?", "answer": "9" * (MAX_ANSWER_CHARS + 1)}, "answer may have"),
        ({"query": "Digits?", "response": "The answer is: " + "9" * (MAX_ANSWER_CHARS + 1)}, "answer may have"),
    ],
)
def test_a_reference_answer_no_reply_can_hold_is_refused(tmp_path, row, message):
    path = tmp_path / "q.jsonl"
    path.write_text(json.dumps(row) + "\n", encoding="utf-8")
    with pytest.raises(InstanceFileError, match=f"{path}: line 1: .*{message}"):
        MathQAEnv(data_path=str(path))
    path.write_text(json.dumps({"question": "Digits?", "answer": "9" * MAX_ANSWER_CHARS}) + "\n", encoding="utf-8")
    env = MathQAEnv(data_path=str(path))
    env.reset(seed=0)
    assert env.step(env.optimal_action())[1] > 0  # the longest allowed answer is still reachable


def test_a_data_file_nested_too_deep_names_file_and_line(tmp_path):
    path = tmp_path / "q.jsonl"
    path.write_text('{"question": "q", "answer": "1"}\n{"question": "q", "answer": "1", "x": ' + DEEP_JSON + "}\n")
    with pytest.raises(InstanceFileError, match=f"{path}: line 2: JSON nested too deeply"):
        MathQAEnv(data_path=str(path))


@pytest.fixture
def data_copy(tmp_path, monkeypatch) -> Path:
    copy = tmp_path / "data"
    shutil.copytree(str(panels.data_dir()), copy)
    monkeypatch.setenv(data.DATA_DIR_OVERRIDE, str(copy))
    return copy


def test_a_panel_nested_too_deep_is_a_panel_error(data_copy):
    path = data_copy / "bandit" / "panels" / "Bandit-v0" / "test.json"
    path.write_text(DEEP_JSON)
    with pytest.raises(panels.PanelError, match="test.json: not a UTF-8 JSON file"):
        panels.load("RAGEN/Bandit-v0", "test")


def test_a_suite_nested_too_deep_is_a_suite_error(data_copy):
    (data_copy / "suites" / "ragen-bandit-generalization-v0.json").write_text(DEEP_JSON)
    with pytest.raises(suites.SuiteError, match="malformed suite file"):
        suites.get("ragen-bandit-generalization-v0")


def test_a_directory_named_like_a_suite_is_not_listed_as_one(data_copy):
    # The refusal used to list the very name it called unknown.
    path = data_copy / "suites" / "ragen-bandit-generalization-v0.json"
    path.unlink()
    path.mkdir()
    assert "ragen-bandit-generalization-v0" not in suites.names()
    with pytest.raises(suites.SuiteError, match="available: balrog-v0, breadth-v0, ragen-generalization-v0, ragen-sokoban"):
        suites.get("ragen-bandit-generalization-v0")


@pytest.mark.parametrize("damage", ["delete", "directory", "all"])
def test_envs_verify_fails_on_a_missing_panel(data_copy, capsys, damage):
    # verify used to check only the files present: with test.json (or every panel) gone
    # it printed "ok" for the rest, or nothing at all, and exited 0.
    folder = data_copy / "bandit" / "panels" / "Bandit-v0"
    if damage == "all":
        shutil.rmtree(data_copy / "bandit")
    else:
        (folder / "test.json").unlink()
        if damage == "directory":
            (folder / "test.json").mkdir()
    assert main(["envs", "verify", "RAGEN/Bandit-v0"]) == 1
    assert "FAIL RAGEN/Bandit-v0 test: no 'test' panel" in capsys.readouterr().out


# -- out= and merge --out naming a directory that holds something else ---------------------


def test_out_naming_a_directory_of_other_files_is_refused(tmp_path, capsys):
    # out=. or a typo such as out=src used to scatter manifest/episodes/summary files there.
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    assert main(["eval", *eval_args(folder)]) == 2
    one_line_error(capsys, str(folder), "notes.txt", "not a run")
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["eval", *eval_args(empty)]) == 0  # an empty directory is a new run's home


@pytest.fixture
def shards(tmp_path) -> list[Path]:
    paths = [tmp_path / f"s{i}" for i in range(2)]
    for i, path in enumerate(paths):
        run_eval(compose_config("eval", eval_args(path, f"shard={i}/2")))
    return paths


def test_merge_into_a_directory_of_other_files_is_refused(shards, tmp_path, capsys):
    folder = tmp_path / "src"
    folder.mkdir()
    (folder / "notes.txt").write_text("mine")
    assert main(["merge", "--out", str(folder), *map(str, shards)]) == 2
    one_line_error(capsys, str(folder), "other files")
    assert [p.name for p in folder.iterdir()] == ["notes.txt"]


def test_merge_into_an_empty_out_is_refused(shards, tmp_path, monkeypatch, capsys):
    # --out "" is the current directory: the merged run landed among the user's files.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as exited:
        main(["merge", "--out", "", *map(str, shards)])
    assert exited.value.code == 2
    assert "argument --out: must name a directory" in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s0", "s1"]


# -- Bandit arm names a reply cannot state ---------------------------------------------------


@pytest.mark.parametrize("name", ["</answer>", "<think>", "x||y", "||", "  Oak", "Oak ", "a  b", "Oak."])
def test_bandit_arm_names_must_be_statable_in_a_reply(name):
    # The parser cuts tags and splits on the separator, so such an arm could never be
    # pulled: the optimal agent scored 0 on a run that looked valid.
    with pytest.raises(ValueError, match="low_risk_name must be words of ASCII letters and digits"):
        BanditEnv(low_risk_name=name)


def test_multi_word_arm_names_are_pulled_by_the_optimal_agent():
    env = gymnasium.make("RAGEN/Bandit-v0", low_risk_name="Golden Retriever", high_risk_name="T-Rex")
    (trajectory,) = run_lockstep(
        [ChatEpisode(env, ChatConfig(), env_id="RAGEN/Bandit-v0", seed=7)], make_agent("optimal")
    )
    assert trajectory.success and trajectory.turns[0].parsed_actions == ["T-Rex"]


# -- Hydra's own settings ---------------------------------------------------------------------


@pytest.mark.parametrize("override", ["hydra.run.dir=x", "+hydra.foo=1", "hydra/job_logging=disabled", "~hydra.job"])
def test_hydra_settings_are_refused_not_ignored(tmp_path, capsys, override):
    assert main(["eval", *eval_args(tmp_path / "run", override)]) == 2
    one_line_error(capsys, override, "hydra settings are not used")
    assert not (tmp_path / "run").exists()


# -- run_lockstep and ChatEpisode misuse through the Python API ------------------------------


def _episode(env: gymnasium.Env, seed: int) -> ChatEpisode:
    return ChatEpisode(env, ChatConfig(), env_id="RAGEN/Sokoban-6x6-v0", seed=seed)


def test_two_episodes_on_one_env_are_refused_before_any_step():
    # The second reset used to replace the first episode's level, and the first then
    # played (and was scored) on it; only an episode ending early raised, mid-batch.
    env = gymnasium.make("RAGEN/Sokoban-6x6-v0")
    shared = [_episode(env, 1), _episode(env, 2)]
    with pytest.raises(ValueError, match="an env of its own"):
        run_lockstep(shared, make_agent("optimal"))
    assert not any(episode.started for episode in shared)
    repeated = _episode(gymnasium.make("RAGEN/Sokoban-6x6-v0"), 1)
    with pytest.raises(ValueError, match="each episode must appear once"):
        run_lockstep([repeated, repeated], make_agent("optimal"))


@pytest.mark.parametrize("agent", [None, object(), "optimal"])
def test_run_lockstep_refuses_what_is_not_an_agent(agent):
    with pytest.raises(AgentError, match="needs an agent"):
        run_lockstep([_episode(gymnasium.make("RAGEN/Sokoban-6x6-v0"), 1)], agent)


@pytest.mark.parametrize("sample", [-1, 1.5, "0", True])
def test_an_episode_sample_is_a_non_negative_int(sample):
    # Such samples reached the trajectory record, which a resume then refuses.
    with pytest.raises(ValueError, match="sample must be a non-negative int"):
        ChatEpisode(gymnasium.make("RAGEN/Sokoban-6x6-v0"), ChatConfig(), env_id="x", seed=1, sample=sample)


@pytest.mark.parametrize("separator", ["<answer>", "</answer>", "<think>", " </think> "])
def test_a_separator_holding_a_chat_tag_is_refused(separator):
    with pytest.raises(ValueError, match="must not contain a chat tag"):
        ChatConfig(action_separator=separator)


# -- text spaces in flattening and vector envs ------------------------------------------------


@given(st.text(st.characters(blacklist_categories=()), max_size=50))
def test_any_text_flattens_and_unflattens_every_str(text):
    # Text's own flatten maps characters to charset indices: KeyError outside the charset.
    space = AnyText(min_length=0, max_length=50, charset="0123456789")
    assert gymnasium.spaces.utils.unflatten(space, gymnasium.spaces.utils.flatten(space, text)) == text


@pytest.mark.parametrize("env_id", ["RAGEN/MathQA-v0", "RAGEN/Sokoban-6x6-v0", "RAGEN/Countdown-v0"])
def test_async_vector_envs_refuse_shared_memory_and_match_sync_without_it(env_id):
    # Gymnasium reads str observations from shared memory once, at construction: every
    # observation after was that snapshot (Sokoban: a board of newlines), and MathQA's
    # letters outside its sampling charset raised a bare KeyError('E').
    with pytest.raises(ValueError, match="shared_memory': False"):
        gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="async")
    sync = gymnasium.make_vec(env_id, num_envs=2, vectorization_mode="sync")
    parallel = gymnasium.make_vec(
        env_id, num_envs=2, vectorization_mode="async", vector_kwargs={"shared_memory": False}
    )
    try:
        for seed in (3, 4):
            assert tuple(parallel.reset(seed=seed)[0]) == tuple(sync.reset(seed=seed)[0])
        actions = tuple(env.unwrapped.optimal_action() for env in sync.envs)
        expected, observed = sync.step(actions), parallel.step(actions)
        assert tuple(observed[0]) == tuple(expected[0]) and list(observed[1]) == list(expected[1])
    finally:
        sync.close()
        parallel.close()


# -- a misspelt key -----------------------------------------------------------------------------


@pytest.mark.parametrize(("override", "message"), [
    ("limt=2", "unknown key 'limt'; did you mean limit or split? `ragen-bench eval --help` shows all"),
    ("chat.max_turn=2", "unknown key 'chat.max_turn'; did you mean chat.max_turns, "),
    ("zzzz=1", "unknown key 'zzzz'; `ragen-bench eval --help` shows all"),
])
def test_a_misspelt_key_names_the_closest_keys_instead_of_advising_a_plus(tmp_path, capsys, override, message):
    # Hydra's own advice ("use +limt=2") led to a second refusal.
    assert main(["eval", *eval_args(tmp_path / "run", override)]) == 2
    assert "+" not in one_line_error(capsys, message)
    assert not (tmp_path / "run").exists()


def test_an_agent_setting_its_yaml_does_not_list_still_takes_a_plus(tmp_path, capsys):
    assert main(["eval", *eval_args(tmp_path / "run", "agent.model=x")]) == 2
    one_line_error(capsys, "Could not override 'agent.model'", "+agent.model=x")
