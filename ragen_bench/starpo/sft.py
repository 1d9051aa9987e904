"""The supervised warm-start loss: mean next-token cross-entropy over loss-masked tokens.

The rows it scores come from :func:`ragen_bench.train.sft_data.tokenize_sft`.  torch is
imported inside the function.
"""

from __future__ import annotations

from typing import Any


def sft_loss(model: Any, batch: dict[str, Any]) -> tuple[Any, dict[str, float]]:
    """Mean cross-entropy of the loss-masked tokens, each predicted from the hidden state one position earlier.

    Every masked token of the batch weighs the same (token-mean).  The forward pass is the
    RL update's (:mod:`ragen_bench.starpo.forward`): the LM head runs on the masked positions
    only, and the leading tokens all rows share go through the model once.  Metrics:
    ``loss``, ``token_accuracy`` (the argmax is the target) and ``tokens`` (masked tokens scored).
    """
    import torch
    import torch.nn.functional as F

    from ragen_bench.starpo.forward import backbone_and_head, hidden_before_responses, response_positions

    input_ids, loss_mask = batch["input_ids"], batch["loss_mask"]
    targets = input_ids[:, 1:][response_positions(loss_mask)]
    if targets.numel() == 0:
        raise ValueError("sft_loss: the batch has no loss-masked tokens after the first position")
    backbone, head = backbone_and_head(model)
    logits = head(hidden_before_responses(backbone, input_ids, batch["attention_mask"], loss_mask)).float()
    loss = F.cross_entropy(logits, targets)
    with torch.no_grad():
        accuracy = (logits.argmax(dim=-1) == targets).float().mean()
    return loss, {"loss": float(loss.detach()), "token_accuracy": float(accuracy), "tokens": float(targets.numel())}
