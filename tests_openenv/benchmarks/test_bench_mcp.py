"""Per-call latency of ``ragen-bench serve --mcp``'s ``step`` tool, through mcp's own client.

    RAGEN_BENCH_BENCHMARKS=1 .venv-openenv/bin/python -m pytest tests_openenv/benchmarks/test_bench_mcp.py \\
        --benchmark-enable --benchmark-columns=median,iqr,rounds

One client stays connected for all rounds (its event loop in a thread: anyio's blocking portal);
each round calls ``step`` on a Sokoban-6x6 seed-5 session :data:`CALLS` times, one call at a time
(resetting as episodes end; every step a whole chat turn); ``us_per_call`` lands in
``extra_info``.  Transports: in memory (the MCP protocol and FastMCP, no wire), streamable HTTP on
loopback (a ``ragen-bench serve --mcp`` process) and stdio (``serve --mcp --stdio``, a subprocess).
Clients: ``checked``, mcp's ``ClientSession.call_tool``, which checks every result against the
tool's output schema (jsonschema, most of a call's time); ``unchecked``, the same request through
``send_request``, which does not.  Client and server share the machine.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager

import pytest
from anyio.from_thread import start_blocking_portal
from mcp import ClientSession, StdioServerParameters, types
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.memory import create_connected_server_and_client_session

from ragen_bench.integrations.mcp_server import build_server
from tests_openenv.conftest import REPO_ROOT, served

CALLS = 200
ENV_ID = "RAGEN/Sokoban-6x6-v0"
# Valid, never solving alone (as test_bench_serve's).
REPLIES = ("<think>t</think> <answer>Up || Left</answer>", "<think>t</think> <answer>Down || Right</answer>")


async def unchecked_call(client: ClientSession, name: str, arguments: dict) -> types.CallToolResult:
    request = types.CallToolRequest(params=types.CallToolRequestParams(name=name, arguments=arguments))
    return await client.send_request(types.ClientRequest(request), types.CallToolResult)


async def steps(client: ClientSession, session: str, checked: bool) -> None:
    call = client.call_tool if checked else functools.partial(unchecked_call, client)
    for index in range(CALLS):
        result = await call("step", {"session": session, "action": REPLIES[index % 2]})
        assert not result.isError, result.content[0].text
        if result.structuredContent["done"]:
            await call("reset", {"seed": 5, "session": session})


def measure(benchmark, connect: Callable[[], AbstractAsyncContextManager[ClientSession]], checked: bool) -> None:
    benchmark.group = "MCP step, one call at a time"
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(connect()) as client:
        session = portal.call(client.call_tool, "reset", {"seed": 5}).structuredContent["session"]
        benchmark.pedantic(portal.call, args=(steps, client, session, checked), rounds=5, iterations=1,
                           warmup_rounds=1)
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["us_per_call"] = round(benchmark.stats.stats.median / CALLS * 1e6, 1)


CLIENTS = pytest.mark.parametrize("checked", [True, False], ids=["checked", "unchecked"])


@CLIENTS
def test_in_memory_step_latency(benchmark, checked: bool) -> None:
    server = build_server([ENV_ID])
    measure(benchmark, lambda: create_connected_server_and_client_session(server), checked)


@CLIENTS
def test_streamable_http_step_latency(benchmark, checked: bool) -> None:
    with served(ENV_ID, "--mcp") as url:
        @asynccontextmanager
        async def connect() -> AsyncIterator[ClientSession]:
            async with streamable_http_client(f"{url}/mcp") as (read, write, _), ClientSession(read, write) as client:
                await client.initialize()
                yield client

        measure(benchmark, connect, checked)


@CLIENTS
def test_stdio_step_latency(benchmark, checked: bool) -> None:
    parameters = StdioServerParameters(command=sys.executable, cwd=str(REPO_ROOT),
                                       args=["-m", "ragen_bench.cli", "serve", ENV_ID, "--mcp", "--stdio"])

    @asynccontextmanager
    async def connect() -> AsyncIterator[ClientSession]:
        async with stdio_client(parameters) as (read, write), ClientSession(read, write) as client:
            await client.initialize()
            yield client

    measure(benchmark, connect, checked)
