"""Language-fairness losses for bi-encoders (docs/spec.md §5).

lakda_kl:  p = softmax(s(q, D) / tau), p' = softmax(s(q', D) / tau) over the same batch
           documents; L = mean over queries of KL(p || p') (``symmetric``: average of both KLs).
mse_align: mean squared error between E_Q(q) and E_Q(q').
"""

from __future__ import annotations

import torch

__all__ = ["lakda_kl", "mse_align"]


def lakda_kl(
    scores: torch.Tensor,
    parallel_scores: torch.Tensor,
    *,
    temperature: float = 1.0,
    symmetric: bool = False,
    mask: torch.Tensor | None = None,
) -> torch.Tensor:
    """KL(p || p') between the document distributions of a query and its parallel version.

    ``scores`` and ``parallel_scores`` are (B, D); ``mask`` (B, D) marks usable documents.
    Returns a scalar (mean over the B queries). Gradients reach both sides.
    """
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
        parallel_scores = parallel_scores.masked_fill(~mask, float("-inf"))
    log_p = torch.log_softmax(scores / temperature, dim=-1)
    log_q = torch.log_softmax(parallel_scores / temperature, dim=-1)
    if mask is not None:
        log_p = log_p.masked_fill(~mask, 0.0)
        log_q = log_q.masked_fill(~mask, 0.0)

    def kl(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return (a.exp() * (a - b)).sum(dim=-1)

    value = kl(log_p, log_q)
    if symmetric:
        value = 0.5 * (value + kl(log_q, log_p))
    return value.mean()


def mse_align(query_embeddings: torch.Tensor, parallel_embeddings: torch.Tensor) -> torch.Tensor:
    """Mean squared error between the embeddings of parallel queries (scalar)."""
    return torch.mean((query_embeddings - parallel_embeddings) ** 2)
