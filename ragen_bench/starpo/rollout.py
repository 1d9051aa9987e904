"""Rollouts that train on what was sampled: the policy agent and the training-batch builder.

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

:func:`build_batch` turns finished trajectories and the agent's samples into padded tensors.

torch is imported inside the functions that need it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ragen_bench.agents.hf import DEFAULT_STOP_STRINGS, StopStrings, keep_top_p, load_for_sampling, stop_token_ids
from ragen_bench.agents.sampling import SamplingSettings, request_seed
from ragen_bench.chat.protocol import AgentError, AgentReply, AgentRequest
from ragen_bench.chat.trajectory import Trajectory


@dataclass(frozen=True)
class TurnSample:
    """What the policy produced for one turn.

    ``prompt_ids`` is the exact context the model was given; ``response_ids`` the tokens it
    produced, in order; ``log_probs[i]`` the log-probability of ``response_ids[i]`` under
    the distribution it was drawn from (temperature and top-p applied).  ``ended`` says that
    the last response id is the end-of-turn token, which is then part of the response:
    sampled, or appended after a stop string (its log-prob is then the tempered model's,
    without the top-p cut, see docs/starpo.md).  ``finish_reason`` is ``"stop"`` (end
    token, another stop token or a stop string) or ``"length"`` (``max_new_tokens``).
    """

    prompt_ids: tuple[int, ...]
    response_ids: tuple[int, ...]
    log_probs: tuple[float, ...]
    finish_reason: str
    ended: bool


@dataclass
class _RowCache:
    """One sequence's keys and values per layer (``[heads, width, head_dim]``) and its attention mask.

    The mask has holes where the batch it came from was padded; ``length`` counts real tokens.
    """

    keys: list[Any]
    values: list[Any]
    mask: Any

    @property
    def length(self) -> int:
        return int(self.mask.sum())


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
    distribution to record (evaluate greedily with the ``hf`` agent).
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
        name: str = "policy",
    ) -> None:
        if sampling.temperature <= 0:
            raise ValueError(
                f"policy agent {name!r}: temperature must be > 0 (it records sampling log-probs), "
                f"got {sampling.temperature}"
            )
        if generate_batch < 1:
            raise ValueError(f"policy agent {name!r}: generate_batch must be >= 1, got {generate_batch}")
        if not tokenizer.chat_template:
            raise ValueError(f"policy agent {name!r}: the tokenizer has no chat template")
        if tokenizer.eos_token_id is None:
            raise ValueError(f"policy agent {name!r}: the tokenizer names no end-of-turn (eos) token")
        self.model = model.eval()
        self.tokenizer = tokenizer
        self.sampling = sampling
        self._stops = StopStrings(tokenizer, stop_strings, context=f"policy agent {name!r}: ")
        self.stop_strings = self._stops.strings
        self.generate_batch = generate_batch
        self.share_prompts = share_prompts
        self.reuse_cache = reuse_cache
        self.name = name
        self.end_id = tokenizer.eos_token_id
        self.stop_ids = stop_token_ids(model, tokenizer) | {self.end_id}
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.end_id
        self._episodes: dict[str, _EpisodeContext] = {}

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
            chunk_samples, chunk_caches = self._sample(prompts[chunk], caches[chunk], generators)
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
        if request.turn == 1 or not self.reuse_cache:
            return None
        return self._episodes[request.episode_key].cache

    def close(self) -> None:
        self.model = None

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
        return self.tokenizer.apply_chat_template(messages, add_generation_prompt=generation_prompt, tokenize=False)

    def _encode(self, text: str) -> list[int]:
        # The chat template already places the special tokens the model expects.
        return self.tokenizer.encode(text, add_special_tokens=False)

    def _prompt_ids(self, request: AgentRequest) -> list[int]:
        if request.turn == 1:
            return self._encode(self.render(request.messages))
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
                "previous prompt by one reply and one user message; it needs the full history (history_window=None)"
            )
        last = context.samples[-1]
        return [*last.prompt_ids, *last.response_ids, *self._bridge_ids(messages, ended=last.ended)]

    def _bridge_ids(self, messages: list[dict[str, str]], *, ended: bool) -> list[int]:
        """Ids of the template text after the last reply: its closing, the new user message, the generation prompt."""
        before = self.render(messages[:-2])
        through = self.render(messages[:-1], generation_prompt=False)
        whole = self.render(messages)
        reply_end = len(before) + len(messages[-2]["content"])
        if through[:reply_end] != before + messages[-2]["content"] or not whole.startswith(through):
            raise AgentError(
                f"policy agent {self.name!r}: the chat template is not prefix-stable (adding a message "
                "changed the text of earlier ones), so a token context cannot be extended"
            )
        text = through[reply_end:] + whole[len(through) :]
        if ended:
            end_text = self.tokenizer.decode([self.end_id])
            if not text.startswith(end_text):
                raise AgentError(
                    f"policy agent {self.name!r}: the chat template does not close a reply with the "
                    f"end-of-turn token {end_text!r}"
                )
            text = text[len(end_text) :]
        return self._encode(text)

    # -- decoding --------------------------------------------------------------------------

    def _sample(
        self, prompts: list[list[int]], caches: list[_RowCache | None], generators: list[Any]
    ) -> tuple[list[TurnSample], list[_RowCache | None]]:
        """Decode one chunk: prefill what no cache holds (each distinct prompt once), then sample row by row.

        Returns the samples and, with ``reuse_cache``, each row's cache when it finished.
        """
        import torch

        new_ids = [prompt if cache is None else prompt[cache.length :] for prompt, cache in zip(prompts, caches)]
        if self.share_prompts:
            # Only rows without a cache can share: a cached row's new ids continue its own context.
            distinct: dict[Any, int] = {}
            source = [
                distinct.setdefault(tuple(ids) if cache is None else ("cached", row), len(distinct))
                for row, (ids, cache) in enumerate(zip(new_ids, caches))
            ]
            # Numbers are handed out in order of first appearance, so a row is new when its number is next.
            unique_rows = []
            for row, unique in enumerate(source):
                if unique == len(unique_rows):
                    unique_rows.append(row)
        else:
            source = unique_rows = list(range(len(prompts)))
        past, past_mask = self._stack_caches([caches[row] for row in unique_rows])
        input_ids, new_mask = left_pad([new_ids[row] for row in unique_rows], self.pad_id)
        attention = torch.cat([past_mask, new_mask], dim=1)
        positions = ((attention.cumsum(-1) - 1).clamp(min=0))[:, past_mask.shape[1] :]
        rows = _Rows(prompts, generators)
        saved: list[_RowCache | None] = [None] * len(prompts)
        with torch.inference_mode(), _grouped_decode_attention(self.model):
            out = self.model(
                input_ids=input_ids,
                attention_mask=attention,
                position_ids=positions,
                past_key_values=past,
                use_cache=True,
                logits_to_keep=1,
            )
            cache, index = out.past_key_values, torch.tensor(source)
            if len(unique_rows) != len(prompts):
                cache.reorder_cache(index)  # an index_select on the batch axis: repeats a shared prompt's rows
            logits, attention, next_position = out.logits[index, -1], attention[index], positions[index, -1] + 1
            while True:
                tokens = self._choose(logits, rows)
                live = rows.live
                keep = rows.advance(tokens, self)
                if self.reuse_cache:
                    for j in sorted(set(range(len(live))) - set(keep)):
                        saved[live[j]] = _row_cache(cache, attention, j)
                if not keep:
                    return rows.finished(), saved
                if len(keep) < len(tokens):
                    kept = torch.tensor(keep)
                    cache.batch_select_indices(kept)
                    tokens, attention, next_position = tokens[kept], attention[kept], next_position[kept]
                attention = torch.cat([attention, attention.new_ones(len(keep), 1)], dim=1)
                out = self.model(
                    input_ids=tokens[:, None],
                    attention_mask=attention,
                    position_ids=next_position[:, None],
                    past_key_values=cache,
                    use_cache=True,
                )
                logits, next_position = out.logits[:, -1], next_position + 1

    def _new_cache(self) -> Any:
        """An empty batch cache whose full-attention layers grow in place (see :func:`_growing_layer_class`)."""
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        cache = DynamicCache(config=self.model.config)
        room = self.sampling.max_new_tokens + 1
        grow = _growing_layer_class()
        cache.layers = [grow(room) if type(layer) is DynamicLayer else layer for layer in cache.layers]
        return cache

    def _stack_caches(self, caches: list[_RowCache | None]) -> tuple[Any, Any]:
        """One batch cache from per-row caches, right-aligned (rows without one: all padding), and its mask."""
        import torch

        batch = self._new_cache()
        present = [cache for cache in caches if cache is not None]
        if not present:
            return batch, torch.zeros((len(caches), 0), dtype=torch.long)
        width = max(cache.mask.shape[0] for cache in present)
        mask = torch.zeros((len(caches), width), dtype=torch.long)
        for layer in range(len(present[0].keys)):
            heads, _, dim = present[0].keys[layer].shape
            keys = present[0].keys[layer].new_zeros((len(caches), heads, width, dim))
            values = torch.zeros_like(keys)
            for row, cache in enumerate(caches):
                if cache is not None:
                    keys[row, :, width - cache.mask.shape[0] :] = cache.keys[layer]
                    values[row, :, width - cache.mask.shape[0] :] = cache.values[layer]
            batch.layers[layer].update(keys, values)
        for row, cache in enumerate(caches):
            if cache is not None:
                mask[row, width - cache.mask.shape[0] :] = cache.mask
        return batch, mask

    def _choose(self, logits: Any, rows: _Rows) -> Any:
        """Draw each live row's next token (or force the end token) and record its log-prob.

        A draw inverts the cumulative distribution at one uniform number from the row's own
        generator: one ``searchsorted`` for the batch, where ``torch.multinomial`` per row
        cost a sixth of a SmolLM2 group's decoding time.
        """
        import torch

        scaled = logits.float() / self.sampling.temperature
        log_probs = torch.log_softmax(scaled, dim=-1)
        probs = torch.softmax(scaled, dim=-1)
        if self.sampling.top_p < 1.0:
            probs = keep_top_p(probs, self.sampling.top_p)
        cumulative = probs.double().cumsum(dim=-1)
        generators = [rows.generators[row] for row in rows.live]
        uniforms = torch.stack([torch.rand((), generator=g, dtype=torch.float64) for g in generators])
        # right=True skips tokens of probability 0 (their cumulative value equals the previous one).
        tokens = torch.searchsorted(cumulative, (uniforms * cumulative[:, -1])[:, None], right=True)[:, 0]
        tokens = tokens.clamp(max=probs.shape[-1] - 1)
        chosen = log_probs.gather(-1, tokens[:, None])[:, 0]
        if self.sampling.top_p < 1.0:
            # Renormalised to the nucleus: log p(token | nucleus) = log p(token) - log(mass kept).
            chosen = chosen - torch.log(probs.sum(dim=-1))
        forced = torch.tensor([row in rows.forcing for row in rows.live])
        if forced.any():
            tokens = torch.where(forced, self.end_id, tokens)
            chosen = torch.where(forced, log_probs[:, self.end_id], chosen)
        for row, token, log_prob in zip(rows.live, tokens.tolist(), chosen.tolist(), strict=True):
            rows.record(row, token, log_prob)
        return tokens

    def hits_stop_string(self, response_ids: Sequence[int]) -> bool:
        """Whether the last id completes a stop string (earlier hits would have stopped the reply)."""
        return self._stops.completed_by_last(response_ids)

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


class _Rows:
    """Per-row decoding state of one chunk: the ids and log-probs so far, and which rows are live."""

    def __init__(self, prompts: list[list[int]], generators: list[Any]) -> None:
        self.prompts = prompts
        self.generators = generators
        self.ids: list[list[int]] = [[] for _ in prompts]
        self.log_probs: list[list[float]] = [[] for _ in prompts]
        self.live = list(range(len(prompts)))
        self.forcing: set[int] = set()  # rows whose next token is the end token (a stop string was hit)
        self.outcome: list[tuple[str, bool] | None] = [None] * len(prompts)

    def record(self, row: int, token: int, log_prob: float) -> None:
        self.ids[row].append(token)
        self.log_probs[row].append(log_prob)

    def advance(self, tokens: Any, agent: PolicyAgent) -> list[int]:
        """Settle each live row after its new token; return the positions (in ``live``) that go on."""
        keep = []
        for j, row in enumerate(self.live):
            token = int(tokens[j])
            if row in self.forcing or token in agent.stop_ids:
                self.outcome[row] = ("stop", token == agent.end_id)
            elif agent.hits_stop_string(self.ids[row]):
                self.forcing.add(row)
                keep.append(j)
            elif len(self.ids[row]) >= agent.sampling.max_new_tokens:
                self.outcome[row] = ("length", False)
            else:
                keep.append(j)
        self.live = [self.live[j] for j in keep]
        return keep

    def finished(self) -> list[TurnSample]:
        samples = []
        for row, outcome in enumerate(self.outcome):
            assert outcome is not None  # every row leaves the loop through advance()
            samples.append(
                TurnSample(
                    prompt_ids=tuple(self.prompts[row]),
                    response_ids=tuple(self.ids[row]),
                    log_probs=tuple(self.log_probs[row]),
                    finish_reason=outcome[0],
                    ended=outcome[1],
                )
            )
        return samples


def left_pad(sequences: Sequence[Sequence[int]], pad_id: int) -> tuple[Any, Any]:
    """``(input_ids, attention_mask)`` with every sequence right-aligned (new tokens follow each directly)."""
    import torch

    width = max(len(sequence) for sequence in sequences)
    input_ids = torch.full((len(sequences), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(sequences), width), dtype=torch.long)
    for row, sequence in enumerate(sequences):
        if sequence:
            input_ids[row, width - len(sequence) :] = torch.tensor(sequence, dtype=torch.long)
            attention[row, width - len(sequence) :] = 1
    return input_ids, attention


GROUPED_DECODE = "ragen_grouped_decode"


@contextmanager
def _grouped_decode_attention(model: Any) -> Iterator[None]:
    """Inside the block a model that attends with ``sdpa`` decodes single positions with :func:`_decode_attention`.

    Every other call (a prefill, a model with another attention) is unchanged.  The setting is
    the model's, shared with whoever trains it, so it is put back on leaving the block.
    """
    config = model.config
    previous = config._attn_implementation
    if previous != "sdpa":
        yield
        return
    _register_grouped_decode()
    config._attn_implementation = GROUPED_DECODE
    try:
        yield
    finally:
        config._attn_implementation = previous


@functools.cache
def _register_grouped_decode() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(GROUPED_DECODE, _decode_attention)
    AttentionMaskInterface.register(GROUPED_DECODE, sdpa_mask)  # the same masks as sdpa gets


def _decode_attention(
    module: Any, query: Any, key: Any, value: Any, attention_mask: Any, *, scaling: float, dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[Any, None]:
    """Attention for one query position per row, each key-value head serving its group of query heads.

    transformers' ``sdpa`` path on a CPU either copies every key and value once per query head
    of its group (with a mask) or takes a slow grouped kernel: at one query position this
    plain product of the grouped queries with the cached keys cost about half as much.
    Longer queries go to ``sdpa``.
    """
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    if query.shape[2] != 1 or dropout:
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    batch, heads, _, dim = query.shape
    grouped = query.reshape(batch, key.shape[1], heads // key.shape[1], dim)
    scores = torch.matmul(grouped, key.transpose(-1, -2)) * scaling
    if attention_mask is not None:  # [batch, 1, 1, keys], True where a row may attend
        scores = scores.masked_fill(attention_mask.logical_not(), float("-inf"))
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    # sdpa's layout: [batch, positions, heads, dim]
    return torch.matmul(weights, value).reshape(batch, heads, 1, dim).transpose(1, 2), None


@functools.cache
def _growing_layer_class() -> type:
    """A transformers cache layer that writes each step's keys and values into spare room.

    transformers' ``DynamicLayer`` concatenates the whole cache with the new position at every
    step: on a CPU that copy took a third of a SmolLM2 group's decoding time.  This layer
    keeps ``room`` free positions after its contents and writes into them; ``keys`` and
    ``values`` stay views of the first ``length`` positions, so every reader sees exactly
    what a ``DynamicLayer`` would hold.  Anything that replaces ``keys`` (selecting or
    reordering rows) makes the next update move the contents into a fresh buffer.
    """
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        def __init__(self, room: int) -> None:
            super().__init__()
            self.room = room
            self.buffers: tuple[Any, Any] | None = None

        def update(self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            start = self.get_seq_length()
            end = start + key_states.shape[-2]
            if not self._in_place(end):
                self._move(end + self.room, key_states, value_states)
            keys, values = self.buffers
            keys[:, :, start:end] = key_states
            values[:, :, start:end] = value_states
            self.keys, self.values = keys[:, :, :end], values[:, :, :end]
            return self.keys, self.values

        def _in_place(self, end: int) -> bool:
            """Whether ``keys`` is still the start of the buffer and the buffer has room up to ``end``."""
            if self.buffers is None or self.get_seq_length() == 0:
                return False
            buffer = self.buffers[0]
            return self.keys.data_ptr() == buffer.data_ptr() and end <= buffer.shape[2]

        def _move(self, width: int, key_states: Any, value_states: Any) -> None:
            start = self.get_seq_length()
            moved = []
            for held, new in ((self.keys, key_states), (self.values, value_states)):
                batch, heads, _, dim = new.shape
                buffer = new.new_empty((batch, heads, width, dim))
                if start:
                    buffer[:, :, :start] = held
                moved.append(buffer)
            self.buffers = (moved[0], moved[1])

    return GrowingLayer


def _row_cache(cache: Any, attention: Any, row: int) -> _RowCache:
    """Row ``row`` of a batch cache, without its leading padding, copied (a view would keep the batch alive)."""
    mask = attention[row]
    first = int(mask.nonzero()[0])
    return _RowCache(
        keys=[layer.keys[row, :, first:].clone() for layer in cache.layers],
        values=[layer.values[row, :, first:].clone() for layer in cache.layers],
        mask=mask[first:].clone(),
    )


def make_policy_agent(
    model: str = "smollm2-135m",
    *,
    temperature: float = 1.0,
    top_p: float = 1.0,
    max_new_tokens: int = 128,
    sampling_seed: int = 0,
    stop_strings: Sequence[str] = DEFAULT_STOP_STRINGS,
    generate_batch: int = 64,
    share_prompts: bool = True,
    reuse_cache: bool = True,
    num_threads: int | None = None,
    dtype: str = "float32",
    name: str | None = None,
) -> PolicyAgent:
    """Factory for ``make_agent("ragen_bench.starpo.rollout:make_policy_agent", ...)`` (model: path or alias)."""
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


@dataclass(frozen=True)
class RolloutBatch:
    """Right-padded training tensors, one row per trajectory (``[batch, tokens]``).

    ``input_ids`` is the episode's whole token context: turn 1's prompt, then each reply's
    sampled ids and the template text between replies, ending with the last reply.
    ``response_mask`` is true exactly on sampled ids (each reply, and its end-of-turn token
    when it is part of the reply); position *t* is predicted by the logits at *t* - 1.
    ``old_log_probs`` holds the sampling log-probs there (0 elsewhere); ``rewards`` the
    scores (see :func:`build_batch`); ``group_ids`` the seed of each row (GRPO groups and
    the StarPO-S filter); ``scores`` each trajectory's total reward; ``prompt_lengths`` the
    length of turn 1's prompt.
    """

    input_ids: Any
    attention_mask: Any
    response_mask: Any
    old_log_probs: Any
    rewards: Any
    scores: Any
    group_ids: list[int]
    prompt_lengths: list[int]


def build_batch(
    trajectories: Sequence[Trajectory],
    samples: Mapping[str, Sequence[TurnSample]],
    *,
    pad_id: int,
    score_placement: str = "last",
) -> RolloutBatch:
    """Stack finished episodes and their :class:`TurnSample` records into a :class:`RolloutBatch`.

    ``samples`` maps each trajectory's ``episode_key`` to its turns (``PolicyAgent.pop_samples``).
    ``score_placement="last"``: the trajectory's ``total_reward`` (format penalties included) on
    its last response token; ``"turn"``: each turn's reward (env rewards + penalty) on that
    turn's last response token.  Samples that do not belong to the trajectory (another
    number of turns or tokens) or whose turns do not extend one another raise ``ValueError``.
    """
    import torch

    if score_placement not in ("last", "turn"):
        raise ValueError(f"score_placement must be 'last' or 'turn', got {score_placement!r}")
    if not trajectories:
        raise ValueError("build_batch needs at least one trajectory")
    rows = [_row(trajectory, samples, score_placement) for trajectory in trajectories]
    width = max(len(ids) for ids, _, _, _ in rows)
    shape = (len(rows), width)
    batch = {
        "input_ids": torch.full(shape, pad_id, dtype=torch.long),
        "attention_mask": torch.zeros(shape, dtype=torch.long),
        "response_mask": torch.zeros(shape, dtype=torch.bool),
        "old_log_probs": torch.zeros(shape, dtype=torch.float32),
        "rewards": torch.zeros(shape, dtype=torch.float32),
    }
    for b, (ids, mask, log_probs, rewards) in enumerate(rows):
        n = len(ids)
        batch["input_ids"][b, :n] = torch.tensor(ids, dtype=torch.long)
        batch["attention_mask"][b, :n] = 1
        batch["response_mask"][b, :n] = torch.tensor(mask, dtype=torch.bool)
        batch["old_log_probs"][b, :n] = torch.tensor(log_probs, dtype=torch.float32)
        batch["rewards"][b, :n] = torch.tensor(rewards, dtype=torch.float32)
    return RolloutBatch(
        **batch,
        scores=torch.tensor([t.total_reward for t in trajectories], dtype=torch.float32),
        group_ids=[t.seed for t in trajectories],
        prompt_lengths=[len(samples[t.episode_key][0].prompt_ids) for t in trajectories],
    )


def _row(
    trajectory: Trajectory, samples: Mapping[str, Sequence[TurnSample]], score_placement: str
) -> tuple[list[int], list[bool], list[float], list[float]]:
    """One trajectory's ids, response mask, old log-probs and rewards (checked against its samples)."""
    key = trajectory.episode_key
    turns = samples.get(key)
    if turns is None:
        raise ValueError(f"build_batch: no samples for episode {key!r}")
    if len(turns) != len(trajectory.turns) or not turns:
        raise ValueError(f"build_batch: episode {key!r} has {len(trajectory.turns)} turns but {len(turns)} samples")
    ids = [*turns[-1].prompt_ids, *turns[-1].response_ids]
    mask = [False] * len(ids)
    log_probs = [0.0] * len(ids)
    rewards = [0.0] * len(ids)
    for number, (sample, record) in enumerate(zip(turns, trajectory.turns, strict=True), start=1):
        start, end = len(sample.prompt_ids), len(sample.prompt_ids) + len(sample.response_ids)
        if record.completion_tokens != len(sample.response_ids):
            raise ValueError(
                f"build_batch: episode {key!r} turn {number}: the record has {record.completion_tokens} "
                f"completion tokens, the sample {len(sample.response_ids)}"
            )
        if tuple(ids[:start]) != sample.prompt_ids or tuple(ids[start:end]) != sample.response_ids:
            raise ValueError(f"build_batch: episode {key!r} turn {number} is not a prefix of its last turn's context")
        mask[start:end] = [True] * (end - start)
        log_probs[start:end] = sample.log_probs
        if score_placement == "turn":
            rewards[end - 1] += record.reward
    if score_placement == "last":
        rewards[len(ids) - 1] = trajectory.total_reward
    return ids, mask, log_probs, rewards
