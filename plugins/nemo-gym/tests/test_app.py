"""The resources server in-process (FastAPI's TestClient): an episode is eval's, and its score is eval's.

Run in a NeMo Gym virtualenv (docs/trainers.md: nemo-gym 0.4.0 on Python 3.13.0 here).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from unittest.mock import MagicMock

import gymnasium
import pytest
from fastapi.testclient import TestClient
from nemo_gym.openai_utils import NeMoGymResponse
from nemo_gym.server_utils import ServerClient

from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.chat import ChatEpisode
from ragen_bench.integrations.tasks import chat_config
from ragen_bench_nemo_gym.app import RagenResourcesServer, RagenResourcesServerConfig, dataset_rows

REPO_ROOT = Path(__file__).resolve().parents[3]
ENV_ID = "RAGEN/Sokoban-6x6-v0"
CHAT = {"max_actions_per_turn": 1}


def client() -> TestClient:
    config = RagenResourcesServerConfig(host="127.0.0.1", port=0, entrypoint="", name="ragen")
    return TestClient(RagenResourcesServer(config=config, server_client=MagicMock(spec=ServerClient)).setup_webserver())


def verify_body(row: dict) -> dict:
    response = NeMoGymResponse(id="r", created_at=0, model="m", object="response", output=[],
                               parallel_tool_calls=False, tool_choice="none", tools=[])
    return {"responses_create_params": row["responses_create_params"], "response": response.model_dump(mode="json")}


def test_episodes_and_scores_equal_evals(tmp_path):
    out = tmp_path / "eval"
    run = subprocess.run([sys.executable, "-m", "ragen_bench.cli", "eval", f"env={ENV_ID}", "agent=optimal", "limit=3",
                          "chat.max_actions_per_turn=1", f"out={out}", "progress=false"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]
    expected = {r["seed"]: r for r in map(json.loads, (out / "episodes.jsonl").read_text().splitlines())}
    agent = OptimalAgent(think=True, max_actions_per_turn=1)
    for row in dataset_rows(ENV_ID, limit=3, chat=CHAT):
        gym = client()  # one client, one session cookie: one rollout
        seeded = gym.post("/seed_session", json=row).json()
        assert seeded["messages"] == row["responses_create_params"]["input"] == expected[row["seed"]]["messages"][:2]
        # The model's side: the optimal agent on its own copy of the episode.
        twin = ChatEpisode(gymnasium.make(ENV_ID), chat_config(ENV_ID, CHAT), env_id=ENV_ID, seed=row["seed"],
                           split="test")
        twin.reset()
        done = False
        while not done:
            (reply,) = agent.act([twin.request(live_env=True)])
            twin.step(reply)
            turn = gym.post("/step", json={"reply": reply.text}).json()
            assert turn["observation"] == twin.messages[-1]["content"]
            done = turn["done"]
        assert twin.done
        scored = gym.post("/verify", json=verify_body(row)).json()
        record = expected[row["seed"]]
        assert scored["reward"] == pytest.approx(record["total_reward"])
        assert (scored["success"], scored["num_turns"]) == (record["success"], record["num_turns"])
        assert gym.post("/step", json={"reply": "x"}).status_code == 400


def test_bad_requests_are_refused():
    gym = client()
    assert gym.post("/step", json={"reply": "<answer>Up</answer>"}).status_code == 400
    assert gym.post("/seed_session", json={"env_id": "RAGEN/TicTacToe-v0", "seed": 1}).status_code == 400
    assert gym.post("/seed_session", json={"env_id": ENV_ID, "seed": 1, "chat": {"max_turns": 0}}).status_code == 400
