"""Inequity of amortized attention (IAA; Biega, Gummadi, Weikum, SIGIR 2018, "Equity of Attention"),
vectorised over padded queries.

A sequence of S rankings rho^1..rho^S of the same candidates (repeated requests of a query, or a
stochastic policy's sampled rankings) gives candidate i the attention a_i^l of its position in
ranking l and the relevance r_i^l; equity of amortized attention asks that the accumulated
attention be proportional to the accumulated relevance, and the unfairness is the L1 distance

    IAA = sum_i | sum_l a_i^l - sum_l r_i^l |          (Biega et al., Eq. 1)

* attention of 1-based rank r: ``"log"`` 1 / log2(1 + r) (the discount of docs/spec.md §3,
  default), ``"geometric"`` patience^(r - 1) (Biega et al.'s geometric model) or
  ``"singular"`` (all attention at rank 1); 0 below a cut-off ``k`` when given;
* ``normalize=True`` (default) scales attention and relevance to sum to 1 within every ranking
  (one unit of each per ranking, so the two are comparable and IAA lies in [0, 2 S]);
  ``normalize=False`` uses them as given;
* relevance must be >= 0; a ranking whose relevance sums to 0 makes the query's IAA NaN under
  ``normalize=True`` (there is nothing to be proportional to).

Shapes: ``ranks`` (S, Q, N) or (Q, N) (S = 1); ``relevance`` the same or (Q, N) (the same
relevance in every ranking); ``mask`` (Q, N). :func:`iaa_by_subject` accumulates over
individuals who appear in several queries (Biega et al.'s amortization across queries).
"""

from __future__ import annotations

import numpy as np

from fairltr.errors import ConfigError

__all__ = ["ATTENTION_MODELS", "attention", "iaa", "iaa_by_subject"]

ATTENTION_MODELS = ("log", "geometric", "singular")


def attention(ranks: np.ndarray, model: str = "log", patience: float = 0.5, k: int | None = None) -> np.ndarray:
    """Attention of 1-based ``ranks`` (any shape) under ``model`` (module docstring)."""
    r = np.asarray(ranks, dtype=np.float64)
    if model == "log":
        a = 1.0 / np.log2(1.0 + np.maximum(r, 1.0))
    elif model == "geometric":
        if not 0.0 < float(patience) < 1.0:
            raise ConfigError(f"patience must be in the open interval (0, 1), got {patience!r}")
        a = float(patience) ** (r - 1.0)
    elif model == "singular":
        a = (r == 1).astype(np.float64)
    else:
        raise ConfigError(f"attention model must be one of {ATTENTION_MODELS}, got {model!r}")
    if k is not None:
        if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or k < 1:
            raise ConfigError(f"k must be an integer >= 1, got {k!r}")
        a = np.where(r <= k, a, 0.0)
    return a


def _accumulated(ranks, relevance, mask, model, patience, k, normalize) -> tuple[np.ndarray, np.ndarray]:
    """(A, R): attention and relevance summed over the rankings, (Q, N), 0 on padded slots; NaN
    rows where some ranking's relevance sums to 0 under ``normalize``."""
    mask = np.asarray(mask, dtype=bool)
    ranks = np.asarray(ranks)
    ranks = ranks[None] if ranks.ndim == 2 else ranks
    if ranks.ndim != 3 or ranks.shape[1:] != mask.shape:
        raise ConfigError(f"ranks must be (rankings, queries, items) or (queries, items) matching mask "
                          f"{mask.shape}, got {np.shape(ranks)}")
    rel = np.asarray(relevance, dtype=np.float64)
    if rel.ndim == 2 and rel.shape == mask.shape:
        rel = np.broadcast_to(rel[None], ranks.shape)
    if rel.shape != ranks.shape:
        raise ConfigError(f"relevance must be (queries, items) or (rankings, queries, items), got {np.shape(relevance)}")
    if not np.all(np.isfinite(rel[:, mask])) or np.any(rel[:, mask] < 0):
        raise ConfigError("relevance must be finite and >= 0 on every candidate")
    if np.any(np.where(mask[None], ranks, 1) < 1):
        raise ConfigError("ranks must be 1-based (>= 1) on every candidate")
    a = np.where(mask[None], attention(np.where(mask[None], ranks, 1), model, patience, k), 0.0)
    r = np.where(mask[None], rel, 0.0)
    if normalize:
        with np.errstate(invalid="ignore", divide="ignore"):
            a = a / a.sum(axis=2, keepdims=True)
            r = r / r.sum(axis=2, keepdims=True)
    return a.sum(axis=0), r.sum(axis=0)


def iaa(ranks: np.ndarray, relevance: np.ndarray, mask: np.ndarray, model: str = "log", patience: float = 0.5,
        k: int | None = None, normalize: bool = True) -> np.ndarray:
    """(Q,) ``sum_i |A_i - R_i|`` per query over its S rankings (module docstring); NaN for a query
    whose relevance sums to 0 in some ranking (``normalize``) or without candidates."""
    acc_a, acc_r = _accumulated(ranks, relevance, mask, model, patience, k, normalize)
    out = np.abs(acc_a - acc_r).sum(axis=1)
    return np.where(np.asarray(mask, dtype=bool).any(axis=1), out, np.nan)


def iaa_by_subject(ranks: np.ndarray, relevance: np.ndarray, mask: np.ndarray, subjects: np.ndarray,
                   model: str = "log", patience: float = 0.5, k: int | None = None,
                   normalize: bool = True) -> float:
    """``sum_u |A_u - R_u|`` with attention and relevance accumulated over every ranking of every
    query in which individual u appears (``subjects`` (Q, N): integer ids >= 0, the same id for the
    same individual in different queries). NaN when some ranking's relevance sums to 0."""
    acc_a, acc_r = _accumulated(ranks, relevance, mask, model, patience, k, normalize)
    mask = np.asarray(mask, dtype=bool)
    ids = np.asarray(subjects)
    if ids.shape != mask.shape or not np.issubdtype(ids.dtype, np.integer) or np.any(ids[mask] < 0):
        raise ConfigError(f"subjects must be integer ids >= 0 of shape {mask.shape}")
    n = int(ids[mask].max(initial=-1)) + 1
    a = np.bincount(ids[mask], weights=acc_a[mask], minlength=n)
    r = np.bincount(ids[mask], weights=acc_r[mask], minlength=n)
    return float(np.abs(a - r).sum())
