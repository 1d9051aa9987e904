"""The scripted OpenAI-compatible endpoint (ragen_bench.integrations.scripted_server) over HTTP.

Its use by verifiers is tested in tests_verifiers/ (own virtualenv); here, in the main one: a
reply is the scripted agent's reply at that point of eval's episode, and every request it
cannot answer gets a 400 with a one-line reason.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import urllib.error
import urllib.request

import gymnasium
import pytest

from ragen_bench.agents.scripted import OptimalAgent
from ragen_bench.chat import ChatEpisode
from ragen_bench.integrations.scripted_server import EPISODE_HEADER, ScriptedEndpoint, make_server
from ragen_bench.integrations.tasks import chat_config
from tests.conftest import REPO_ROOT

SOKOBAN = "RAGEN/Sokoban-6x6-v0"


@pytest.fixture(scope="module")
def url():
    server = make_server(ScriptedEndpoint("optimal", chat={"max_actions_per_turn": 1}))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def post(url: str, body: object, key: str | None = None, raw: bytes | None = None) -> tuple[int, dict]:
    headers = {"Content-Type": "application/json", **({EPISODE_HEADER: key} if key is not None else {})}
    request = urllib.request.Request(f"{url}/v1/chat/completions", data=raw if raw is not None else
                                     json.dumps(body).encode(), headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_each_turns_reply_is_the_optimal_agents_on_the_live_episode(url):
    config = chat_config(SOKOBAN, {"max_actions_per_turn": 1})
    episode = ChatEpisode(gymnasium.make(SOKOBAN), config, env_id=SOKOBAN, seed=130, split="test")
    episode.reset()
    agent = OptimalAgent(think=config.think, max_actions_per_turn=1)
    while not episode.done:
        status, body = post(url, {"model": "m", "messages": episode.messages}, f"{SOKOBAN}/test/130/0")
        assert status == 200, body
        (expected,) = agent.act([episode.request(live_env=True)])
        assert body["choices"][0]["message"]["content"] == expected.text
        episode.step(expected)
    assert episode.trajectory().success and episode.trajectory().num_turns > 1


@pytest.mark.parametrize(("key", "messages", "message"), [
    (None, None, "header is missing"),
    ("RAGEN/Sokoban-6x6-v0/test/x/0", None, "expected ENV_ID/SPLIT/SEED/SAMPLE"),
    ("RAGEN/TicTacToe-v0/test/123/0", None, "no single-agent ragen-bench id"),
    ("RAGEN/2048-v0/test/123/0", None, "shows only the last 5 turns"),
    (f"{SOKOBAN}/test/124/0", None, "not the chat layer's prompt"),  # seed 123's prompt sent as 124's
    (f"{SOKOBAN}/test/123/0", [{"role": "user", "content": "hi"}], "not the chat layer's prompt"),
    (f"{SOKOBAN}/test/123/0", [{"role": "user", "content": 3}], "string role and text content"),
    (f"{SOKOBAN}/test/123/0", [], "non-empty list"),
])
def test_requests_it_cannot_answer_get_a_400_naming_why(url, key, messages, message):
    if messages is None:
        config = chat_config(SOKOBAN, {"max_actions_per_turn": 1})
        episode = ChatEpisode(gymnasium.make(SOKOBAN), config, env_id=SOKOBAN, seed=123, split="test")
        episode.reset()
        messages = episode.messages
    status, body = post(url, {"model": "m", "messages": messages}, key)
    assert status == 400
    assert message in body["error"]["message"]


def test_bad_bodies_and_routes(url):
    assert post(url, None, f"{SOKOBAN}/test/123/0", raw=b"{not json")[0] == 400
    status, body = post(url, {"messages": [], "stream": True}, f"{SOKOBAN}/test/123/0")
    assert status == 400 and "stream" in body["error"]["message"]
    with pytest.raises(urllib.error.HTTPError) as missing:
        urllib.request.urlopen(f"{url}/v2/nothing", timeout=30)
    assert missing.value.code == 404
    with urllib.request.urlopen(f"{url}/v1/models", timeout=30) as response:
        assert json.load(response)["data"][0]["id"] == "ragen-bench-optimal"


@pytest.mark.parametrize(("args", "message"), [
    (["--chat", "[1]"], "--chat: not a JSON object"),
    (["--chat", '{"bogus": 1}'], "chat.bogus"),
    (["--port", "70000"], "--port"),
    (["--agent", "hf"], "invalid choice"),
])
def test_the_command_refuses_bad_options_in_one_line(args, message):
    run = subprocess.run([sys.executable, "-m", "ragen_bench.integrations.scripted_server", *args], cwd=REPO_ROOT,
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert message in run.stderr and "Traceback" not in run.stderr
