"""The server as OpenEnv's tools and clients see it: ``openenv validate``, the task API, the manifest,
OpenEnv's own client, the command line; and ``import ragen_bench`` loading none of it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from ragen_bench.cli import main
from ragen_bench.integrations.openenv.client import RagenClient, ServerError
from ragen_bench.integrations.openenv.server import ChatObservation, RagenEnvironment, ReplyAction, build_app
from ragen_bench.integrations.openenv.session import ServeError, served_ids
from tests_openenv.conftest import REPO_ROOT


def test_openenv_validate_passes(tight_server: str, tmp_path: Path) -> None:
    report = tmp_path / "report.json"
    # From a folder outside the checkout: --url validates the live server only.
    done = subprocess.run([str(Path(sys.executable).parent / "openenv"), "validate", "--url", tight_server,
                           "--json", "--output", str(report)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    result = json.loads(report.read_text())
    assert result["passed"] and result["summary"]["passed_count"] == result["summary"]["total_count"] == 6, result
    assert {c["id"] for c in result["criteria"]} == {"openapi_version_available", "health_endpoint", "metadata_endpoint",
                                                    "schema_endpoint", "mcp_endpoint", "mode_endpoint_consistency"}


def test_the_task_api_lists_panel_items(tight_server: str) -> None:
    with httpx.Client(base_url=tight_server) as http:
        splits = http.get("/Sokoban-6x6-v0+Bandit-v0/splits").json()
        assert [split["name"] for split in splits] == ["train", "val", "test"]
        assert http.post("/Sokoban-6x6-v0+Bandit-v0/num_tasks", json={"split": "test"}).json() == {"num_tasks": 256}
        task = http.post("/Sokoban-6x6-v0+Bandit-v0/task", json={"split": "test", "index": 17}).json()["task"]
        assert task == {"id": "RAGEN/Sokoban-6x6-v0/test/17", "env_id": "RAGEN/Sokoban-6x6-v0", "split": "test",
                        "index": 17, "seed": 140}
        tasks = http.post("/Sokoban-6x6-v0+Bandit-v0/task_range", json={"split": "val", "start": 2, "stop": 4}).json()
        assert [t["seed"] for t in tasks["tasks"]] == [1002, 1003]


def test_openenv_client_plays_a_panel_item(tight_server: str) -> None:
    with RagenClient(base_url=tight_server).sync() as client:
        first = client.reset(split="test", index=17).observation
        assert first.info["seed"] == 140 and not first.done
        result = client.step(ReplyAction(reply="<think>t</think> <answer>Left</answer>"))
        assert result.observation.info["parsed_actions"] == ["Left"] and result.reward == result.observation.reward
        state = client.state()
        assert (state.env_id, state.seed, state.split, state.index, state.turns, state.step_count) == (
            "RAGEN/Sokoban-6x6-v0", 140, "test", 17, 1, 1)
        with pytest.raises(ServerError) as refused:
            client.reset(seed=-5)
        assert refused.value.code == "EXECUTION_ERROR"
        assert str(refused.value) == "RAGEN/Sokoban-6x6-v0: seed must be in 0..4294967295, got -5"


def test_the_environment_refuses_what_is_no_reply() -> None:
    env = RagenEnvironment(served_ids("RAGEN/Bandit-v0"))
    env.reset(seed=1)
    with pytest.raises(ServeError, match=r'the action must be \{"reply"'):
        env.step(ChatObservation())
    with pytest.raises(ServeError, match="lone surrogate"):
        env.step(ReplyAction.model_construct(reply="\ud800"))


def test_a_suite_serves_its_ids() -> None:
    ids = served_ids("ragen-sokoban-generalization-v0")
    assert ids == ("RAGEN/Sokoban-6x6-v0", "RAGEN/Sokoban-8x8-v0", "RAGEN/Sokoban-6x6-AltVocab-v0",
                   "RAGEN/FrozenLake-4x4-v0")
    env = RagenEnvironment(ids)
    assert env.reset(seed=5).info["env_id"] == ids[0]
    assert env.reset(env_id="RAGEN/FrozenLake-4x4-v0", split="test", index=0).info["seed"] == 123
    with pytest.raises(ServeError, match="unknown env id or suite 'nope'"):
        served_ids("nope")
    for bad in (0, -1, True):
        with pytest.raises(ServeError, match="max_sessions must be an int >= 1"):
            build_app(["RAGEN/Bandit-v0"], max_sessions=bad)


@pytest.mark.parametrize(("args", "message"), [
    (["RAGEN/Nope-v0"], "unknown env id or suite 'RAGEN/Nope-v0'; `ragen-bench envs list` shows the ids, suites: "
                        "balrog-v0, breadth-v0, ragen-bandit-generalization-v0, ragen-generalization-v0, "
                        "ragen-sokoban-generalization-v0, ragen2-v0, textarena-v0"),
    (["RAGEN/Bandit-v0", "--port", "70000"], "port must be in 0..65535, got 70000"),
    (["RAGEN/Bandit-v0", "--idle-timeout", "-5"], "idle_timeout_s must be > 0 or None, got -5.0"),
])
def test_the_command_line_refuses_bad_settings(capsys: pytest.CaptureFixture[str], args: list[str], message: str) -> None:
    assert main(["serve", *args]) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"ragen-bench serve: error: {message}\n")


def test_the_default_bind_is_loopback(tight_server: str) -> None:
    # The kernel's table of listening TCP sockets: the server's port listens on 127.0.0.1 only.
    port = f"{int(tight_server.rsplit(':', 1)[1]):04X}"
    rows = [line.split() for line in Path("/proc/net/tcp").read_text().splitlines()[1:]]
    listening = [row[1] for row in rows if row[1].endswith(f":{port}") and row[3] == "0A"]
    assert listening == [f"0100007F:{port}"]


def test_the_manifest_is_valid_and_names_the_app() -> None:
    from openenv.validation.parsers.openenv_yaml import OpenEnvYamlParser

    manifest = OpenEnvYamlParser().parse(REPO_ROOT)
    assert manifest.name == "ragen-bench" and manifest.capabilities.task_api
    done = subprocess.run([sys.executable, "-c", "from ragen_bench.integrations.openenv.app import app; print(type(app).__name__)"],
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=120,
                          env={"RAGEN_BENCH_SERVE": "RAGEN/Bandit-v0,breadth-v0", "PATH": ""})
    assert done.stdout.strip() == "_BoundedBodies", done.stderr


def test_import_ragen_bench_loads_no_server_or_client() -> None:
    code = ("import sys, gymnasium, ragen_bench; env = gymnasium.make('RAGEN/Chat-v0', env_id='RAGEN/Bandit-v0'); "
            "env.reset(seed=1); env.step('<answer>x</answer>'); "
            "print(sorted(m for m in ('openenv', 'websockets', 'fastapi', 'gradio', 'uvicorn', 'httpx') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "[]", done.stderr


def test_a_game_is_played_against_the_default_opponent() -> None:
    env = RagenEnvironment(served_ids("RAGEN/TicTacToe-v0"))
    first = env.reset(seed=11)
    assert (first.info["seat"], first.info["opponent"]) == ("player_1", "minimax")
    assert first.info["actions_left"] == 5 and not first.done
    for _ in range(3):  # eval's game.max_retries is 2: the third bad reply forfeits
        last = env.step(ReplyAction(reply="<answer>Z9</answer>"))
    assert last.terminated and not last.truncated and last.done
    assert (last.info["outcome"], last.info["forfeit"], last.info["success"]) == ("loss", "player_1", False)
    assert last.reward == -1.0 + -0.1
