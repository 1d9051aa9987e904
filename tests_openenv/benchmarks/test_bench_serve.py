"""Steps per second over the WebSocket: ``ragen-bench serve`` beside OpenEnv's own reference env.

    RAGEN_BENCH_BENCHMARKS=1 .venv-openenv/bin/python -m pytest tests_openenv/benchmarks \\
        --benchmark-enable --benchmark-columns=median,iqr,rounds

* ``served``: Sokoban-6x6 through ``ragen-bench serve`` (every step a whole chat turn: the reply
  parsed, its actions stepped, the next prompt built and sent), 1 and 64 concurrent sessions;
* ``reference``: the echo env ``openenv init`` generates (OpenEnv's template, shipped in the
  package), served by the same ``create_app`` and uvicorn settings, 1 and 64 sessions;
* ``in-process``: the same steps without the wire (a :class:`ChatSession`);
* memory: the server's resident memory stays flat over 10,000 episodes on 8 sessions.

Each round plays :data:`STEPS_PER_SESSION` steps on every session (resets as episodes end);
``steps_per_s`` (all sessions together) and ``us_per_step`` land in ``extra_info``.  Client and
server share the machine, as a trainer beside its env server would.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from websockets.asyncio.client import connect

from ragen_bench.integrations.openenv.server import MAX_MESSAGE_BYTES
from ragen_bench.integrations.openenv.session import ChatSession
from tests_openenv.conftest import SERVER_PIDS, free_port, served

STEPS_PER_SESSION = 200
ENV_ID = "RAGEN/Sokoban-6x6-v0"
# Valid, never solving alone: every step a full chat turn with env steps.
REPLIES = ("<think>t</think> <answer>Up || Left</answer>", "<think>t</think> <answer>Down || Right</answer>")


@contextlib.contextmanager
def reference_server(tmp: Path, sessions: int) -> Iterator[str]:
    """OpenEnv's template echo env (``openenv init``), served as ``ragen-bench serve`` serves."""
    subprocess.run([str(Path(sys.executable).parent / "openenv"), "init", "echo_ref", "--output-dir", str(tmp)],
                   check=True, capture_output=True)
    port = free_port()
    code = textwrap.dedent(f"""
        import uvicorn
        from openenv.core.env_server.http_server import create_app
        from models import EchoRefAction, EchoRefObservation
        from server.echo_ref_environment import EchoRefEnvironment
        app = create_app(EchoRefEnvironment, EchoRefAction, EchoRefObservation, env_name="echo_ref",
                         max_concurrent_envs={sessions})
        uvicorn.run(app, host="127.0.0.1", port={port}, ws_max_size={MAX_MESSAGE_BYTES}, log_level="warning")
    """)
    process = subprocess.Popen([sys.executable, "-c", code], cwd=tmp / "echo_ref")
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(600):
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(f"{url}/health", timeout=1).status_code == 200:
                    break
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=10)


async def _session(url: str, reset: dict, step_data, steps: int) -> None:
    async with connect(url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
        await ws.send(json.dumps({"type": "reset", "data": reset}))
        json.loads(await ws.recv())
        for index in range(steps):
            await ws.send(json.dumps({"type": "step", "data": step_data(index)}))
            answer = json.loads(await ws.recv())
            assert answer["type"] == "observation", answer
            if answer["data"]["done"]:
                await ws.send(json.dumps({"type": "reset", "data": reset}))
                json.loads(await ws.recv())


def play(url: str, sessions: int, reset: dict, step_data) -> None:
    async def main() -> None:
        await asyncio.gather(*(_session(url, reset, step_data, STEPS_PER_SESSION) for _ in range(sessions)))

    asyncio.run(main())


def _record(benchmark, steps: int) -> None:
    if benchmark.stats is not None:  # None under --benchmark-disable
        median = benchmark.stats.stats.median
        benchmark.extra_info["steps_per_s"] = round(steps / median)
        benchmark.extra_info["us_per_step"] = round(median / steps * 1e6, 1)


@pytest.mark.parametrize("sessions", [1, 64])
def test_served_steps_per_second(benchmark, sessions: int) -> None:
    benchmark.group = f"WebSocket steps/s, {sessions} session(s)"
    with served(ENV_ID, "--max-sessions", str(sessions)) as url:
        benchmark.pedantic(play, args=(url, sessions, {"seed": 5}, lambda i: {"reply": REPLIES[i % 2]}),
                           rounds=3, iterations=1, warmup_rounds=1)
    _record(benchmark, sessions * STEPS_PER_SESSION)


@pytest.mark.parametrize("sessions", [1, 64])
def test_reference_steps_per_second(benchmark, tmp_path: Path, sessions: int) -> None:
    benchmark.group = f"WebSocket steps/s, {sessions} session(s)"
    with reference_server(tmp_path, sessions) as url:
        benchmark.pedantic(play, args=(url, sessions, {}, lambda i: {"message": "hello"}),
                           rounds=3, iterations=1, warmup_rounds=1)
    _record(benchmark, sessions * STEPS_PER_SESSION)


def test_in_process_steps_per_second(benchmark) -> None:
    benchmark.group = "in-process steps/s (no wire)"
    session = ChatSession((ENV_ID,))

    def steps() -> None:
        session.reset(seed=5)
        for index in range(STEPS_PER_SESSION):
            if session.step(REPLIES[index % 2]).done:
                session.reset(seed=5)

    benchmark.pedantic(steps, rounds=5, iterations=1, warmup_rounds=1)
    _record(benchmark, STEPS_PER_SESSION)


def _rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line for line in status.splitlines() if line.startswith("VmRSS:")).split()[1])


def test_memory_stays_bounded_over_10000_episodes() -> None:
    sessions, episodes = 8, 10_000
    with served(ENV_ID, "--max-sessions", str(sessions)) as url:
        pid = SERVER_PIDS[url]

        async def episodes_on(session: int, count: int) -> None:
            async with connect(url.replace("http://", "ws://") + "/ws") as ws:
                for index in range(count):
                    # A new seed, so a new level, every episode.
                    await ws.send(json.dumps({"type": "reset", "data": {"seed": session * count + index}}))
                    await ws.recv()
                    await ws.send(json.dumps({"type": "step", "data": {"reply": REPLIES[index % 2]}}))
                    await ws.recv()

        async def play_all(count: int) -> None:
            await asyncio.gather(*(episodes_on(s, count) for s in range(sessions)))

        asyncio.run(play_all(1_000 // sessions))  # warm: caches and allocator settle
        warm = _rss_kib(pid)
        asyncio.run(play_all(episodes // sessions))
        grown = _rss_kib(pid) - warm
    print(f"server RSS after warm-up {warm / 1024:.1f} MiB; grew {grown / 1024:.1f} MiB over {episodes} episodes")
    assert grown < 16 * 1024
