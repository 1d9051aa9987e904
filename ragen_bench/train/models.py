"""The trainer's networks: the policy (optionally a LoRA adapter), the critic, the reference.

The policy is the ``transformers`` causal LM the :class:`~ragen_bench.train.policy_agent.PolicyAgent`
samples from, so the update trains the very weights that produced the rollouts.  The critic
is a second copy of the same backbone with a scalar head; the reference (KL only) is the
initial policy, which for a LoRA policy costs nothing: the adapter is switched off.  The
forward passes themselves are in :mod:`ragen_bench.starpo.forward`.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from torch import nn

from ragen_bench.starpo.forward import backbone_and_head, hidden_before_responses
from ragen_bench.train.config import LoraConfig

if TYPE_CHECKING:
    # Types only: peft is optional (full fine-tuning runs without it), and transformers comes with the model.
    from peft import PeftModel
    from transformers import PreTrainedModel


def with_lora(model: PreTrainedModel, lora: LoraConfig, *, base_name: str) -> PreTrainedModel | PeftModel:
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
        backbone, _ = backbone_and_head(self.body)
        hidden = hidden_before_responses(backbone, input_ids, attention_mask, response_mask)
        estimates = self.head(hidden.float())[:, 0]
        values = torch.zeros(response_mask.shape, dtype=estimates.dtype, device=estimates.device)
        values[response_mask.bool()] = estimates
        return values


def make_critic(model: str | Path, dtype: str, lora: LoraConfig, *, base_name: str) -> ValueModel:
    """A critic initialised from the policy's starting weights (its own copy; LoRA on its body if asked)."""
    from ragen_bench.agents.local_models import load_model

    body, _ = load_model(model, dtype=dtype)
    return ValueModel(with_lora(body, lora, base_name=base_name))


def trainable(module: Any) -> list[nn.Parameter]:
    return [p for p in module.parameters() if p.requires_grad]
