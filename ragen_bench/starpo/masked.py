"""Masked reductions over ``[batch, tokens]`` tensors.

A mask is any tensor of the values' shape whose nonzero entries select positions (bool or
0/1 numbers).  Positions outside the mask never influence a result, even when they hold
NaN or inf (padding often does), and an empty mask gives 0 instead of NaN.
"""

from __future__ import annotations

import torch


def masked_sum(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Sum of ``values`` where ``mask`` is nonzero (over all elements, or along ``dim``)."""
    # `where` rather than a product: 0 * NaN is NaN, and padding may hold NaN.
    selected = torch.where(mask.bool(), values, torch.zeros((), dtype=values.dtype, device=values.device))
    return selected.sum() if dim is None else selected.sum(dim=dim)


def masked_count(mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Number of selected positions, as a float tensor (over all elements, or along ``dim``)."""
    selected = mask.bool().float()
    return selected.sum() if dim is None else selected.sum(dim=dim)


def masked_mean(values: torch.Tensor, mask: torch.Tensor, dim: int | None = None) -> torch.Tensor:
    """Mean of the selected ``values``; 0 where nothing is selected."""
    return masked_sum(values, mask, dim) / masked_count(mask, dim).clamp(min=1.0)


def masked_var(values: torch.Tensor, mask: torch.Tensor, unbiased: bool = True) -> torch.Tensor:
    """Variance of all selected ``values`` (a scalar).

    ``unbiased`` divides by ``n - 1`` (Bessel's correction, as veRL's whitening does).  With
    fewer than two selected values the variance is taken as 0: veRL raises there, but a
    batch whose mask holds a single token is legitimate (a one-token reply) and its
    whitened value is 0 either way, since it equals the mean.
    """
    count = masked_count(mask)
    centered = values - masked_mean(values, mask)
    squares = masked_sum(centered * centered, mask)
    if count < 2:
        return torch.zeros((), dtype=values.dtype, device=values.device)
    return squares / (count - 1 if unbiased else count)


def masked_whiten(values: torch.Tensor, mask: torch.Tensor, eps: float = 1e-8) -> torch.Tensor:
    """``(values - mean) / sqrt(var + eps)`` with the statistics of the selected positions.

    Positions outside the mask are set to 0 (veRL leaves them at their shifted value; they are
    never used).  ``var`` is unbiased, as in veRL.
    """
    whitened = (values - masked_mean(values, mask)) * torch.rsqrt(masked_var(values, mask) + eps)
    return torch.where(mask.bool(), whitened, torch.zeros((), dtype=values.dtype, device=values.device))
