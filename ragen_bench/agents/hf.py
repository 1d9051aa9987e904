"""``hf``: a local transformers causal LM answering chat prompts in batches.

The model comes from a directory (``config.json``, weights, tokenizer with a chat template) or
from an alias: ``smollm2-135m`` (the embedded SmolLM2-135M-Instruct, see
:mod:`ragen_bench.agents.smollm2`) or ``tiny`` (the randomly initialised test model of
:mod:`ragen_bench.agents.tiny_model`).

Sampling is reproducible per request, not per batch: every request gets its own
``torch.Generator`` seeded from ``(sampling_seed, episode_key, turn)`` (see
:mod:`ragen_bench.agents.sampling`), and tokens are drawn with it, so an episode's sampled
text does not depend on which other episodes shared its batch or on the global torch random
state (which this agent never touches).  Only floating-point differences from padding
remain, and they are far below what changes a sample in practice.  Prompts are generated
``generate_batch`` at a time.

A reply ends at a stop token (the model's end-of-sequence ids), right after the token that
completes one of ``stop_strings`` (default ``</answer>``, where the policy agent of
:mod:`ragen_bench.train.policy_agent` stops, so a trained model is evaluated the way it was
sampled; the reply text then ends with that token's text, and an empty list turns stop
strings off), or at ``max_new_tokens``.  Rows of a batch stop independently, and only the
reply is searched, never the prompt.  ``finish_reason`` is ``"stop"`` in the first two cases
and ``"length"`` in the last.

``model`` may also name a peft LoRA adapter directory (see
:func:`ragen_bench.agents.local_models.load_model`, which the trainer loads its models with too).

``device`` places the model (:func:`resolve_device`): ``auto`` (the default) is the first CUDA
device when torch sees one, else the CPU; ``cpu``, ``cuda`` and ``cuda:N`` are taken as given.
Tokens are drawn on the CPU with the requests' generators whatever the device, so a seed draws
from the same random numbers on either (the model's logits still differ by float rounding).

Tools mode (``chat.action_format=tools``): a request's ``tools`` go to the chat template
(``apply_chat_template(..., tools=...)``; a template that does not render tools is refused), and
the reply's ``<tool_call>`` blocks become its ``tool_calls`` (:mod:`ragen_bench.agents.tool_text`).

torch and transformers are imported inside the functions that need them.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ragen_bench.agents.local_models import (
    AUTO_THREADS,
    DEFAULT_STOP_STRINGS,
    StopStrings,
    keep_top_p,
    load_for_sampling,
    stop_token_ids,
)
from ragen_bench.agents.sampling import EVAL_SAMPLING, SamplingSettings, request_seed
from ragen_bench.agents.tool_text import check_renders_tools, template_messages, with_tool_calls
from ragen_bench.chat.protocol import AgentReply, AgentRequest

if TYPE_CHECKING:
    # Types only: torch and transformers are imported where they run, so the agent registry stays light.
    import torch
    from transformers import LogitsProcessor, StoppingCriteria

DEVICES = "auto, cpu, cuda or cuda:N"
_CUDA_INDEX = re.compile(r"cuda:(\d+)")


def resolve_device(device: str, cuda_devices: int) -> str:
    """The torch device ``device`` names on a machine with ``cuda_devices`` visible CUDA devices.

    ``auto``: ``cuda`` when there is one, else ``cpu``.  ``cuda`` / ``cuda:N`` on a machine
    without that device, and anything else, is a ``ValueError`` naming the setting.
    """
    if device == "auto":
        return "cuda" if cuda_devices > 0 else "cpu"
    if device == "cpu":
        return device
    match = _CUDA_INDEX.fullmatch(device)
    if device != "cuda" and match is None:
        raise ValueError(f"device must be {DEVICES}, got {device!r}")
    index = int(match.group(1)) if match else 0
    if index >= cuda_devices:
        raise ValueError(f"device={device}: torch sees {cuda_devices} CUDA devices; use auto or cpu")
    return device


def _per_row_sampler(settings: SamplingSettings, generators: list[torch.Generator]) -> LogitsProcessor:
    """A logits processor that draws each row's next token with that row's own generator.

    It returns scores that are ``-inf`` everywhere except the drawn token, so greedy decoding
    (``do_sample=False``) then picks exactly that token.  transformers' own sampling uses the
    global torch generator for the whole batch, which would tie a request's text to its batch.
    """
    import torch
    from transformers import LogitsProcessor

    class PerRowSampler(LogitsProcessor):
        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
            probs = torch.softmax(scores.float() / settings.temperature, dim=-1)
            if settings.top_p < 1.0:
                probs = keep_top_p(probs, settings.top_p)
            # The generators are CPU ones: the draw happens there, on any device.
            chosen = torch.stack(
                [torch.multinomial(row, 1, generator=gen)[0] for row, gen in zip(probs.cpu(), generators, strict=True)]
            ).to(scores.device)
            forced = torch.full_like(scores, float("-inf"))
            forced[torch.arange(scores.shape[0]), chosen] = 0.0
            return forced

    return PerRowSampler()


def _stop_string_criteria(stops: StopStrings, prompt_width: int, ended_at: list[int | None]) -> StoppingCriteria:
    """A ``generate`` stopping criterion for ``stops`` that sets ``ended_at[row]`` to the reply length at the hit.

    The caller's list is written, not a field of the criterion's: the criterion's class is made here
    (transformers is imported late), so no type outside this function could name that field.
    """
    import torch
    from transformers import StoppingCriteria

    class EndAtStopString(StoppingCriteria):
        def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor, **kwargs: Any) -> torch.Tensor:
            replies = input_ids[:, prompt_width:]
            for row, ended in enumerate(ended_at):
                # A row that ended (here or at a stop token) only grows padding; it is not searched again.
                if ended is None and stops.completed_by_last(replies[row, -stops.window :].tolist()):
                    ended_at[row] = replies.shape[1]
            return torch.tensor([ended is not None for ended in ended_at], device=input_ids.device)

    return EndAtStopString()


class HFAgent:
    """Batched chat generation with a local transformers causal LM (left padding, chat template)."""

    acts_by_tools = True

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        sampling: SamplingSettings,
        generate_batch: int = 8,
        stop_strings: Sequence[str] = DEFAULT_STOP_STRINGS,
        name: str = "hf",
    ) -> None:
        if generate_batch < 1:
            raise ValueError(f"generate_batch must be >= 1, got {generate_batch}")
        if not tokenizer.chat_template:
            raise ValueError("the tokenizer has no chat template; the agent needs one to render prompts")
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token
        tokenizer.padding_side = "left"  # decoder-only: new tokens must follow every prompt directly
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.sampling = sampling
        self.generate_batch = generate_batch
        self.name = name
        self._stop_ids = stop_token_ids(model, tokenizer)
        self._stop_strings = StopStrings(tokenizer, stop_strings)

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        replies: list[AgentReply] = []
        for start in range(0, len(requests), self.generate_batch):
            replies.extend(self._generate(requests[start : start + self.generate_batch]))
        return replies

    def render(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> str:
        """The exact prompt text the model sees for ``messages`` (and ``tools``, in tools mode)."""
        if tools is None:
            return self.tokenizer.apply_chat_template(messages, add_generation_prompt=True, tokenize=False)
        check_renders_tools(self.tokenizer.chat_template, self.name)
        return self.tokenizer.apply_chat_template(
            template_messages(messages), tools=tools, add_generation_prompt=True, tokenize=False
        )

    def _generate(self, batch: Sequence[AgentRequest]) -> list[AgentReply]:
        import torch

        prompts = [self.render(request.messages, request.tools) for request in batch]
        # The chat template already places any special tokens the model expects.
        encoded = self.tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
        encoded = encoded.to(self.model.device)
        options: dict[str, Any] = {
            "max_new_tokens": self.sampling.max_new_tokens,
            "do_sample": False,
            "pad_token_id": self.tokenizer.pad_token_id,
            "eos_token_id": sorted(self._stop_ids),
            # Blank out sampling defaults from the checkpoint's generation_config: our own
            # processor does the sampling.
            "temperature": None,
            "top_p": None,
            "top_k": None,
        }
        if self.sampling.temperature > 0:
            generators = [torch.Generator().manual_seed(request_seed(self.sampling.sampling_seed, r)) for r in batch]
            options["logits_processor"] = [_per_row_sampler(self.sampling, generators)]
        prompt_width = encoded["input_ids"].shape[1]
        ended_at: list[int | None] = [None] * len(batch)
        if self._stop_strings.strings:
            options["stopping_criteria"] = [_stop_string_criteria(self._stop_strings, prompt_width, ended_at)]
        with torch.inference_mode():
            output = self.model.generate(**encoded, **options)
        prompt_lengths = encoded["attention_mask"].sum(dim=1).tolist()
        replies = [
            self._reply(row[prompt_width:].tolist(), int(prompt_length), string_end=end)
            for row, prompt_length, end in zip(output, prompt_lengths, ended_at, strict=True)
        ]
        return [reply if r.tools is None else with_tool_calls(reply) for r, reply in zip(batch, replies, strict=True)]

    def _reply(self, new_ids: list[int], prompt_tokens: int, *, string_end: int | None = None) -> AgentReply:
        # Rows that stopped early are padded to the longest row; count up to the stop token or
        # to the end of the stop string (``string_end`` reply tokens), whichever came first.
        # A row with neither ran into max_new_tokens (generation ends no other way).
        stop = next((i + 1 for i, token in enumerate(new_ids) if token in self._stop_ids), None)
        if string_end is not None and (stop is None or string_end < stop):
            stop = string_end
        length = len(new_ids) if stop is None else stop
        # No space clean-up: it is meant for WordPiece and would alter BPE text.
        text = self.tokenizer.decode(new_ids[:length], skip_special_tokens=True, clean_up_tokenization_spaces=False)
        return AgentReply(
            text=text,
            prompt_tokens=prompt_tokens,
            completion_tokens=length,
            finish_reason="length" if stop is None else "stop",
        )

    def close(self) -> None:
        self.model = None


def make_hf_agent(
    model: str = "smollm2-135m",
    *,
    temperature: float = EVAL_SAMPLING.temperature,
    top_p: float = EVAL_SAMPLING.top_p,
    max_new_tokens: int = EVAL_SAMPLING.max_new_tokens,
    sampling_seed: int = EVAL_SAMPLING.sampling_seed,
    generate_batch: int = 16,
    stop_strings: Sequence[str] = DEFAULT_STOP_STRINGS,
    num_threads: int | str | None = AUTO_THREADS,
    dtype: str = "float32",
    device: str = "auto",
    name: str | None = None,
) -> HFAgent:
    """Factory behind ``make_agent("hf", ...)``.

    ``num_threads``: torch's intra-op thread count (process-wide), ``"auto"`` for the cores
    free when the agent starts (:func:`~ragen_bench.agents.local_models.free_cores`);
    ``device``: see :func:`resolve_device` (checked before the model loads).
    """
    import torch

    placed = resolve_device(device, torch.cuda.device_count())
    loaded_model, tokenizer, sampling = load_for_sampling(
        model, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
        sampling_seed=sampling_seed, num_threads=num_threads, dtype=dtype,
    )
    return HFAgent(
        loaded_model.to(placed),
        tokenizer,
        sampling=sampling,
        generate_batch=generate_batch,
        stop_strings=stop_strings,
        name=name or f"hf:{model}",
    )
