"""Batched sampling from a local causal LM that keeps the sampled ids and their log-probs.

:class:`Sampler` decodes one chunk of prompts at a time with a KV cache: prompts no cache
holds are prefilled (each distinct prompt once, with ``share_prompts``), then every row draws
its tokens from ``softmax(logits / T)`` cut to the top-p nucleus with its own generator, and
stops by the rules of :class:`~ragen_bench.train.stops.ReplyStops`.  Each row's cache can be
kept (``reuse_cache``) so a later turn prefills only the ids its context gained.  The
transformers patches it decodes under live in :mod:`ragen_bench.train.cache_patches`.

:class:`SamplingCopy` is the policy in a lower precision for the sampler to decode with
(``rollout.dtype``), refreshed from the policy after each update; :func:`torch_threads` sets
torch's thread count for a block (``sampling_threads``).

torch is imported inside the functions that need it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ragen_bench.agents.local_models import keep_top_p
from ragen_bench.agents.sampling import SamplingSettings
from ragen_bench.train import cache_patches
from ragen_bench.train.stops import ReplyStops

if TYPE_CHECKING:
    # Types only: torch, transformers and peft are imported inside the functions that use them.
    import torch
    from peft.tuners.lora import LoraLayer
    from transformers import DynamicCache


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


class SamplingCopy:
    """A copy of ``policy`` in ``dtype`` (``model``) for the sampler; :meth:`refresh` re-copies the trained weights.

    bfloat16 runs the decode's matrix products on the CPU's bf16 units (AMX, AVX512-BF16), at
    half the memory traffic; its log-probs are not those of the fp32 policy, so the trainer
    recomputes the update's old log-probs with the policy from the sampled ids (as veRL does
    when vLLM samples) and only logs the sampler's as ``rollout/log_prob_gap``.  A LoRA
    policy's copy is its base with the adapter merged in, so decoding costs what the base
    costs; each refresh rewrites every adapted weight as base + delta, summed in the policy's
    precision and rounded once.  A fully trained policy's copy takes every trainable
    parameter.  The trainable weights of a peft policy must be its LoRA layers' (what
    :func:`ragen_bench.train.models.with_lora` makes).
    """

    def __init__(self, policy: Any, dtype: str) -> None:
        import copy

        import torch

        adapted = _lora_layers(policy)
        clone = copy.deepcopy(policy)
        if adapted:
            clone = clone.merge_and_unload()
        self.model = clone.to(getattr(torch, dtype)).eval().requires_grad_(False)
        if adapted:
            modules = dict(self.model.named_modules())
            self._pairs: list[tuple[Any, Any]] = [(modules[name].weight, layer) for name, layer in adapted.items()]
        else:
            copies = dict(self.model.named_parameters())
            self._pairs = [(copies[name], weight) for name, weight in policy.named_parameters() if weight.requires_grad]

    def refresh(self) -> None:
        """Copy the policy's current weights into the sampler's (call after each optimiser step)."""
        import torch

        with torch.no_grad():
            for target, source in self._pairs:
                target.copy_(_merged_weight(source))


def _lora_layers(policy: Any) -> dict[str, Any]:
    """A peft policy's LoRA layers by their names in the merged model ({} for a plain model)."""
    if not hasattr(policy, "peft_config"):
        return {}
    from peft.tuners.lora import LoraLayer

    return {name: module for name, module in policy.base_model.model.named_modules() if isinstance(module, LoraLayer)}


def _merged_weight(source: torch.nn.Parameter | LoraLayer) -> torch.Tensor:
    """A parameter itself, or a LoRA layer's base weight plus its active adapters' deltas."""
    if not hasattr(source, "base_layer"):
        return source
    return source.base_layer.weight + sum(source.get_delta_weight(name) for name in source.active_adapters)


@contextmanager
def torch_threads(count: int | None) -> Iterator[None]:
    """Inside the block torch runs ``count`` intra-op threads (None: as it is), then as it was.

    One thread keeps decoding steady on a shared machine: with two threads and another busy
    process on two cores, every small matrix product waits for the descheduled thread
    (docs/performance.md, "Rollouts").
    """
    import torch

    before = torch.get_num_threads()
    if count is not None:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(before)


class Sampler:
    """Decodes chunks of prompts from ``model`` (module docstring; its user: ``train.policy_agent.PolicyAgent``)."""

    def __init__(
        self,
        model: Any,
        *,
        sampling: SamplingSettings,
        stops: ReplyStops,
        pad_id: int,
        share_prompts: bool = True,
        reuse_cache: bool = True,
    ) -> None:
        self.model = model
        self.sampling = sampling
        self.stops = stops
        self.end_id = stops.end_id
        self.stop_ids = stops.stop_ids
        self.pad_id = pad_id
        self.share_prompts = share_prompts
        self.reuse_cache = reuse_cache

    def hits_stop_string(self, response_ids: Sequence[int]) -> bool:
        return self.stops.hits_stop_string(response_ids)

    def sample(
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
        with torch.inference_mode(), cache_patches.grouped_decode_attention(self.model):
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

    def _new_cache(self) -> DynamicCache:
        """An empty batch cache whose full-attention layers grow in place (see :func:`~ragen_bench.train.cache_patches.growing_layer_class`)."""
        from transformers import DynamicCache
        from transformers.cache_utils import DynamicLayer

        cache = DynamicCache(config=self.model.config)
        room = self.sampling.max_new_tokens + 1
        grow = cache_patches.growing_layer_class()
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

    def _choose(self, logits: torch.Tensor, rows: _Rows) -> torch.Tensor:
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

    def advance(self, tokens: Any, sampler: Sampler) -> list[int]:
        """Settle each live row after its new token; return the positions (in ``live``) that go on."""
        keep = []
        for j, row in enumerate(self.live):
            token = int(tokens[j])
            if row in self.forcing or token in sampler.stop_ids:
                self.outcome[row] = ("stop", token == sampler.end_id)
            elif sampler.hits_stop_string(self.ids[row]):
                self.forcing.add(row)
                keep.append(j)
            elif len(self.ids[row]) >= sampler.sampling.max_new_tokens:
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


def _row_cache(cache: Any, attention: Any, row: int) -> _RowCache:
    """Row ``row`` of a batch cache, without its leading padding, copied (a view would keep the batch alive)."""
    mask = attention[row]
    first = int(mask.nonzero()[0])
    return _RowCache(
        keys=[layer.keys[row, :, first:].clone() for layer in cache.layers],
        values=[layer.values[row, :, first:].clone() for layer in cache.layers],
        mask=mask[first:].clone(),
    )

