"""Forward passes for training: per-token log-probs and hidden states of response tokens only.

Per-token quantities are computed only where they are needed: the language-model head runs
on the hidden states of response positions alone (it is a fifth of SmolLM2's forward pass,
and the prompt is most of each row), and the leading tokens that every row of a batch shares
(a GRPO group's first prompt) go through the model once.  torch is imported here; the model
is any ``transformers`` causal LM, optionally wrapped by ``peft``.
"""

from __future__ import annotations

from typing import Any

import torch


def backbone_and_head(model: Any) -> tuple[Any, Any]:
    """The decoder stack and the LM head of a causal LM, through a peft wrapper if there is one."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder(), base.get_output_embeddings()


def response_positions(response_mask: torch.Tensor) -> torch.Tensor:
    """``[batch, tokens-1]`` bool: the positions whose next token is a response token.

    Token *t* is predicted from the hidden state at *t* - 1.
    """
    return response_mask[:, 1:].bool()


# Below this many shared leading tokens a separate prefix pass is not worth its overhead.
MIN_SHARED_PREFIX = 16


def shared_prefix_length(input_ids: torch.Tensor, attention_mask: torch.Tensor) -> int:
    """How many leading tokens every row has in common (all attended); 0 for a single row."""
    if input_ids.shape[0] < 2:
        return 0
    same = (input_ids == input_ids[:1]).all(dim=0) & attention_mask.bool().all(dim=0)
    return int(same.long().cumprod(dim=0).sum())


def last_hidden(backbone: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """``[batch, tokens, hidden]``, computing the rows' shared leading tokens once.

    The rows of a GRPO group start with the same first prompt (most of a row in a short
    episode).  That prefix goes through the model as one row; its keys and values are then
    repeated for every row and the rest of each row attends to them.  Gradients flow
    through the repetition into the single prefix pass, so the result and its gradient
    equal a plain batched forward (up to float rounding; tested), at a fraction of the cost.
    """
    prefix = shared_prefix_length(input_ids, attention_mask)
    if prefix < MIN_SHARED_PREFIX:
        return backbone(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
    rows, width = input_ids.shape
    if prefix == width:  # identical rows
        return backbone(input_ids=input_ids[:1], attention_mask=attention_mask[:1]).last_hidden_state.expand(rows, -1, -1)
    head = backbone(input_ids=input_ids[:1, :prefix], attention_mask=attention_mask[:1, :prefix], use_cache=True)
    cache = head.past_key_values
    cache.batch_repeat_interleave(rows)
    positions = torch.arange(prefix, width, device=input_ids.device).expand(rows, -1)
    tail = backbone(input_ids=input_ids[:, prefix:], attention_mask=attention_mask, position_ids=positions,
                    past_key_values=cache, use_cache=True).last_hidden_state
    return torch.cat([head.last_hidden_state.expand(rows, -1, -1), tail], dim=1)


def hidden_before_responses(backbone: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                            response_mask: torch.Tensor) -> torch.Tensor:
    """``[n, hidden]``: the backbone's last hidden state just before each of the n response tokens (row-major)."""
    hidden = last_hidden(backbone, input_ids, attention_mask)
    return hidden[:, :-1][response_positions(response_mask)]


def response_logits(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                    response_mask: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``(logits [n, vocab], targets [n])`` for the n response tokens (after position 0), row-major.

    The LM head runs on those n positions only.
    """
    backbone, head = backbone_and_head(model)
    hidden = hidden_before_responses(backbone, input_ids, attention_mask, response_mask)
    return head(hidden).float(), input_ids[:, 1:][response_positions(response_mask)]


def token_log_probs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_mask: torch.Tensor,
                    temperature: float, *, with_entropy: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs of the response tokens under ``softmax(logits / temperature)`` (and entropies).

    Both are ``[batch, tokens]``, zero outside ``response_mask`` (and at position 0, which
    nothing predicts); the distribution is the one the rollout sampled from when ``top_p`` is 1.
    """
    logits, targets = response_logits(model, input_ids, attention_mask, response_mask)
    log_softmax = torch.log_softmax(logits / temperature, dim=-1)
    chosen = log_softmax.gather(-1, targets[:, None])[:, 0]
    where = torch.zeros_like(response_mask, dtype=torch.bool)
    where[:, 1:] = response_positions(response_mask)
    log_probs = torch.zeros(response_mask.shape, dtype=chosen.dtype, device=chosen.device)
    log_probs[where] = chosen
    if not with_entropy:
        return log_probs, None
    entropies = torch.zeros_like(log_probs)
    entropies[where] = -(log_softmax.exp() * log_softmax).sum(-1)
    return log_probs, entropies
