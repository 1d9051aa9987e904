"""The eval harness end to end: planning, lock-step batching, run-dir contents, CLI."""

from __future__ import annotations

import importlib
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from ragen_bench import panels
from ragen_bench.agents import AGENT_FACTORIES
from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.chat import AgentReply, AgentRequest, ChatConfig
from ragen_bench.cli import main
from ragen_bench.data import configs_root
from ragen_bench.eval import provenance, run_eval
from ragen_bench.eval import rundir
from ragen_bench.eval.compose import compose_config
from ragen_bench.eval.report import comparability_notes, format_table
from ragen_bench.eval.rundir import RunDirError
from ragen_bench.eval.config import ConfigError, default_out, eval_targets, load

from .conftest import REPO_ROOT, run_python

ENV = "RAGEN/Sokoban-6x6-v0"
HERE = "tests.test_eval_harness"


class RecordingAgent:
    """The optimal agent, remembering the size of every batched call (test only)."""

    name = "recording"
    needs_live_env = True  # it wraps the optimal agent, which reads the live env
    calls: list[list[str]] = []

    def __init__(self, **settings):
        self.settings = settings
        self.inner = OptimalAgent()

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        RecordingAgent.calls.append([request.episode_key for request in requests])
        return self.inner.act(requests)

    def close(self) -> None:
        pass


def make_recording_agent(**settings):
    return RecordingAgent(**settings)


def config(out: Path, *overrides: str) -> dict:
    return compose_config("eval", [f"env={ENV}", "limit=4", f"out={out}", "progress=false", *overrides])


def lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / rundir.EPISODES).read_text(encoding="utf-8").splitlines()]


def test_optimal_run_writes_a_complete_run_directory(tmp_path):
    result = run_eval(config(tmp_path, "samples=2"))
    assert result.complete and result.new_episodes == 8
    panel = panels.load(ENV, "test")
    records = lines(tmp_path)
    expected_keys = {(ENV, "test", seed, sample) for seed in panel.seeds[:4] for sample in range(2)}
    assert sorted(map(rundir.slot_of, records)) == sorted(expected_keys)

    template_hash = ChatConfig().template_hash()
    assert {record["template_hash"] for record in records} == {template_hash}
    assert all(record["messages"][0]["role"] == "system" and record["turns"] for record in records)

    manifest = rundir.read_json(tmp_path / rundir.MANIFEST)
    assert manifest["panels"] == {f"{ENV}:test": panel.checksum}
    assert manifest["envs"][0]["version"] == "v0"
    assert manifest["template_hash"] == template_hash
    assert manifest["complete"] and manifest["expected_episodes"] == 8
    assert manifest["started_at"] <= manifest["finished_at"]
    assert "out" not in manifest["config"] and manifest["config"]["samples"] == 2

    (group,) = rundir.read_json(tmp_path / rundir.SUMMARY)["groups"]
    assert group["episodes"] == 8 and group["instances"] == 4
    assert group["success_rate"] == 1.0 and group["pass@2"] == 1.0
    assert group["efficiency"] == 1.0  # the optimal agent takes shortest solutions


def test_random_agent_fails_sometimes_and_metrics_follow_the_records(tmp_path):
    run_eval(config(tmp_path, "agent=random", "limit=16"))
    records = lines(tmp_path)
    (group,) = rundir.read_json(tmp_path / rundir.SUMMARY)["groups"]
    successes = sum(record["success"] for record in records)
    assert 0 <= successes < len(records) == 16
    assert group["success_rate"] == successes / 16
    assert group["mean_actions"] == sum(r["num_actions"] for r in records) / 16


def test_lockstep_batches_never_exceed_lockstep_episodes_and_shrink_as_episodes_finish(tmp_path):
    RecordingAgent.calls = []
    run_eval(config(tmp_path, f"agent.name={HERE}:make_recording_agent", "lockstep_episodes=3", "limit=7",
                            "chat.max_actions_per_turn=1"))
    sizes = [len(call) for call in RecordingAgent.calls]
    assert max(sizes) == 3
    # Batches of 3, 3, 1 episodes; one action per turn means several turns per batch
    # whose live sets only ever shrink within a batch.
    first_batch_keys = set(RecordingAgent.calls[0])
    assert len(first_batch_keys) == 3
    assert all(len(set(call)) == len(call) for call in RecordingAgent.calls)
    assert sum(1 for call in RecordingAgent.calls if set(call) <= first_batch_keys) >= 2
    assert len({key for call in RecordingAgent.calls for key in call}) == 7


class CutOffAgent:
    """Every second turn's reply ends at the token limit (finish_reason "length"), test only."""

    name = "cut-off"

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        return [AgentReply("<think>hmm</think><answer>Up</answer>", finish_reason="length" if r.turn % 2 == 0 else "stop")
                for r in requests]

    def close(self) -> None:
        pass


def make_cut_off_agent(**_settings):
    return CutOffAgent()


@pytest.mark.usefixtures("wide_terminal")
def test_truncated_replies_are_counted_and_shown_by_compare(tmp_path, capsys):
    args = ["eval", f"env={ENV}", "limit=3", "progress=false", f"out={tmp_path}", f"agent.name={HERE}:make_cut_off_agent"]
    assert main(args) == 0
    records = lines(tmp_path)
    # Turns 2 and 4 of each episode were cut off (an Up-only episode may end early, on
    # the action budget or a solved level, so the turn count comes from the records).
    expected = sum(t["finish_reason"] == "length" for r in records for t in r["turns"])
    turns = sum(r["num_turns"] for r in records)
    assert expected == sum(r["num_turns"] // 2 for r in records) > 0
    (group,) = rundir.read_json(tmp_path / rundir.SUMMARY)["groups"]
    assert group["truncated_replies"] == expected and group["truncated_reply_rate"] == expected / turns
    capsys.readouterr()
    assert main(["compare", str(tmp_path)]) == 0
    header, row = capsys.readouterr().out.splitlines()[:2]
    end = header.index("truncated") + len("truncated")  # numbers are right-aligned under their title
    assert row[:end].split()[-1] == f"{expected / turns:.3f}"


def test_rerunning_a_finished_run_adds_nothing(tmp_path):
    run_eval(config(tmp_path))
    before = (tmp_path / rundir.EPISODES).read_bytes()
    summary = (tmp_path / rundir.SUMMARY).read_bytes()
    result = run_eval(config(tmp_path))
    assert result.new_episodes == 0 and result.complete
    assert (tmp_path / rundir.EPISODES).read_bytes() == before
    assert (tmp_path / rundir.SUMMARY).read_bytes() == summary
    assert rundir.read_json(tmp_path / rundir.MANIFEST)["sessions"] == 2


def test_larger_limit_on_the_same_dir_is_refused_naming_the_key(tmp_path):
    run_eval(config(tmp_path))
    with pytest.raises(RunDirError, match=r"config\.limit is 4 there but 8 now"):
        run_eval(config(tmp_path, "limit=8"))
    with pytest.raises(RunDirError, match=r"config\.chat\.max_turns"):
        run_eval(config(tmp_path, "chat.max_turns=3"))
    with pytest.raises(RunDirError, match=r"config\.env_kwargs\.vocabulary"):
        run_eval(config(tmp_path, "+env_kwargs.vocabulary=alt"))


def test_episodes_without_a_manifest_are_not_adopted(tmp_path):
    run_eval(config(tmp_path))
    (tmp_path / rundir.MANIFEST).unlink()
    with pytest.raises(RunDirError, match="no manifest.json"):
        run_eval(config(tmp_path))


def test_api_keys_never_reach_the_run_directory(tmp_path):
    secret = "sk-test-0123456789"
    run_eval(config(tmp_path, f"agent.name={HERE}:make_recording_agent", f"+agent.api_key={secret}"))
    manifest = rundir.read_json(tmp_path / rundir.MANIFEST)
    assert manifest["config"]["agent"]["api_key"] == provenance.REDACTED
    for path in tmp_path.iterdir():
        assert secret not in path.read_text(encoding="utf-8")


def test_git_state_names_this_checkout_only(tmp_path):
    state = provenance.git_state(Path(provenance.__file__).resolve().parents[2])
    if state is not None:  # a checkout with at least one commit
        assert len(state["commit"]) == 40 and isinstance(state["dirty"], bool)
    nested = Path(provenance.__file__).resolve().parent  # inside the checkout, not its top
    assert provenance.git_state(nested) is None
    assert provenance.git_state(tmp_path) is None


def test_redact_keeps_token_budgets_and_hides_secrets():
    settings = {"api_key": "x", "token": "y", "max_new_tokens": 64, "model": "m", "openai_secret": "z"}
    assert provenance.redact(settings) == {
        "api_key": provenance.REDACTED, "token": provenance.REDACTED, "max_new_tokens": 64, "model": "m",
        "openai_secret": provenance.REDACTED,
    }


def test_a_locked_run_directory_is_refused(tmp_path):
    with rundir.locked(tmp_path):
        with pytest.raises(RunDirError, match="in use"):
            run_eval(config(tmp_path))


def test_two_processes_on_one_run_directory_give_one_consistent_run(tmp_path):
    # Two real `ragen-bench eval` processes started together on one out=: the slow agent
    # keeps each busy for seconds, so the second usually finds the lock held and exits
    # 2; if it starts only after the first finished, it resumes and adds nothing.
    out = tmp_path / "run"
    command = [sys.executable, "-m", "ragen_bench.cli", "eval", f"env={ENV}", "limit=12", "samples=2",
               "lockstep_episodes=4", "agent=random", "agent.name=tests.test_eval_resume:make_slow_random_agent",
               "+agent.delay=0.03", "progress=false", f"out={out}"]
    processes = [subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                 for _ in range(2)]
    results = [(p.wait(timeout=300), *p.communicate()) for p in processes]
    codes = sorted(code for code, _, _ in results)
    assert codes in ([0, 0], [0, 2]), results
    for code, stdout, stderr in results:
        if code == 2:
            assert "is in use by another ragen-bench process" in stderr and stderr.count("\n") == 1
        else:
            assert "run complete" in stdout
    records = rundir.read_episodes(out / rundir.EPISODES)
    slots = [rundir.slot_of(record) for record in records]
    assert len(slots) == len(set(slots)) == 24  # every planned episode exactly once
    manifest = rundir.read_json(out / rundir.MANIFEST)
    assert manifest["complete"] and manifest["sessions"] == codes.count(0)


def test_model_agent_token_counts_reach_the_summary(tmp_path):
    pytest.importorskip("transformers")
    run_eval(config(tmp_path, "agent=hf", "agent.model=tiny", "agent.max_new_tokens=8", "limit=2",
                            "agent.temperature=1.0", "samples=2"))
    records = lines(tmp_path)
    per_episode = [sum(t["prompt_tokens"] + t["completion_tokens"] for t in r["turns"]) for r in records]
    assert all(n > 0 for n in per_episode)
    (group,) = rundir.read_json(tmp_path / rundir.SUMMARY)["groups"]
    assert group["tokens_per_episode"] == pytest.approx(sum(per_episode) / len(per_episode))
    assert {"pass@1", "pass@2"} <= set(group)
    manifest = rundir.read_json(tmp_path / rundir.MANIFEST)
    assert manifest["config"]["agent"]["model"] == "tiny" and "torch" in manifest["packages"]


def test_scripted_eval_does_not_import_torch():
    out = run_python(
        "import sys, tempfile\n"
        "from ragen_bench.eval import compose_config, run_eval\n"
        f"cfg = compose_config('eval', ['env={ENV}', 'limit=2', 'progress=false', 'out=' + tempfile.mkdtemp()])\n"
        "run_eval(cfg)\n"
        "print('torch' in sys.modules, 'transformers' in sys.modules)\n"
    )
    assert out.split() == ["False", "False"]


# ---------------------------------------------------------------- configuration


def test_chat_defaults_in_eval_yaml_match_chat_config():
    assert compose_config("eval", [])["chat"] == ChatConfig().to_dict()


def test_every_agent_config_fits_its_factory_signature():
    names = sorted(p.name.removesuffix(".yaml") for p in (configs_root() / "agent").iterdir() if p.name.endswith(".yaml"))
    assert {"optimal", "random", "hf", "openai", "vllm"} <= set(names)
    for name in names:
        cfg = compose_config("eval", [f"agent={name}", "agent.model=some/dir"] if name == "openai" else [f"agent={name}"])
        settings = dict(cfg["agent"])
        assert settings.pop("name") == name
        module_name, factory_name = AGENT_FACTORIES[name].split(":")
        factory = getattr(importlib.import_module(module_name), factory_name)
        inspect.signature(factory).bind(**settings)  # raises TypeError on an unknown setting


def test_hydra_override_examples_from_the_docs():
    cfg = compose_config(
        "eval",
        ["env=RAGEN/Sokoban-6x6-v0", "split=test", "agent=hf", "agent.model=smollm2-135m", "agent.temperature=0.7",
         "samples=4", "limit=32", "shard=1/4", "out=runs/x"],
    )
    assert cfg["env"] == "RAGEN/Sokoban-6x6-v0" and cfg["shard"] == "1/4" and cfg["samples"] == 4
    agent = cfg["agent"]
    assert (agent["name"], agent["model"], agent["temperature"]) == ("hf", "smollm2-135m", 0.7)
    assert agent["sampling_seed"] == cfg["sampling_seed"] == 0  # the eval key reaches the agent
    run = load(cfg)
    assert run.targets == (("RAGEN/Sokoban-6x6-v0", "test"),) and run.shard == (1, 4)
    assert (run.samples, run.limit, run.out, run.agent) == (4, 32, Path("runs/x"), agent)


def test_eval_targets_need_exactly_one_of_env_and_suite():
    with pytest.raises(ConfigError, match="exactly one"):
        eval_targets({"env": None, "suite": None, "split": "test"})
    with pytest.raises(ConfigError, match="exactly one"):
        eval_targets({"env": ENV, "suite": "ragen-generalization-v0", "split": "test"})
    assert eval_targets({"env": ENV, "suite": None, "split": "val"}) == [(ENV, "val")]


def test_suite_targets_are_its_eval_panels_once_each():
    from ragen_bench import suites

    suite = suites.get("ragen-generalization-v0")
    expected = list(dict.fromkeys((p.env_id, p.split) for t in suite.tracks for p in t.evaluate))
    assert eval_targets({"env": None, "suite": suite.name, "split": None}) == expected
    assert (ENV, "test") in expected and all(split == "test" for _, split in expected)
    assert eval_targets({"env": None, "suite": suite.name, "split": "test"}) == expected
    with pytest.raises(ConfigError, match="no eval pairs with split 'val'"):
        eval_targets({"env": None, "suite": suite.name, "split": "val"})


def test_suite_run_covers_every_panel_of_the_suite(tmp_path):
    run_eval(compose_config("eval", ["suite=ragen-sokoban-generalization-v0", "limit=2", "progress=false",
                                     f"out={tmp_path}"]))
    summary = rundir.read_json(tmp_path / rundir.SUMMARY)
    targets = eval_targets({"env": None, "suite": "ragen-sokoban-generalization-v0", "split": "test"})
    assert sorted((g["env_id"], g["split"]) for g in summary["groups"]) == sorted(targets)
    assert all(g["episodes"] == 2 for g in summary["groups"])
    assert set(summary["panels"]) == {f"{e}:{s}" for e, s in targets}


def test_default_out_is_deterministic_and_path_safe():
    cfg = {"agent": {"name": "hf"}, "env": "RAGEN/Sokoban-6x6-v0", "suite": None, "split": "test"}
    assert default_out(cfg) == Path("runs/hf-RAGEN_Sokoban-6x6-v0-test")


def test_the_chat_settings_are_checked_once_per_run(tmp_path, chat_checks):
    result = run_eval(config(tmp_path))
    assert result.new_episodes == 4 and len(chat_checks) == 1


# A key a test removes from the config.
DROP = object()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"nonsense": 1}, "unknown key 'nonsense'; eval keys: env, suite, split, samples, sampling_seed, limit, shard, "
                          "lockstep_episodes, env_kwargs, out, progress, chat, agent, budget, opponent, game, "
                          "launcher, workers, ray"),
        ({"samples": DROP}, "missing key 'samples'"),
        ({"samples": 0}, "samples must be an integer in 1..10000, got 0"),
        ({"limit": "2"}, "limit must be an integer >= 1 or null, got '2'"),
        ({"shard": "1 of 4"}, "shard must look like 'i/n' (e.g. 0/4), got '1 of 4'"),
        ({"workers": 2}, "workers=2 needs launcher=ray (launcher=local plays in this one process)"),
        ({"out": " "}, "out must be a directory path or null, got ' '"),
        ({"progress": "yes"}, "progress must be true or false, got 'yes'"),
        ({"agent": {"name": 3}}, "agent.name must be an agent name or 'module:factory', got 3"),
        ({"chat": {"max_turns": "3"}}, "chat.max_turns must be int, got '3'"),
        ({"env_kwargs": {"data_path": "nope.jsonl"}},
         "env_kwargs.data_path must name an existing file, got 'nope.jsonl'"),
        ({"split": "nosuch"}, f"split: {ENV} has no 'nosuch' panel; splits: ['train', 'val', 'test']"),
        ({"opponent": "minimax"}, "opponent: only multi-agent games (e.g. RAGEN/TicTacToe-v0) take opponent="),
        ({"budget": "some"}, "budget must be one of env, none or a mapping of env id to chat settings, got 'some'"),
        ({"budget": {"RAGEN/Bandit-v0": {"max_turns": 1}}},
         f"budget.RAGEN/Bandit-v0: not a single-agent env of this run ({ENV})"),
        ({"budget": {ENV: {"think": False}}},
         f"budget.{ENV}.think: not a budget setting; budget settings: max_turns, max_actions_per_turn, "
         "max_actions_per_episode, history_window, max_response_chars"),
        ({"budget": {ENV: {"max_turns": 0}}}, f"budget.{ENV}.max_turns must be an integer >= 1, got 0"),
        # Two mistakes: the first in load's order is the one named.
        ({"samples": 0, "env": "RAGEN/Nope-v0"}, "samples must be an integer in 1..10000, got 0"),
    ],
)
def test_load_refuses_a_bad_setting_naming_its_key(tmp_path, change, message):
    cfg = {key: value for key, value in {**config(tmp_path), **change}.items() if value is not DROP}
    with pytest.raises(ConfigError) as refused:
        load(cfg)
    assert str(refused.value) == message


def test_load_derives_what_a_run_reads_once_and_freezes_it(tmp_path):
    run = load(config(tmp_path, "launcher=ray", "workers=3", "ray.gpus_per_worker=0.5"))
    assert (run.launcher, run.workers, run.ray_address, run.gpus_per_worker) == ("ray", 3, None, 0.5)
    assert run.game is None and run.opponent is None and run.opponent_agent is None
    assert run.template_hash == run.chat.template_hash() and run.out == tmp_path
    # The identity leaves out the free keys, for a single-agent env the game keys, and an empty budget
    # (Sokoban-6x6's declared budget is the chat defaults), as runs recorded before budgets lack it.
    assert run.mapping["budget"] == {} and run.budget == {} and run.chats == {}
    assert sorted(run.identity) == sorted(set(run.mapping) - {"out", "progress", "launcher", "workers", "ray",
                                                              "opponent", "game", "budget"})
    with pytest.raises(AttributeError):
        run.samples = 2  # type: ignore[misc]


# ---------------------------------------------------------------- the command line


def test_cli_eval_prints_a_table_and_leaves_cwd_clean(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["eval", f"env={ENV}", "limit=2", "progress=false"]) == 0
    out = capsys.readouterr().out
    assert "success" in out and ENV in out and "2 new episodes; run complete" in out
    # Hydra's compose API: no outputs/ or .hydra/ folders, cwd unchanged.
    assert os.getcwd() == str(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["runs"]
    assert (tmp_path / "runs" / "optimal-RAGEN_Sokoban-6x6-v0-test" / rundir.SUMMARY).exists()


@pytest.mark.parametrize(
    "overrides, message",
    [
        ([f"env={ENV}", "shard=4/4"], "shard index"),
        ([f"env={ENV}", "samples=0"], "samples must be"),
        ([f"env={ENV}", "nonsense=1"], "nonsense"),
        (["env=RAGEN/Nope-v0"], "unknown env id"),
        ([f"env={ENV}", "split=nosuch"], "no 'nosuch' panel"),
        (["suite=nosuch"], "unknown suite 'nosuch'"),
        ([], "exactly one of env=<id> or suite=<name>"),
    ],
)
def test_cli_usage_errors_are_one_clean_line(tmp_path, capsys, overrides, message):
    assert main(["eval", f"out={tmp_path}", "progress=false", *overrides]) == 2
    err = capsys.readouterr().err
    assert err.startswith("ragen-bench eval: error:") and message in err
    assert "Traceback" not in err


def test_cli_refuses_a_differently_configured_rerun(tmp_path, capsys):
    assert main(["eval", f"env={ENV}", "limit=1", f"out={tmp_path}", "progress=false"]) == 0
    assert main(["eval", f"env={ENV}", "limit=2", f"out={tmp_path}", "progress=false"]) == 2
    assert "config.limit is 1 there but 2 now" in capsys.readouterr().err


@pytest.mark.usefixtures("wide_terminal")
def test_cli_compare_puts_runs_side_by_side(tmp_path, capsys):
    for agent in ("optimal", "random"):
        assert main(["eval", f"env={ENV}", "limit=3", f"agent={agent}", f"out={tmp_path / agent}", "progress=false"]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "optimal"), str(tmp_path / "random")]) == 0
    table, legend = capsys.readouterr().out.split("\n\n")
    lines = table.splitlines()
    assert lines[0].split()[:5] == ["run", "env", "split", "budget", "episodes"]
    assert [line.split()[0] for line in lines[1:]] == ["optimal", "random"]
    # Both played Sokoban-6x6 under its budget (the chat defaults), which the legend explains.
    assert [line.split()[3] for line in lines[1:]] == ["5/5/10", "5/5/10"]
    assert legend.startswith("budget = turns/actions per reply/actions per episode")


def test_format_table_aligns_columns_and_marks_missing_values():
    table = format_table([{"run": "optimal", "success": 1.0, "episodes": 64},
                          {"run": "hf(x)", "success": None, "episodes": 2, "extra": "y"}])
    assert table.splitlines() == [
        "run      success  episodes  extra",
        "optimal    1.000        64  -",
        "hf(x)          -         2  y",
    ]
    assert format_table([]) == "(no episodes)"


def test_compare_notes_runs_that_were_not_measured_alike():
    base = {"template_hash": "t1", "panels": {"E:test": "c1"}}
    assert comparability_notes({"a": base, "b": dict(base)}) == []
    other = {"template_hash": "t2", "panels": {"E:test": "c2"}, "data_files": {"data_path": "0123456789abcdef"}}
    notes = comparability_notes({"a": base, "b": other, "c": dict(base)})
    assert notes == ["runs used 2 different chat templates/settings (template_hash a, c: t1; b: t2)",
                     "runs used different env data files (env_kwargs: a, c: none; b: data_path=0123456789ab)",
                     "E:test: runs used different panels (checksum a, c: c1; b: c2)"]


def test_cli_compare_flags_different_chat_settings(tmp_path, capsys):
    for name, extra in (("a", []), ("b", ["chat.max_turns=3"])):
        assert main(["eval", f"env={ENV}", "limit=2", f"out={tmp_path / name}", "progress=false", *extra]) == 0
    capsys.readouterr()
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    out = capsys.readouterr().out
    hashes = [json.loads((tmp_path / name / "summary.json").read_text())["template_hash"][:12] for name in "ab"]
    assert f"note: runs used 2 different chat templates/settings (template_hash {tmp_path / 'a'}: {hashes[0]}; " in out


def test_cli_envs_list_show_and_verify(capsys):
    assert main(["envs", "list"]) == 0
    assert ENV in capsys.readouterr().out
    assert main(["envs", "show", ENV]) == 0
    shown = capsys.readouterr().out
    assert "Up, Down, Left, Right" in shown and "panel test: 256 seeds" in shown
    assert main(["envs", "verify", ENV]) == 0
    assert capsys.readouterr().out.count("ok ") == len(panels.available(ENV))


def test_cli_envs_verify_reports_a_drifted_panel(tmp_path, monkeypatch, capsys):
    panel = panels.load(ENV, "test")
    drifted = panels.Panel(ENV, "test", panel.seeds[:2], ("0" * 64, panel.obs_sha256[1]))
    data = drifted.to_json()
    target = tmp_path / panels.family(ENV) / "panels" / ENV.split("/")[1] / "test.json"
    target.parent.mkdir(parents=True)
    target.write_text(json.dumps(data), encoding="utf-8")
    monkeypatch.setenv("RAGEN_BENCH_DATA_DIR", str(tmp_path))
    assert main(["envs", "verify", ENV]) == 1
    assert "FAIL RAGEN/Sokoban-6x6-v0 test" in capsys.readouterr().out


def test_a_table_wider_than_the_terminal_is_split_into_tables_that_repeat_the_key_columns(tmp_path, monkeypatch, capsys):
    rows = [{"run": "optimal", "env": ENV, "split": "test", "episodes": 64, "success": 1.0, "ci95": "[0.9, 1.0]",
             "return": 10.5, "turns": 2.0, "valid": 1.0}, {"run": "random", "env": ENV, "split": "test",
             "episodes": 64, "success": 0.25, "ci95": "[0.1, 0.4]", "return": -2.0, "turns": 5.0, "valid": 0.5}]
    whole = format_table(rows)
    assert format_table(rows, width=len(whole.splitlines()[0])) == whole  # it fits: one table
    blocks = format_table(rows, width=60).split("\n\n")
    assert len(blocks) > 1
    for block in blocks:
        header, *lines = block.splitlines()
        assert header.split()[:3] == ["run", "env", "split"] and len(lines) == 2
        assert all(len(line) <= 60 for line in block.splitlines())
        assert [line.split()[0] for line in lines] == ["optimal", "random"]
    # Every column once, besides the repeated ones, in the original order.
    titles = [title for block in blocks for title in block.splitlines()[0].split()[3:]]
    assert titles == ["episodes", "success", "ci95", "return", "turns", "valid"]
    # The CLI cuts at the terminal's width.
    assert main(["eval", f"env={ENV}", "limit=1", "progress=false", f"out={tmp_path}"]) == 0
    capsys.readouterr()
    monkeypatch.setenv("COLUMNS", "90")
    assert main(["compare", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert out.count("run ") > 1 and max(len(line) for line in out.splitlines() if not line.startswith("note")) <= 90


def test_the_progress_bar_moves_per_turn_and_ends_at_the_episode_count(tmp_path, monkeypatch):
    # One lock-step group of 4: every episode ends at once, so a bar per episode would sit at
    # 0 until the group ends; per turn, it moves on each batched turn.
    from ragen_bench.eval import run as run_module

    seen: list[float] = []
    show = run_module.Progress._show

    def record(self):
        show(self)
        seen.append(self.shown)

    monkeypatch.setattr(run_module.Progress, "_show", record)
    result = run_eval(config(tmp_path, "lockstep_episodes=4", "agent=random"))
    records = lines(tmp_path)
    turns = max(r["num_turns"] for r in records)
    max_turns = ChatConfig().max_turns
    # One step per batched turn, then one per finished episode; never backwards.
    assert len(seen) == turns + result.new_episodes == turns + 4
    assert seen == sorted(seen) and seen[-1] == 4.0
    assert seen[0] == pytest.approx(4 / max_turns)  # the first turn: 4 episodes x 1/5 of one
