"""``vllm``: an in-process vLLM engine (``vllm.LLM``) answering chat prompts in batches.

Only usable where vllm is installed (here: the separate ``.venv-vllm``, see
``scripts/setup_vllm_venv.sh``); vllm is imported when an agent is built, never on
``import ragen_bench``.  For a vLLM running as a server, use the ``openai`` agent instead.

Each request carries its own sampling seed derived from ``(sampling_seed, episode_key, turn)``,
so a sample does not depend on which requests shared its batch.  Prompts go to the engine
``generate_batch`` at a time.

Replies end where the ``hf`` agent's end, so the two agents score a model alike: at the
model's end-of-sequence token, right after the token that completes one of ``stop_strings``
(default ``</answer>``; an empty list turns them off), or at ``max_new_tokens``
(``finish_reason`` ``"stop"``, ``"stop"``, ``"length"``).  vLLM is given the stop strings so
it stops generating there; the cut itself and the reply text are this module's, made from
the reply's token ids with the ``hf`` agent's rule, whatever vLLM's detokenizer does.

``model`` may name a peft LoRA adapter directory, as for the ``hf`` agent (what ``ragen-bench
train`` saves with ``lora.rank > 0``): vLLM loads the adapter's base model (resolved like
``model``) with LoRA enabled, and every request runs with the adapter; the adapter's own
tokenizer is used when it has one.

Tools mode (``chat.action_format=tools``): requests with ``tools`` go to ``LLM.chat(..., tools=...)``,
one call per distinct schema in a batch (a suite's envs name different actions), and the reply's
``<tool_call>`` blocks become its ``tool_calls`` (:mod:`ragen_bench.agents.tool_text`), as for the
``hf`` agent; a chat template that does not render tools is refused.
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ragen_bench.agents.local_models import DEFAULT_STOP_STRINGS, StopStrings, adapter_config, has_tokenizer
from ragen_bench.agents.sampling import EVAL_SAMPLING, SamplingSettings, request_seed, resolve_model_path
from ragen_bench.agents.tool_text import check_renders_tools, template_messages, with_tool_calls
from ragen_bench.chat.protocol import AgentReply, AgentRequest

# On the CPU backend vLLM sizes its KV cache from this variable (GiB); without it, it tries
# to reserve most of the machine's memory.  A caller's own setting wins.
DEFAULT_CPU_KVCACHE_GIB = "1"
# The LoRA ranks vLLM accepts as ``max_lora_rank``; an adapter of rank r needs the smallest one >= r.
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)


class VLLMOfflineAgent:
    """Batched chat generation through ``vllm.LLM.chat`` with per-request seeds.

    ``lora_request`` (a ``vllm.lora.request.LoRARequest``) is sent with every request.
    """

    acts_by_tools = True

    def __init__(
        self,
        llm: Any,
        sampling: SamplingSettings,
        *,
        generate_batch: int = 64,
        stop_strings: Sequence[str] = DEFAULT_STOP_STRINGS,
        lora_request: Any = None,
        name: str = "vllm",
    ) -> None:
        if generate_batch < 1:
            raise ValueError(f"generate_batch must be >= 1, got {generate_batch}")
        self.llm = llm
        self.sampling = sampling
        self.generate_batch = generate_batch
        self.lora_request = lora_request
        self.name = name
        self.tokenizer = llm.get_tokenizer()
        self._stop_strings = StopStrings(self.tokenizer, stop_strings)

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
                stop=list(self._stop_strings.strings),
                include_stop_str_in_output=True,
            )
            for request in batch
        ]
        # Text mode is one group (tools None): the one call it always was.
        groups: dict[str, list[int]] = {}
        for index, request in enumerate(batch):
            groups.setdefault(json.dumps(request.tools, sort_keys=True), []).append(index)
        replies: list[AgentReply | None] = [None] * len(batch)
        for indices in groups.values():
            tools = batch[indices[0]].tools
            options: dict[str, Any] = {}
            if tools is not None:
                check_renders_tools(self.tokenizer.chat_template, self.name)
                options["tools"] = tools
            outputs = self.llm.chat(
                [batch[i].messages if tools is None else template_messages(batch[i].messages) for i in indices],
                sampling_params=[params[i] for i in indices], use_tqdm=False, lora_request=self.lora_request,
                **options,
            )
            for index, output in zip(indices, outputs, strict=True):
                reply = self._reply(output)
                replies[index] = reply if tools is None else with_tool_calls(reply)
        return [reply for reply in replies if reply is not None]

    def _reply(self, output: Any) -> AgentReply:
        """The reply up to the token completing a stop string, else all vLLM generated (hf's rule and text)."""
        completion = output.outputs[0]
        ids = list(completion.token_ids)
        end = next((i for i in range(1, len(ids) + 1) if self._stop_strings.completed_by_last(ids[:i])), None)
        # No space clean-up, as in the hf agent: it is meant for WordPiece and would alter BPE text.
        text = self.tokenizer.decode(ids[:end], skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return AgentReply(
            text=text,
            prompt_tokens=len(output.prompt_token_ids or []),
            completion_tokens=len(ids) if end is None else end,
            finish_reason=completion.finish_reason if end is None else "stop",
        )

    def close(self) -> None:
        self.llm = None


def make_vllm_agent(
    model: str = "smollm2-135m",
    *,
    temperature: float = EVAL_SAMPLING.temperature,
    top_p: float = EVAL_SAMPLING.top_p,
    max_new_tokens: int = EVAL_SAMPLING.max_new_tokens,
    sampling_seed: int = EVAL_SAMPLING.sampling_seed,
    generate_batch: int = 64,  # the yaml's ${lockstep_episodes}: a whole lock-step batch
    stop_strings: Sequence[str] = DEFAULT_STOP_STRINGS,
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
    sampling = SamplingSettings(
        temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens, sampling_seed=sampling_seed
    )
    engine, lora_request = _engine_model(model)
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", DEFAULT_CPU_KVCACHE_GIB)
    from vllm import LLM

    llm = LLM(
        dtype=dtype,
        max_model_len=max_model_len,
        enforce_eager=enforce_eager,
        seed=sampling_seed,
        **engine,
        **(engine_options or {}),
    )
    return VLLMOfflineAgent(
        llm, sampling, generate_batch=generate_batch, stop_strings=stop_strings, lora_request=lora_request,
        name=name or f"vllm:{model}",
    )


def _engine_model(model: str) -> tuple[dict[str, Any], Any]:
    """``vllm.LLM``'s model keywords for ``model``, and the LoRA request every call carries (None: no adapter)."""
    adapter = adapter_config(model)
    if adapter is None:
        return {"model": str(resolve_model_path(model))}, None
    from vllm.lora.request import LoRARequest

    folder = Path(model).expanduser().resolve()
    rank = adapter.get("r")
    if not (isinstance(rank, int) and 0 < rank <= VLLM_LORA_RANKS[-1]):
        raise ValueError(f"{folder}: the adapter's rank r must be an integer in 1..{VLLM_LORA_RANKS[-1]}, got {rank!r}")
    engine = {
        "model": str(resolve_model_path(adapter["base_model_name_or_path"])),
        "enable_lora": True,
        "max_lora_rank": next(allowed for allowed in VLLM_LORA_RANKS if allowed >= rank),
        "max_loras": 1,
    }
    if has_tokenizer(folder):
        engine["tokenizer"] = str(folder)
    return engine, LoRARequest(lora_name=folder.name, lora_int_id=1, lora_path=str(folder))
