"""``vllm``: an in-process vLLM engine (``vllm.LLM``) answering chat prompts in batches.

Only usable where vllm is installed (here: the separate ``.venv-vllm``, see
``scripts/setup_vllm_venv.sh``); vllm is imported when an agent is built, never on
``import ragen_bench``.  For a vLLM running as a server, use the ``openai`` agent instead.

Each request carries its own sampling seed derived from ``(sampling_seed, episode_key, turn)``,
so a sample does not depend on which requests shared its batch.  Prompts go to the engine
``generate_batch`` at a time; a reply's ``finish_reason`` is vLLM's (``"stop"``, ``"length"``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from ragen_bench.agents.sampling import SamplingSettings, request_seed, resolve_model_path
from ragen_bench.chat.protocol import AgentReply, AgentRequest

# On the CPU backend vLLM sizes its KV cache from this variable (GiB); without it, it tries
# to reserve most of the machine's memory.  A caller's own setting wins.
DEFAULT_CPU_KVCACHE_GIB = "1"


class VLLMOfflineAgent:
    """Batched chat generation through ``vllm.LLM.chat`` with per-request seeds."""

    def __init__(self, llm: Any, sampling: SamplingSettings, *, generate_batch: int = 64, name: str = "vllm") -> None:
        if generate_batch < 1:
            raise ValueError(f"generate_batch must be >= 1, got {generate_batch}")
        self.llm = llm
        self.sampling = sampling
        self.generate_batch = generate_batch
        self.name = name

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        replies: list[AgentReply] = []
        for start in range(0, len(requests), self.generate_batch):
            replies.extend(self._generate(requests[start : start + self.generate_batch]))
        return replies

    def _generate(self, batch: Sequence[AgentRequest]) -> list[AgentReply]:
        from vllm import SamplingParams

        params = [
            SamplingParams(
                temperature=self.sampling.temperature,
                top_p=self.sampling.top_p,
                max_tokens=self.sampling.max_new_tokens,
                seed=request_seed(self.sampling.sampling_seed, request) % 2**31,
            )
            for request in batch
        ]
        outputs = self.llm.chat([request.messages for request in batch], sampling_params=params, use_tqdm=False)
        return [
            AgentReply(
                text=output.outputs[0].text,
                prompt_tokens=len(output.prompt_token_ids or []),
                completion_tokens=len(output.outputs[0].token_ids),
                finish_reason=output.outputs[0].finish_reason,
            )
            for output in outputs
        ]

    def close(self) -> None:
        self.llm = None


def make_vllm_agent(
    model: str = "smollm2-135m",
    *,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 256,
    sampling_seed: int = 0,
    generate_batch: int = 64,
    dtype: str = "auto",
    max_model_len: int = 4096,
    enforce_eager: bool = True,
    name: str | None = None,
    engine_options: dict[str, Any] | None = None,
) -> VLLMOfflineAgent:
    """Factory behind ``make_agent("vllm", ...)``; ``engine_options`` go to ``vllm.LLM`` as keywords.

    (A mapping rather than free keywords, so a misspelt setting is an error, not an engine option.)

    ``enforce_eager`` defaults to True: graph capture / compilation costs minutes on a CPU
    and little is gained for short evaluation runs.
    """
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", DEFAULT_CPU_KVCACHE_GIB)
    from vllm import LLM

    sampling = SamplingSettings(
        temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, sampling_seed=sampling_seed
    )
    llm = LLM(
        model=str(resolve_model_path(model)),
        dtype=dtype,
        max_model_len=max_model_len,
        enforce_eager=enforce_eager,
        seed=sampling_seed,
        **(engine_options or {}),
    )
    return VLLMOfflineAgent(llm, sampling, generate_batch=generate_batch, name=name or f"vllm:{model}")
