"""Attention-weighted rank fairness (AWRF; Sapiezynski et al. 2019) and the TREC Fair Ranking 2022
task-1 score nDCG x AWRF, vectorised over padded queries.

As the track's evaluation code defines them (fair-trec/trec2022-fair-public, ``wptrec/metrics``;
``tests/fairltr/metrics/test_awrf.py`` checks fairltr against its output):

* discount of 1-based rank r: ``d(r) = 1 / log2(max(r, 2))`` (ranks 1 and 2 both get 1);
* an item's alignment is a vector over the categories of a fairness dimension: fractional
  membership (non-negative, normally summing to 1); an *unknown* level is one more category
  (the track's ``@UNKNOWN``), so a page of unknown group has alignment 1 there. Several
  dimensions combine intersectionally: the alignment over the product categories is the outer
  product of the item's per-dimension vectors (:func:`intersect`). An item with no alignment at
  all (a row of zeros: a page missing from the alignment table) is left out with its attention;
* the ranking's distribution ``D = sum_i d(r_i) a_i / sum_i d(r_i)`` over the items left in;
* ``AWRF = 1 - JS(D, target)``, the Jensen-Shannon divergence in nats (natural log) between D and
  the query's target distribution, both scaled to sum to 1 (scipy's ``jensenshannon`` squared):
  1 when D equals the target, down to 1 - ln 2; NaN for a query with no item left in;
* nDCG (binary): ``sum_{relevant} d(r) / sum_{r=1}^{min(cutoff, R)} d(r)`` with R the query's
  number of relevant documents (by default the relevant candidates given);
* score = nDCG x AWRF, averaged over queries by the track.

Items ranked below ``cutoff`` (500, the track's run length) count in neither. Shapes: ``ranks``,
``mask`` (Q, N); alignments (Q, N, G); targets (Q, G); padded slots are masked out.
"""

from __future__ import annotations

import numpy as np
from scipy.special import rel_entr

from fairltr.errors import ConfigError

__all__ = ["CUTOFF", "rank_discount", "intersect", "awrf", "trec_fair_ndcg", "trec_fair_task1"]

CUTOFF = 500
"""The TREC Fair 2022 task-1 run length."""


def rank_discount(ranks: np.ndarray) -> np.ndarray:
    """``1 / log2(max(r, 2))`` for 1-based ranks (float64)."""
    return 1.0 / np.log2(np.maximum(np.asarray(ranks, dtype=np.float64), 2.0))


def _finite_nonneg(name: str, x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    if not np.all(np.isfinite(x)) or np.any(x < 0):
        raise ConfigError(f"{name} must hold finite numbers >= 0")
    return x


def intersect(*alignments: np.ndarray) -> np.ndarray:
    """(Q, N, G1 * G2 * ...): per item the outer product of its per-dimension alignments
    (Q, N, G_d), flattened in C order (the first dimension's category varies slowest), the
    layout of a target over the product categories ``target.reshape(Q, -1)``."""
    if not alignments:
        raise ConfigError("intersect needs at least one alignment array")
    out = _finite_nonneg("alignment", alignments[0])
    for a in alignments[1:]:
        a = _finite_nonneg("alignment", a)
        if a.shape[:2] != out.shape[:2]:
            raise ConfigError(f"alignments must share their (queries, items) shape, got {out.shape[:2]} and "
                              f"{a.shape[:2]}")
        out = (out[..., :, None] * a[..., None, :]).reshape(*out.shape[:2], -1)
    return out


def _weights(ranks: np.ndarray, mask: np.ndarray, cutoff: int | None) -> np.ndarray:
    ranks = np.asarray(ranks)
    mask = np.asarray(mask, dtype=bool)
    if ranks.shape != mask.shape or ranks.ndim != 2:
        raise ConfigError(f"ranks and mask must both be (queries, items), got {ranks.shape} and {mask.shape}")
    r = np.where(mask, ranks, 1)
    if np.any(r < 1):
        raise ConfigError("ranks must be 1-based (>= 1) on every real item")
    keep = mask if cutoff is None else mask & (r <= cutoff)
    return np.where(keep, rank_discount(r), 0.0)


def awrf(ranks: np.ndarray, alignment: np.ndarray, target: np.ndarray, mask: np.ndarray,
         cutoff: int | None = CUTOFF) -> np.ndarray:
    """(Q,) AWRF of every query: 1 - JS(attention-weighted alignment distribution, target), NaN
    where no ranked item has an alignment (module docstring)."""
    w = _weights(ranks, mask, cutoff)
    a = _finite_nonneg("alignment", alignment)
    t = _finite_nonneg("target", target)
    if a.ndim != 3 or a.shape[:2] != w.shape:
        raise ConfigError(f"alignment must be (queries, items, categories) = {w.shape + (-1,)}, got {a.shape}")
    if t.shape != (a.shape[0], a.shape[2]):
        raise ConfigError(f"target must be (queries, categories) = {(a.shape[0], a.shape[2])}, got {t.shape}")
    if np.any(t.sum(axis=1) <= 0):
        raise ConfigError(f"target of query {int(np.flatnonzero(t.sum(axis=1) <= 0)[0])} sums to 0")
    w = w * (a.sum(axis=2) > 0)  # items without any alignment are left out
    mass = np.einsum("qn,qng->qg", w, a)
    total = mass.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        dist = mass / total
        tgt = t / t.sum(axis=1, keepdims=True)
        mid = 0.5 * (dist + tgt)
        js = 0.5 * (rel_entr(dist, mid).sum(axis=1) + rel_entr(tgt, mid).sum(axis=1))
    return np.where(total[:, 0] > 0, 1.0 - js, np.nan)


def trec_fair_ndcg(ranks: np.ndarray, relevant: np.ndarray, mask: np.ndarray, n_relevant: np.ndarray | None = None,
                   cutoff: int | None = CUTOFF) -> np.ndarray:
    """(Q,) binary nDCG with the track's discount: ``sum_relevant d(r) / sum_{r <= min(cutoff, R)} d(r)``;
    ``n_relevant`` (Q,) = R, the query's relevant documents (default: the relevant candidates);
    NaN for a query with R = 0."""
    w = _weights(ranks, mask, cutoff)
    rel = np.asarray(relevant, dtype=bool) & np.asarray(mask, dtype=bool)
    n_rel = rel.sum(axis=1) if n_relevant is None else np.asarray(n_relevant, dtype=np.int64)
    if n_rel.shape != (w.shape[0],) or np.any(n_rel < rel.sum(axis=1)):
        raise ConfigError("n_relevant must give each query's number of relevant documents (at least the relevant "
                          "candidates given)")
    top = n_rel if cutoff is None else np.minimum(n_rel, cutoff)
    longest = max(int(top.max(initial=0)), 1)
    cum = np.concatenate([[0.0], np.cumsum(rank_discount(np.arange(1, longest + 1)))])
    ideal = cum[top]
    dcg = (w * rel).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(ideal > 0, dcg / ideal, np.nan)


def trec_fair_task1(ranks: np.ndarray, relevant: np.ndarray, alignment: np.ndarray, target: np.ndarray,
                    mask: np.ndarray, n_relevant: np.ndarray | None = None,
                    cutoff: int | None = CUTOFF) -> dict[str, np.ndarray]:
    """Per query (Q,): ``ndcg``, ``awrf`` and ``score`` = ndcg x awrf (TREC Fair 2022 task 1)."""
    nd = trec_fair_ndcg(ranks, relevant, mask, n_relevant, cutoff)
    aw = awrf(ranks, alignment, target, mask, cutoff)
    return {"ndcg": nd, "awrf": aw, "score": nd * aw}
