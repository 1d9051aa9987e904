"""The trainer's networks: the policy (optionally a LoRA adapter), the critic, the reference.

The policy is the ``transformers`` causal LM the :class:`~ragen_bench.starpo.rollout.PolicyAgent`
samples from, so the update trains the very weights that produced the rollouts.  The critic
is a second copy of the same backbone with a scalar head; the reference (KL only) is the
initial policy, which for a LoRA policy costs nothing: the adapter is switched off.

Per-token quantities are computed only where they are needed: the language-model head runs
on the hidden states of response positions alone (it is a fifth of SmolLM2's forward pass,
and the prompt is most of each row).  torch, transformers and peft are imported here, and
this module is imported only by the trainer.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import torch
from torch import nn

from ragen_bench.train.config import LoraConfig


def _backbone_and_head(model: Any) -> tuple[Any, Any]:
    """The decoder stack and the LM head of a causal LM, through a peft wrapper if there is one."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.get_decoder(), base.get_output_embeddings()


def with_lora(model: Any, lora: LoraConfig, *, base_name: str) -> Any:
    """``model`` with a fresh trainable LoRA adapter (rank > 0), or ``model`` itself (full fine-tuning).

    ``base_name`` (a path or an alias such as ``smollm2-135m``) is what the saved adapter names
    as its base, so ``load_model`` finds the base again on another machine.
    """
    if lora.rank == 0:
        return model
    try:
        from peft import LoraConfig as PeftLoraConfig
        from peft import get_peft_model
    except ImportError as error:
        raise RuntimeError("lora.rank > 0 needs peft: pip install 'ragen-bench[train]'") from error
    model.config.name_or_path = base_name
    settings = PeftLoraConfig(
        r=lora.rank,
        lora_alpha=lora.alpha,
        lora_dropout=lora.dropout,
        target_modules=lora.target_modules,
        task_type="CAUSAL_LM",
    )
    wrapped = get_peft_model(model, settings)
    wrapped.peft_config["default"].base_model_name_or_path = base_name
    return wrapped


@contextmanager
def reference_of(model: Any) -> Iterator[None]:
    """Inside the block a LoRA policy computes as its base model (the KL reference)."""
    with model.disable_adapter() if hasattr(model, "disable_adapter") else nullcontext():
        yield


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


def token_log_probs(model: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_mask: torch.Tensor,
                    temperature: float, *, with_entropy: bool = True) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs of the response tokens under ``softmax(logits / temperature)`` (and entropies).

    Both are ``[batch, tokens]``, zero outside ``response_mask``; the distribution is the one
    the rollout sampled from when ``top_p`` is 1.
    """
    backbone, head = _backbone_and_head(model)
    hidden = hidden_before_responses(backbone, input_ids, attention_mask, response_mask)
    logits = head(hidden).float() / temperature
    log_softmax = torch.log_softmax(logits, dim=-1)
    targets = input_ids[response_mask.bool()]
    chosen = log_softmax.gather(-1, targets[:, None])[:, 0]
    log_probs = torch.zeros(response_mask.shape, dtype=chosen.dtype, device=chosen.device)
    log_probs[response_mask.bool()] = chosen
    if not with_entropy:
        return log_probs, None
    entropy = -(log_softmax.exp() * log_softmax).sum(-1)
    entropies = torch.zeros_like(log_probs)
    entropies[response_mask.bool()] = entropy
    return log_probs, entropies


class ValueModel(nn.Module):
    """The critic: a causal LM's decoder stack (``body``, peft-wrapped or not) and a scalar head.

    ``values[t]`` (for a response token *t*) is read from the hidden state at *t* - 1, the
    state in which token *t* was chosen, as veRL's critic does.  The head starts at zero, so
    the first advantages are the plain returns.  The body's LM head is never used.
    """

    def __init__(self, body: Any) -> None:
        super().__init__()
        self.body = body
        self.head = nn.Linear(body.config.hidden_size, 1)
        nn.init.zeros_(self.head.weight)
        nn.init.zeros_(self.head.bias)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, response_mask: torch.Tensor) -> torch.Tensor:
        backbone, _ = _backbone_and_head(self.body)
        hidden = hidden_before_responses(backbone, input_ids, attention_mask, response_mask)
        estimates = self.head(hidden.float())[:, 0]
        values = torch.zeros(response_mask.shape, dtype=estimates.dtype, device=estimates.device)
        values[response_mask.bool()] = estimates
        return values


def make_critic(model_path: Path, dtype: str, lora: LoraConfig, *, base_name: str) -> ValueModel:
    """A critic initialised from the policy's starting weights (its own copy; LoRA on its body if asked)."""
    from ragen_bench.agents.hf import load_model

    model, _ = load_model(model_path, dtype=dtype)
    return ValueModel(with_lora(model, lora, base_name=base_name))


def trainable(module: Any) -> list[nn.Parameter]:
    return [p for p in module.parameters() if p.requires_grad]
