"""Helpers of the verifiers-side tests (run in .venv-verifiers: scripts/setup_verifiers_venv.sh).

The model is the scripted endpoint (ragen_bench.integrations.scripted_server) on a free loopback
port; eval's side is a real ``ragen-bench eval`` process; verifiers' side is its own API or vf-eval.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest
import verifiers.v1 as vf

from ragen_bench.integrations.scripted_server import ScriptedEndpoint, make_server
from ragen_bench.integrations.verifiers import env_config

REPO_ROOT = Path(__file__).resolve().parent.parent
# An API key variable nobody sets: the scripted endpoint takes any key, and verifiers' default
# (PRIME_API_KEY) would read the Prime CLI's config.
KEY_VAR = "RAGEN_BENCH_VF_TEST_KEY"


@contextlib.contextmanager
def serving(endpoint: ScriptedEndpoint) -> Iterator[str]:
    """``endpoint`` on a free loopback port; yields its base URL (``.../v1``)."""
    server = make_server(endpoint)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="session")
def optimal_url() -> Iterator[str]:
    """The optimal agent's endpoint under each id's own chat budget."""
    with serving(ScriptedEndpoint("optimal")) as url:
        yield url


def ragen_eval(out: Path, *overrides: str) -> list[dict[str, Any]]:
    """``ragen-bench eval OVERRIDES out=OUT``'s episode records, by episode key."""
    run = subprocess.run([sys.executable, "-m", "ragen_bench.cli", "eval", *overrides, f"out={out}", "progress=false"],
                         cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    records = [json.loads(line) for line in (out / "episodes.jsonl").read_text().splitlines()]
    return sorted(records, key=lambda r: (r["env_id"], r["split"], r["seed"], r["sample"]))


def play(url: str, model: str = "ragen-bench-optimal", **keys: Any) -> list[vf.Episode]:
    """Every task of ``env_config(**keys)`` played once through verifiers' own env API, in task order."""
    env = vf.load_environment(env_config(**keys))
    ctx = vf.ModelContext(client=vf.EvalClientConfig(base_url=url, api_key_var=KEY_VAR), model=model)

    async def run() -> list[vf.Episode]:
        async with env.serving():
            return list(await asyncio.gather(*(env.run_slot(slot, ctx) for task in env.taskset
                                               for slot in env.slots(task))))

    return asyncio.run(run())


def trajectories(episodes: list[vf.Episode]) -> list[Mapping[str, Any]]:
    """Each episode's one trace's record (eval's trajectory fields), failing on an episode that did not finish."""
    found = []
    for episode in episodes:
        assert episode.ok, [error.message for error in episode.errors] + [
            error.message for trace in episode.traces for error in trace.errors]
        (trace,) = episode.traces
        found.append(trace.info["trajectory"])
    return found
