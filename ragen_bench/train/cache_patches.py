"""Patches to transformers' attention and KV cache that make the policy agent's batched decoding cheap.

* :func:`grouped_decode_attention`: inside the block, an ``sdpa`` model decodes single
  positions with :func:`decode_attention` (each key-value head serving its group of query
  heads), every other call unchanged.
* :func:`growing_layer_class`: a cache layer that writes each step's keys and values into
  spare room instead of concatenating the whole cache.

Both leave what the model computes unchanged (tests/test_starpo_rollout.py compares them
with plain ``sdpa`` and ``DynamicLayer``).  transformers is imported inside the functions.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

GROUPED_DECODE = "ragen_grouped_decode"


@contextmanager
def grouped_decode_attention(model: Any) -> Iterator[None]:
    """Inside the block a model that attends with ``sdpa`` decodes single positions with :func:`decode_attention`.

    Every other call (a prefill, a model with another attention) is unchanged.  The setting is
    the model's, shared with whoever trains it, so it is put back on leaving the block.
    """
    config = model.config
    previous = config._attn_implementation
    if previous != "sdpa":
        yield
        return
    register_grouped_decode()
    config._attn_implementation = GROUPED_DECODE
    try:
        yield
    finally:
        config._attn_implementation = previous


@functools.cache
def register_grouped_decode() -> None:
    from transformers import AttentionInterface
    from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

    AttentionInterface.register(GROUPED_DECODE, decode_attention)
    AttentionMaskInterface.register(GROUPED_DECODE, sdpa_mask)  # the same masks as sdpa gets


def decode_attention(
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
def growing_layer_class() -> type:
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

