"""Predicted and ideal orders of padded queries (ties broken by input order)."""

from __future__ import annotations

import torch

__all__ = ["order_by", "ranks_from_order", "ranks_by"]


def order_by(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Slot indices sorted by decreasing ``values``; ties keep input order; padding last. (Q, N)."""
    # inputs are validated finite, so padded -inf slots sort after every real item
    key = values.masked_fill(~mask, float("-inf"))
    return torch.sort(key, dim=-1, descending=True, stable=True).indices


def ranks_from_order(order: torch.Tensor) -> torch.Tensor:
    """1-based rank of every slot given the sorted slot indices. (Q, N) long."""
    positions = torch.arange(1, order.shape[-1] + 1, device=order.device).expand_as(order)
    return torch.empty_like(order).scatter_(-1, order, positions)


def ranks_by(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """1-based rank of every slot when sorting by decreasing ``values`` (padding ranks last)."""
    return ranks_from_order(order_by(values, mask))
