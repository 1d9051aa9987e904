"""``ragen-bench serve --mcp``, through mcp's own client: in memory, over streamable HTTP and over stdio.

* the tools and their input and output schemas; every result carries ``structuredContent`` equal
  to its JSON text;
* a panel item played through the tools is ``ragen-bench eval``'s episode of it, step for step
  (seed, rewards, validity, transcript, success) on ids of five families; a game is the session
  layer's own game, step for step;
* each bad input is a tool error (``isError``) whose text names the reason, and the server goes on;
  sessions are bounded and idle ones are reaped.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Awaitable, Callable
from contextlib import AbstractAsyncContextManager

import anyio
import httpx
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from ragen_bench.eval import compose_config, run_eval
from ragen_bench.integrations.mcp_server import MAX_REQUEST_BYTES, build_server
from ragen_bench.integrations.openenv.session import ChatSession, chat_config, served_ids
from tests_openenv.conftest import REPO_ROOT, served

TOOLS = {"reset", "step", "state", "close", "list_envs"}
EVAL_IDS = ("RAGEN/Sokoban-6x6-v0", "RAGEN/Countdown-v0", "RAGEN/FrozenLake-4x4-v0", "RAGEN/RG-chain_sum-v0",
            "RAGEN/2048-v0")
UP = "<think>up</think> <answer>Up</answer>"


def run(body: Callable[[ClientSession], Awaitable[None]],
        connect: Callable[[], AbstractAsyncContextManager[ClientSession]]) -> None:
    async def main() -> None:
        async with connect() as client:
            await body(client)

    anyio.run(main)


def in_memory(*names: str, **settings: object) -> Callable[[], AbstractAsyncContextManager[ClientSession]]:
    server = build_server(names, **settings)
    return lambda: create_connected_server_and_client_session(server)


async def call(client: ClientSession, tool: str, **arguments: object) -> dict:
    """A tool's structured result; its text content is the same JSON."""
    result = await client.call_tool(tool, arguments)
    assert not result.isError, result.content[0].text
    assert result.structuredContent is not None
    assert json.loads(result.content[0].text) == result.structuredContent
    return result.structuredContent


async def refused(client: ClientSession, tool: str, **arguments: object) -> str:
    """A refused call's one-line text."""
    result = await client.call_tool(tool, arguments)
    assert result.isError and result.structuredContent is None
    text = result.content[0].text
    assert "\n" not in text and "Traceback" not in text
    return text


# -- tools and schemas ------------------------------------------------------------------


def test_tools_and_their_schemas() -> None:
    async def body(client: ClientSession) -> None:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert set(tools) == TOOLS
        reset, step = tools["reset"].inputSchema, tools["step"].inputSchema
        assert set(reset["properties"]) == {"env_id", "seed", "split", "index", "session"} and not reset.get("required")
        assert step["required"] == ["session", "action"] and step["properties"]["action"]["type"] == "string"
        assert {"session", "observation", "messages", "seed", "info"} <= set(tools["reset"].outputSchema["required"])
        assert {"observation", "reward", "done", "success", "valid"} <= set(tools["step"].outputSchema["required"])
        assert tools["step"].outputSchema["properties"]["reward"]["type"] == "number"
        assert tools["state"].annotations.readOnlyHint and not tools["step"].annotations.readOnlyHint
        listed = await call(client, "list_envs")
        assert [env["env_id"] for env in listed["envs"]] == ["RAGEN/Sokoban-6x6-v0", "RAGEN/TicTacToe-v0"]
        assert listed["envs"][0]["splits"]["test"] == 256 and listed["envs"][1]["game"]
        assert (listed["sessions_open"], listed["max_sessions"], listed["idle_timeout_s"]) == (0, 64, 600.0)

    run(body, in_memory("RAGEN/Sokoban-6x6-v0", "RAGEN/TicTacToe-v0"))


def test_a_suite_serves_its_ids() -> None:
    async def body(client: ClientSession) -> None:
        listed = await call(client, "list_envs")
        ids = [env["env_id"] for env in listed["envs"]]
        assert ids == list(served_ids("ragen-sokoban-generalization-v0")) and len(ids) == 4

    run(body, in_memory("ragen-sokoban-generalization-v0"))


# -- episodes ---------------------------------------------------------------------------


def eval_records(env_id: str, out) -> list[dict]:
    """``ragen-bench eval`` of the optimal agent on the first two test items, with the served chat budget."""
    budget = [f"chat.{key}={value}" for key, value in chat_config(env_id).to_dict().items()
              if key in ("max_turns", "max_actions_per_turn", "max_actions_per_episode")]
    run_eval(compose_config("eval", [f"env={env_id}", "agent=optimal", "limit=2", f"out={out}", "progress=false",
                                     *budget]))
    return [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]


@pytest.mark.parametrize("env_id", EVAL_IDS)
def test_an_episode_is_evals_step_for_step(tmp_path, env_id: str) -> None:
    records = eval_records(env_id, tmp_path / "run")

    async def body(client: ClientSession) -> None:
        for index, record in enumerate(records):
            started = await call(client, "reset", split="test", index=index)
            assert (started["env_id"], started["seed"], started["split"], started["index"]) == (
                env_id, record["seed"], "test", index)
            opening = record["messages"][:len(started["messages"])]
            assert started["messages"] == opening and started["observation"] == opening[-1]["content"]
            total = 0.0
            for turn in record["turns"]:
                played = await call(client, "step", session=started["session"], action=turn["raw_response"])
                assert played["reward"] == sum(turn["env_rewards"]) + turn["format_penalty"]
                assert played["valid"] == turn["valid"]
                total += played["reward"]
            assert (total, played["success"], played["terminated"], played["truncated"], played["done"]) == (
                record["total_reward"], record["success"], record["terminated"], record["truncated"], True)
            state = await call(client, "state", session=started["session"])
            assert state["messages"] == record["messages"] and state["done"] and state["turns"] == len(record["turns"])
            assert played["observation"] == record["messages"][-1]["content"]
            await call(client, "close", session=started["session"])

    run(body, in_memory(env_id))


def test_a_game_is_the_session_layers_game() -> None:
    env_id = "RAGEN/TicTacToe-v0"
    local = ChatSession((env_id,))

    async def body(client: ClientSession) -> None:
        started = await call(client, "reset", seed=11)
        expected = local.reset(seed=11)
        assert started["messages"] == expected.messages and started["info"] == expected.info
        done = False
        while not done:
            game, seat = local._match.game, local._seat
            reply = f"<think>first legal move</think> <answer>{game.action_names[game.legal_moves(seat)[0]]}</answer>"
            played, expected = await call(client, "step", session=started["session"], action=reply), local.step(reply)
            assert (played["observation"], played["reward"], played["done"], played["info"]) == (
                expected.messages[-1]["content"], expected.reward, expected.done, expected.info)
            done = played["done"]
        assert played["info"]["outcome"] in ("win", "draw", "loss") and played["success"] == (
            played["info"]["outcome"] == "win")

    run(body, in_memory(env_id))


# -- bad input --------------------------------------------------------------------------


def test_each_bad_input_is_a_tool_error_and_the_server_goes_on() -> None:
    async def body(client: ClientSession) -> None:
        sid = (await call(client, "reset", seed=5))["session"]
        cases = [
            (("step", {"session": "nope", "action": UP}), "step: unknown session 'nope': reset opens one"),
            (("step", {"session": "x" * 1000, "action": UP}), "unknown session '" + "x" * 40 + "...'"),
            (("reset", {"seed": -1}), "reset: RAGEN/Sokoban-6x6-v0: seed must be in 0..4294967295, got -1"),
            (("reset", {"seed": 2**32}), "seed must be in 0..4294967295"),
            (("reset", {"seed": "5"}), "reset: bad arguments: seed: Input should be a valid integer"),
            (("reset", {"seed": True}), "reset: bad arguments: seed: Input should be a valid integer"),
            (("reset", {}), "reset takes either seed=N or split=NAME with index=K"),
            (("reset", {"seed": 1, "split": "test", "index": 0}), "reset takes either seed=N or split=NAME"),
            (("reset", {"split": "test"}), "a panel item needs both split and index"),
            (("reset", {"split": "dev", "index": 0}), "split: RAGEN/Sokoban-6x6-v0 has panels ['train', 'val', 'test']"),
            (("reset", {"split": "test", "index": 256}), "index: the test panel of RAGEN/Sokoban-6x6-v0 has items 0..255"),
            (("reset", {"env_id": "RAGEN/Sokoban-8x8-v0", "seed": 1}), "env_id: this server serves RAGEN/Sokoban-6x6-v0"),
            (("reset", {"sed": 3}), "reset takes env_id, seed, split, index, session; got sed"),
            (("reset", {"seed": 1, "session": "gone"}), "reset: unknown session 'gone'"),
            (("step", {"session": sid}), "step: bad arguments: action: Field required"),
            (("step", {"session": sid, "action": ["Up"]}), "step: bad arguments: action: Input should be a valid string"),
            (("step", {"session": sid, "action": "x" * 65_537}), "step: a reply holds at most 65536 characters, got 65537"),
            (("step", {"session": sid, "action": "\ud800"}), "a reply must be Unicode text; character 0 is a lone surrogate"),
            (("list_envs", {"verbose": True}), "list_envs takes no arguments; got verbose"),
            (("fly", {}), "Unknown tool: fly"),
        ]
        for (tool, arguments), reason in cases:
            assert reason in await refused(client, tool, **arguments), (tool, arguments)
        # The session went on through all of that, and a refused reset opened no session.
        assert (await call(client, "step", session=sid, action=UP))["turns"] == 1
        assert (await call(client, "list_envs"))["sessions_open"] == 1
        # A refused reset of an open session ends its episode: then a step is a step before reset.
        await refused(client, "reset", session=sid, seed=-1)
        assert "step: step before reset: call reset first" == await refused(client, "step", session=sid, action=UP)
        assert await call(client, "state", session=sid) == {
            "session": sid, "env_id": None, "seed": None, "split": None, "index": None, "turns": 0, "done": False,
            "messages": []}

    run(body, in_memory("RAGEN/Sokoban-6x6-v0"))


def test_step_after_the_end_and_after_close() -> None:
    async def body(client: ClientSession) -> None:
        sid = (await call(client, "reset", seed=3))["session"]
        assert (await call(client, "step", session=sid, action="<answer>Phoenix</answer>"))["done"]
        assert "step: the episode is over: call reset for a new one" == await refused(
            client, "step", session=sid, action="<answer>Dragon</answer>")
        again = await call(client, "reset", seed=4, session=sid)  # the same session, a new episode
        assert again["session"] == sid and again["seed"] == 4
        assert await call(client, "close", session=sid) == {"session": sid, "closed": True}
        assert "unknown session" in await refused(client, "state", session=sid)
        assert "unknown session" in await refused(client, "close", session=sid)

    run(body, in_memory("RAGEN/Bandit-v0"))


def test_sessions_are_bounded() -> None:
    async def body(client: ClientSession) -> None:
        first = (await call(client, "reset", seed=1))["session"]
        await refused(client, "reset", seed=-1)  # a refused reset holds no slot
        second = (await call(client, "reset", seed=2))["session"]
        assert first != second
        assert "reset: too many sessions: this server holds at most 2" in await refused(client, "reset", seed=3)
        await call(client, "close", session=first)
        await call(client, "reset", seed=3)
        assert (await call(client, "step", session=second, action=UP))["turns"] == 1

    run(body, in_memory("RAGEN/Sokoban-6x6-v0", max_sessions=2))


def test_idle_sessions_are_reaped() -> None:
    now = [0.0]

    async def body(client: ClientSession) -> None:
        kept = (await call(client, "reset", seed=1))["session"]
        idle = (await call(client, "reset", seed=2))["session"]
        for _ in range(3):  # each call on a session restarts its idle time
            now[0] += 4.0
            await call(client, "state", session=kept)
        assert "unknown session" in await refused(client, "state", session=idle)
        assert "after 5 s idle" in await refused(client, "state", session=idle)
        assert (await call(client, "list_envs"))["sessions_open"] == 1
        # Its slot is free again: two more fit beside the kept one.
        await call(client, "reset", seed=3)
        assert "too many sessions" in await refused(client, "reset", seed=4)

    run(body, in_memory("RAGEN/Sokoban-6x6-v0", max_sessions=2, idle_timeout_s=5.0, clock=lambda: now[0]))


# -- the real transports ----------------------------------------------------------------


async def short_episode(client: ClientSession) -> str:
    """List the tools, play two turns of Sokoban seed 140 as the session layer does, refuse a bad step; the session."""
    await client.initialize()
    assert {tool.name for tool in (await client.list_tools()).tools} == TOOLS
    local = ChatSession(("RAGEN/Sokoban-6x6-v0",))
    started = await call(client, "reset", seed=140)
    assert started["messages"] == local.reset(seed=140).messages
    for reply in ("I think I should move up.", UP):
        played, expected = await call(client, "step", session=started["session"], action=reply), local.step(reply)
        assert (played["observation"], played["reward"], played["info"]) == (
            expected.messages[-1]["content"], expected.reward, expected.info)
    assert "step: unknown session 'nope'" in await refused(client, "step", session="nope", action=UP)
    assert (await call(client, "state", session=started["session"]))["turns"] == 2
    return started["session"]


def test_streamable_http() -> None:
    with served("RAGEN/Sokoban-6x6-v0", "--mcp") as url:
        assert httpx.get(f"{url}/health").json() == {"status": "healthy", "sessions_open": 0}

        async def main() -> None:
            async with streamable_http_client(f"{url}/mcp") as (read, write, _), ClientSession(read, write) as client:
                session = await short_episode(client)
            # Sessions are the server's, not the connection's: the next connection plays on.
            async with streamable_http_client(f"{url}/mcp") as (read, write, _), ClientSession(read, write) as client:
                await client.initialize()
                assert (await call(client, "step", session=session, action=UP))["turns"] == 3

        anyio.run(main)
        # A body above the bound is refused before it is read; the server goes on.
        too_big = httpx.post(f"{url}/mcp", content=b"x" * (MAX_REQUEST_BYTES + 1), timeout=30,
                             headers={"content-type": "application/json", "accept": "application/json, text/event-stream"})
        assert too_big.status_code == 413
        assert httpx.get(f"{url}/health").json()["sessions_open"] == 1


def test_the_docs_client_snippet_runs() -> None:
    blocks = re.findall(r"```python\n(.*?)```", (REPO_ROOT / "docs" / "serve.md").read_text(), flags=re.DOTALL)
    snippet = next(block for block in blocks if "streamable_http_client" in block)
    with served("RAGEN/Sokoban-6x6-v0", "--mcp") as url:
        ran = subprocess.run([sys.executable, "-c", snippet.replace("http://127.0.0.1:8000", url)],
                             capture_output=True, text=True, timeout=120, cwd=REPO_ROOT)
        assert ran.returncode == 0, ran.stderr
        assert httpx.get(f"{url}/health").json()["sessions_open"] == 0  # the snippet closed its session
    prompt = ChatSession(("RAGEN/Sokoban-6x6-v0",)).reset(split="test", index=17).messages[-1]["content"]
    # The first prompt, then the turn: reward, done, valid ("Left" is a valid move).
    assert ran.stdout.startswith(prompt) and ran.stdout.endswith(" False True\n")


def rpc(url: str, headers: dict, body: str) -> dict:
    """One raw JSON-RPC POST to ``/mcp`` (the server answers plain JSON, no SSE stream)."""
    answer = httpx.post(f"{url}/mcp", headers=headers, content=body, timeout=30)
    return {"status": answer.status_code, **(answer.json() if answer.content else {})}


def test_raw_http_bodies_no_client_would_send() -> None:
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    with served("RAGEN/Sokoban-6x6-v0", "--mcp") as url:
        opened = httpx.post(f"{url}/mcp", headers=headers, timeout=30, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        headers = {**headers, "mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
        assert rpc(url, headers, '{"jsonrpc": "2.0", "method": "notifications/initialized"}')["status"] == 202
        reset = rpc(url, headers, '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", '
                                  '"params": {"name": "reset", "arguments": {"seed": 5}}}')
        session = reset["result"]["structuredContent"]["session"]
        # A lone surrogate, which JSON can escape and no UTF-8 client library would send.
        lone = rpc(url, headers, '{"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "step", '
                                 f'"arguments": {{"session": "{session}", "action": "\\ud800"}}}}}}')
        assert lone["result"]["isError"]
        assert lone["result"]["content"][0]["text"] == "step: a reply must be Unicode text; character 0 is a lone surrogate"
        not_json = rpc(url, headers, "not json")
        assert not_json["status"] == 400 and not_json["error"]["message"].startswith("Parse error")
        state = rpc(url, headers, '{"jsonrpc": "2.0", "id": 4, "method": "tools/call", '
                                  f'"params": {{"name": "state", "arguments": {{"session": "{session}"}}}}}}')
        assert state["result"]["structuredContent"]["turns"] == 0 and not state["result"]["isError"]


def test_stdio() -> None:
    parameters = StdioServerParameters(command=sys.executable, cwd=str(REPO_ROOT),
                                       args=["-m", "ragen_bench.cli", "serve", "RAGEN/Sokoban-6x6-v0", "--mcp", "--stdio"])

    async def main() -> None:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as client:
            await short_episode(client)

    anyio.run(main)
