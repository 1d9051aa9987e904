"""The policy agent: rollouts that train on what was sampled.

:class:`PolicyAgent` is an agent (:mod:`ragen_bench.chat.protocol`) backed by a local
``transformers`` causal LM.  It runs its own decoding loop instead of ``generate`` so that it
can keep, for every turn, the prompt ids, the **sampled** ids and their log-probs under the
distribution they were drawn from, and so that requests with identical prompts (every first
turn of a GRPO group) are prefilled once and then sampled as a group from one shared cache.

The token context of an episode is built once and only extended (docs/starpo.md, "Rollouts"):
turn 1's prompt is the chat template's rendering of the request's messages, exactly what the
``hf`` agent and the eval harness send; turn *k* > 1's prompt is turn *k*-1's prompt, the ids
sampled at turn *k*-1, and the tokenised template text that follows that reply (its
end-of-turn token unless it was sampled, the next user message and the generation prompt).
The model therefore sees its own sampled ids in its history, never a re-tokenised or
normalised rewrite, and every turn's prompt is a prefix of the episode's training row.
Under a context window (``extend_context=False``: RAGEN-2's ``limited_multi_turn`` and
``single_turn``) a turn's prompt is not an extension of the last one; it is then the chat
template's rendering of the messages the request carries, exactly what the ``hf`` agent sends
at that turn, and each turn becomes its own training row
(:func:`ragen_bench.train.batch.build_batch` with ``per_turn``).

The layout itself is :class:`ragen_bench.chat.tokens.TokenLayout`'s; the decoding loop is
:class:`ragen_bench.train.sampler.Sampler`'s; :func:`ragen_bench.train.batch.build_batch`
turns finished trajectories and the agent's samples into padded tensors.

torch is imported inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ragen_bench.agents.local_models import AUTO_THREADS, DEFAULT_STOP_STRINGS, load_for_sampling, stop_token_ids
from ragen_bench.agents.sampling import SamplingSettings, check_temperature, request_seed
from ragen_bench.chat.protocol import AgentError, AgentReply, AgentRequest
from ragen_bench.chat.tokens import TokenLayout, TokenLayoutError
from ragen_bench.train.config import RolloutConfig
from ragen_bench.train.sampler import Sampler, TurnSample, _RowCache
from ragen_bench.train.stops import ReplyStops

if TYPE_CHECKING:
    # Types only: models arrive loaded; this module never imports transformers or peft to run.
    from peft import PeftModel
    from transformers import PreTrainedModel

__all__ = ["DEFAULT_STOP_STRINGS", "PolicyAgent", "TurnSample", "make_policy_agent"]


@dataclass
class _EpisodeContext:
    """The last request an episode sent, every turn sampled for it so far, and its cache."""

    messages: list[dict[str, str]]
    samples: list[TurnSample] = field(default_factory=list)
    cache: _RowCache | None = None


class PolicyAgent:
    """Batched sampling from a local causal LM that records the sampled ids and log-probs.

    Sampling follows the ``hf`` agent: each request draws with its own ``torch.Generator``
    seeded from ``(sampling_seed, episode_key, turn)``, from ``softmax(logits / T)`` cut to
    the top-p nucleus (the same distribution; the draws themselves differ, see ``_choose``).
    Generation of a reply stops at a stop token (the model's and the tokenizer's
    end-of-sequence ids), right after the token that completes one of ``stop_strings``
    (then the end-of-turn token is appended, so the reply is closed the way the template
    closes it), or at ``max_new_tokens``.

    ``share_prompts``: requests of one ``act`` chunk whose prompt ids are equal are
    prefilled once and their cache rows copied (off: every request is prefilled, the naive
    batching kept for comparison).  ``reuse_cache``: each episode's keys and values are kept
    between turns, so a later turn prefills only the ids its context gained (off: the whole
    context again); the trainer frees them with :meth:`pop_samples`.  ``generate_batch``
    requests are decoded together; keep whole groups in one chunk.  Temperature 0 is refused: greedy decoding has no sampling
    distribution to record (evaluate greedily with the ``hf`` agent).  ``extend_context``
    (the full history): turn *k*'s prompt extends turn *k*-1's ids; off (a context window):
    every turn's prompt is the rendering of its request's messages, prefilled afresh.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        sampling: SamplingSettings,
        stop_strings: Sequence[str] = DEFAULT_STOP_STRINGS,
        generate_batch: int = 64,
        share_prompts: bool = True,
        reuse_cache: bool = True,
        extend_context: bool = True,
        name: str = "policy",
    ) -> None:
        try:
            check_temperature(sampling.temperature, greedy=False)
        except ValueError as refused:
            raise ValueError(f"policy agent {name!r}: {refused}") from None
        if generate_batch < 1:
            raise ValueError(f"policy agent {name!r}: generate_batch must be >= 1, got {generate_batch}")
        if not tokenizer.chat_template:
            raise ValueError(f"policy agent {name!r}: the tokenizer has no chat template")
        if tokenizer.eos_token_id is None:
            raise ValueError(f"policy agent {name!r}: the tokenizer names no end-of-turn (eos) token")
        stops = ReplyStops(
            tokenizer, stop_strings, stop_ids=stop_token_ids(model, tokenizer), context=f"policy agent {name!r}: "
        )
        self.tokenizer = tokenizer
        self.layout = TokenLayout(tokenizer)
        self.stop_strings = stops.stop_strings
        self.generate_batch = generate_batch
        self.extend_context = extend_context
        self.name = name
        self.sampler = Sampler(
            model.eval(),
            sampling=sampling,
            stops=stops,
            pad_id=tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id,
            share_prompts=share_prompts,
            reuse_cache=reuse_cache,
        )
        self._episodes: dict[str, _EpisodeContext] = {}

    @property
    def model(self) -> PreTrainedModel | PeftModel | None:
        """The model the sampler decodes with (``None`` after :meth:`close`)."""
        return self.sampler.model

    @property
    def sampling(self) -> SamplingSettings:
        return self.sampler.sampling

    @sampling.setter
    def sampling(self, sampling: SamplingSettings) -> None:
        self.sampler.sampling = sampling

    @property
    def end_id(self) -> int:
        return self.sampler.end_id

    @property
    def stop_ids(self) -> frozenset[int]:
        return self.sampler.stop_ids

    @property
    def pad_id(self) -> int:
        return self.sampler.pad_id

    @property
    def share_prompts(self) -> bool:
        return self.sampler.share_prompts

    @property
    def reuse_cache(self) -> bool:
        return self.sampler.reuse_cache

    # -- the agent protocol -----------------------------------------------------------

    def act(self, requests: Sequence[AgentRequest]) -> list[AgentReply]:
        import torch

        prompts = [self._prompt_ids(request) for request in requests]
        caches = [self._cache_for(request) for request in requests]
        samples: list[TurnSample] = []
        new_caches: list[_RowCache | None] = []
        for start in range(0, len(requests), self.generate_batch):
            chunk = slice(start, start + self.generate_batch)
            generators = [
                torch.Generator().manual_seed(request_seed(self.sampling.sampling_seed, request))
                for request in requests[chunk]
            ]
            chunk_samples, chunk_caches = self.sampler.sample(prompts[chunk], caches[chunk], generators)
            samples.extend(chunk_samples)
            new_caches.extend(chunk_caches)
        for request, sample, cache in zip(requests, samples, new_caches, strict=True):
            if request.turn == 1:
                self._episodes[request.episode_key] = _EpisodeContext(request.messages)
            context = self._episodes[request.episode_key]
            context.messages = request.messages
            context.samples.append(sample)
            context.cache = cache
        return [self._reply(sample) for sample in samples]

    def _cache_for(self, request: AgentRequest) -> _RowCache | None:
        """The episode's cache from its previous turn (every id of that context but the last)."""
        # A windowed prompt is no extension of the last one, so no earlier cache is a prefix of it.
        if request.turn == 1 or not self.reuse_cache or not self.extend_context:
            return None
        return self._episodes[request.episode_key].cache

    def close(self) -> None:
        self.sampler.model = None

    # -- samples for the trainer ---------------------------------------------------------

    def samples(self, episode_key: str) -> list[TurnSample]:
        """The turns sampled so far for ``episode_key`` (its latest run from turn 1)."""
        context = self._episodes.get(episode_key)
        if context is None:
            raise KeyError(f"policy agent {self.name!r} sampled no episode {episode_key!r}")
        return list(context.samples)

    def pop_samples(self, episode_keys: Iterable[str]) -> dict[str, list[TurnSample]]:
        """The samples of ``episode_keys``, forgotten here (call once the episodes are done)."""
        taken = {key: self.samples(key) for key in episode_keys}
        for key in taken:
            del self._episodes[key]
        return taken

    # -- prompts -------------------------------------------------------------------------

    def render(self, messages: list[dict[str, str]], *, generation_prompt: bool = True) -> str:
        """The chat template's text for ``messages`` (what the ``hf`` agent sends at turn 1)."""
        return self.layout.render(messages, generation_prompt=generation_prompt)

    def _prompt_ids(self, request: AgentRequest) -> list[int]:
        if request.turn == 1 or not self.extend_context:
            return self.layout.prompt_ids(request.messages)
        context = self._episodes.get(request.episode_key)
        if context is None or len(context.samples) != request.turn - 1:
            raise AgentError(
                f"policy agent {self.name!r}: episode {request.episode_key!r} asked for turn {request.turn} "
                "without its earlier turns from this agent (it extends each episode's token context from turn 1)"
            )
        before, messages = context.messages, request.messages
        if len(messages) != len(before) + 2 or messages[: len(before)] != before or messages[-2]["role"] != "assistant":
            raise AgentError(
                f"policy agent {self.name!r}: turn {request.turn} of {request.episode_key!r} does not extend the "
                "previous prompt by one reply and one user message; it needs the full history (history_window=None) "
                "or extend_context=False"
            )
        last = context.samples[-1]
        return [*last.prompt_ids, *last.response_ids, *self._bridge_ids(messages, ended=last.ended)]

    def _bridge_ids(self, messages: list[dict[str, str]], *, ended: bool) -> list[int]:
        """The layout's ids after the last reply: its closing, the new user message, the generation prompt."""
        try:
            return self.layout.bridge_ids(messages, ended=ended)
        except TokenLayoutError as error:
            raise AgentError(f"policy agent {self.name!r}: {error}") from None

    def hits_stop_string(self, response_ids: Sequence[int]) -> bool:
        """Whether the last id completes a stop string (earlier hits would have stopped the reply)."""
        return self.sampler.hits_stop_string(response_ids)

    def _reply(self, sample: TurnSample) -> AgentReply:
        # No space clean-up: it is meant for WordPiece and would alter BPE text (as in the hf agent).
        text = self.tokenizer.decode(
            list(sample.response_ids), skip_special_tokens=True, clean_up_tokenization_spaces=False
        )
        return AgentReply(
            text=text,
            prompt_tokens=len(sample.prompt_ids),
            completion_tokens=len(sample.response_ids),
            finish_reason=sample.finish_reason,
        )


_ROLLOUT = RolloutConfig()


def make_policy_agent(
    model: str = "smollm2-135m",
    *,
    # A trainer's sampling defaults: rollout.* of `ragen-bench train` (RolloutConfig), not eval's greedy ones.
    temperature: float = _ROLLOUT.temperature,
    top_p: float = _ROLLOUT.top_p,
    max_new_tokens: int = _ROLLOUT.max_new_tokens,
    sampling_seed: int = 0,
    stop_strings: Sequence[str] = DEFAULT_STOP_STRINGS,
    generate_batch: int = _ROLLOUT.generate_batch,
    share_prompts: bool = True,
    reuse_cache: bool = True,
    num_threads: int | str | None = AUTO_THREADS,
    dtype: str = "float32",
    name: str | None = None,
) -> PolicyAgent:
    """Factory for ``make_agent("ragen_bench.train.policy_agent:make_policy_agent", ...)`` (model: path or alias)."""
    loaded_model, tokenizer, sampling = load_for_sampling(
        model, temperature=temperature, top_p=top_p, max_new_tokens=max_new_tokens,
        sampling_seed=sampling_seed, num_threads=num_threads, dtype=dtype,
    )
    return PolicyAgent(
        loaded_model,
        tokenizer,
        sampling=sampling,
        stop_strings=stop_strings,
        generate_batch=generate_batch,
        share_prompts=share_prompts,
        reuse_cache=reuse_cache,
        name=name or f"policy:{Path(str(model)).name}",
    )


# -- the training batch -------------------------------------------------------------------
