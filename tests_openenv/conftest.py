"""Helpers of the OpenEnv-side tests (run in .venv-openenv: scripts/setup_openenv_venv.sh).

Each server is a real ``ragen-bench serve`` process on a free loopback port, as a user starts it.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

REPO_ROOT = Path(__file__).resolve().parent.parent

# Speed benchmarks measure; they are not part of the test run (opt in as tests/benchmarks does).
collect_ignore = [] if os.environ.get("RAGEN_BENCH_BENCHMARKS") == "1" else ["benchmarks"]

# One id of every family (a TextWorld-Express id where a JVM is installed), two games: a turn-based
# one and the simultaneous one.
SAMPLE_IDS = (
    "RAGEN/Sokoban-6x6-v0", "RAGEN/FrozenLake-4x4-v0", "RAGEN/Bandit-v0", "RAGEN/Countdown-v0",
    "RAGEN/MathQA-v0", "RAGEN/RubiksCube-2x2-Depth3-v0", "RAGEN/2048-v0", "RAGEN/Sudoku-4x4-v0",
    "RAGEN/RG-chain_sum-v0", *(("RAGEN/TWX-coin-v0",) if shutil.which("java") else ()),
    "RAGEN/TicTacToe-v0", "RAGEN/PrisonersDilemma-v0",
)
# The server of the bad-input tests: room for two sessions, a silent one closed after this long.
TIGHT_SESSIONS = 2
TIGHT_IDLE_S = 5.0


# The process id of each running server, by its URL (for tests that read its memory).
SERVER_PIDS: dict[str, int] = {}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextlib.contextmanager
def served(*args: str, startup_s: float = 120.0) -> Iterator[str]:
    """``ragen-bench serve ARGS --port <free>`` running; yields its base URL and stops it after."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "ragen_bench.cli", "serve", *args, "--port", str(port)],
        cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + startup_s
        while True:
            if process.poll() is not None:
                raise RuntimeError(f"ragen-bench serve exited {process.returncode}: {process.stdout.read()}")
            try:
                if httpx.get(f"{url}/health", timeout=1.0).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"ragen-bench serve did not answer /health within {startup_s} s")
            time.sleep(0.2)
        SERVER_PIDS[url] = process.pid
        yield url
    finally:
        SERVER_PIDS.pop(url, None)
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@pytest.fixture(scope="session")
def sample_server() -> Iterator[str]:
    """One server of every sampled id (default limits)."""
    with served(*SAMPLE_IDS) as url:
        yield url


@pytest.fixture(scope="session")
def tight_server() -> Iterator[str]:
    """A Sokoban-6x6 and Bandit server with two sessions at most and a short idle timeout."""
    with served("RAGEN/Sokoban-6x6-v0", "RAGEN/Bandit-v0", "--max-sessions", str(TIGHT_SESSIONS),
                "--idle-timeout", str(TIGHT_IDLE_S)) as url:
        yield url


def ws_url(url: str, query: str = "") -> str:
    return url.replace("http://", "ws://") + "/ws" + query


def exchange(ws, message: dict | str) -> dict:
    """Send one message (a dict as JSON, a str as it is) and read the answer."""
    ws.send(message if isinstance(message, str) else json.dumps(message))
    return json.loads(ws.recv(timeout=30))
