"""ListNet's top-one cross-entropy over padded queries (docs/spec.md §2).

L_q = - sum_i P_y(i) log P_s(i), P = softmax over the query's unmasked candidates.
"""

from __future__ import annotations

import torch

__all__ = ["masked_log_softmax", "top_one_probability", "listnet_loss"]


def masked_log_softmax(values: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """log softmax over the last axis restricted to ``mask``; padded slots give 0 (not -inf)."""
    filled = values.masked_fill(~mask, float("-inf"))
    return torch.log_softmax(filled, dim=-1).masked_fill(~mask, 0.0)


def top_one_probability(scores: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """P_s(i) = exp(s_i) / sum_j exp(s_j) within each query (max-stabilised); 0 on padding."""
    filled = scores.masked_fill(~mask, float("-inf"))
    return torch.softmax(filled, dim=-1).masked_fill(~mask, 0.0)


def listnet_loss(scores: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Per-query ListNet loss, shape (Q,). Stable for judgments in the hundreds."""
    target = top_one_probability(judgments, mask)
    return -(target * masked_log_softmax(scores, mask)).sum(dim=-1)
