"""Cross-language consistency of rankings: MRC@k, overlap@k and RBO (docs/spec.md §5).

``rankings`` maps a parallel item id to ``{language: ranked document ids}`` (best first).
For every item and every pair of its languages a < b, with A, B the top-k lists:

* union rule (default): U = A ∪ B, m = |U|; rank_A(d) = 1-based position of d in A, or
  (|A| + 1 + m) / 2 when d is not in A (the mean of the ranks |A|+1..m the missing items share;
  = (k + 1 + m) / 2 for full lists); same for B. rho = Pearson(rank_A, rank_B) over U
  (= Spearman with ties). Identical lists give 1; disjoint top-5 lists about -0.86.
* intersection rule (``mode="intersection"``): Spearman over the documents common to A and B,
  0 when fewer than 2 are common (the rule that matches the LaKDA paper's figures).

MRC@k = 100 * mean over items of the mean over the item's language pairs of rho (items with a
single language have no pair and are left out). All pair computations are vectorised with numpy
over the items that share a language pair.
"""

from __future__ import annotations

from itertools import combinations
from typing import Callable, Literal, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError, DataError

__all__ = ["mrc_at_k", "mrc_matrix", "overlap_at_k", "rbo", "pair_scores", "rank_correlation"]

Rankings = Mapping[str, Mapping[str, Sequence]]
Mode = Literal["union", "intersection"]
_PAD_A, _PAD_B = -1, -2  # padding codes that never match a document or each other


def _check_k(k: int) -> int:
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ConfigError(f"k must be a positive integer, got {k!r}")
    return int(k)


def _encode(rankings: Rankings, k: int) -> tuple[list, list[str], dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Integer-coded top-k lists: per language an (n_items, k) code array (padded) and a presence flag."""
    if not isinstance(rankings, Mapping) or not rankings:
        raise DataError("rankings must be a non-empty mapping parallel_id -> {lang -> ranked doc ids}")
    items = list(rankings)
    langs = sorted({lang for per in rankings.values() for lang in per})
    codes: dict = {}
    arrays = {lang: np.full((len(items), k), _PAD_A, dtype=np.int64) for lang in langs}
    present = {lang: np.zeros(len(items), dtype=bool) for lang in langs}
    for i, item in enumerate(items):
        per = rankings[item]
        if not isinstance(per, Mapping):
            raise DataError(f"rankings[{item!r}] must map language -> ranked doc ids, got {type(per).__name__}")
        for lang, docs in per.items():
            top = list(docs)[:k]
            row = [codes.setdefault(d, len(codes)) for d in top]
            if len(set(row)) != len(row):
                raise DataError(f"ranking of item {item!r}, language {lang!r} lists a document twice")
            arrays[lang][i, : len(row)] = row
            present[lang][i] = True
    return items, langs, arrays, present


def _masked_pearson(x: np.ndarray, y: np.ndarray, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise Pearson correlation over masked entries; also returns the zero-variance flag."""
    w = mask.astype(np.float64)
    n = w.sum(axis=1, keepdims=True)
    n_safe = np.maximum(n, 1.0)
    mx = (x * w).sum(axis=1, keepdims=True) / n_safe
    my = (y * w).sum(axis=1, keepdims=True) / n_safe
    dx, dy = (x - mx) * w, (y - my) * w
    sxy = (dx * dy).sum(axis=1)
    sxx = (dx * dx).sum(axis=1)
    syy = (dy * dy).sum(axis=1)
    degenerate = (sxx <= 1e-12) | (syy <= 1e-12)
    rho = np.where(degenerate, 0.0, sxy / np.sqrt(np.where(degenerate, 1.0, sxx * syy)))
    return np.clip(rho, -1.0, 1.0), degenerate


def rank_correlation(a: np.ndarray, b: np.ndarray, mode: Mode = "union") -> np.ndarray:
    """rho for each row pair of coded top-k lists ``a``, ``b`` (G, k); padding codes are negative.

    See the module docstring for the two rules. Returns (G,) values in [-1, 1].
    """
    if mode not in ("union", "intersection"):
        raise ConfigError(f"mode must be 'union' or 'intersection', got {mode!r}")
    a = np.where(a < 0, _PAD_A, a)
    b = np.where(b < 0, _PAD_B, b)
    k = a.shape[1]
    valid_a, valid_b = a >= 0, b >= 0
    match = (a[:, :, None] == b[:, None, :])  # (G, k_a, k_b): a_i is b_j
    pos = np.arange(1, k + 1, dtype=np.float64)
    a_in_b = match.any(axis=2)
    b_in_a = match.any(axis=1)
    pos_in_b = (match * pos[None, None, :]).sum(axis=2)  # position in B of a_i (0 if absent)
    pos_in_a = (match * pos[None, :, None]).sum(axis=1)  # position in A of b_j (0 if absent)
    len_a, len_b = valid_a.sum(axis=1), valid_b.sum(axis=1)
    identical = (len_a == len_b) & (a_in_b.sum(axis=1) == len_a) & np.all((pos_in_b == pos[None]) | ~valid_a, axis=1)

    if mode == "union":
        only_b = valid_b & ~b_in_a
        m = len_a + only_b.sum(axis=1)
        fill_a = ((len_a + 1 + m) / 2.0)[:, None]
        fill_b = ((len_b + 1 + m) / 2.0)[:, None]
        # A's items, then B's items missing from A
        x = np.concatenate([np.broadcast_to(pos, a.shape), np.broadcast_to(fill_a, b.shape)], axis=1)
        y = np.concatenate([np.where(a_in_b, pos_in_b, fill_b), np.broadcast_to(pos, b.shape)], axis=1)
        mask = np.concatenate([valid_a, only_b], axis=1)
        rho, _ = _masked_pearson(x, y, mask)
        return np.where(identical, 1.0, rho)

    common = valid_a & a_in_b
    n_common = common.sum(axis=1)
    # ranks among the common documents, in A's order and in B's order
    rank_x = np.cumsum(common, axis=1).astype(np.float64)
    pb = np.where(common, pos_in_b, np.inf)
    rank_y = ((pb[:, None, :] <= pb[:, :, None]) & common[:, None, :]).sum(axis=2).astype(np.float64)
    rho, _ = _masked_pearson(rank_x, rank_y, common)
    return np.where(n_common < 2, 0.0, rho)


def _overlap(a: np.ndarray, b: np.ndarray, k: int) -> np.ndarray:
    b = np.where(b < 0, _PAD_B, b)
    return (a[:, :, None] == b[:, None, :]).any(axis=2).sum(axis=1) / float(k)


def _rbo(a: np.ndarray, b: np.ndarray, p: float) -> np.ndarray:
    """Extrapolated RBO (Webber et al. 2010, eq. 32) at depth k of the (padded) lists."""
    b = np.where(b < 0, _PAD_B, b)
    k = a.shape[1]
    match = (a[:, :, None] == b[:, None, :]).astype(np.float64)
    x = match.cumsum(axis=1).cumsum(axis=2)
    depth = np.arange(1, k + 1)
    x_d = x[:, depth - 1, depth - 1]  # |A[:d] ∩ B[:d]|
    agreement = x_d / depth
    weights = (1 - p) / p * p ** depth
    return (agreement * weights).sum(axis=1) + agreement[:, -1] * p ** k


def pair_scores(
    rankings: Rankings, k: int, fn: Callable[[np.ndarray, np.ndarray], np.ndarray]
) -> tuple[list, list[str], dict[tuple[str, str], tuple[np.ndarray, np.ndarray]]]:
    """Apply ``fn(A, B) -> (G,)`` to every language pair a < b over the items having both.

    Returns items, languages and ``{(a, b): (item indices, values)}``.
    """
    k = _check_k(k)
    items, langs, arrays, present = _encode(rankings, k)
    out = {}
    for la, lb in combinations(langs, 2):
        idx = np.flatnonzero(present[la] & present[lb])
        if len(idx):
            out[(la, lb)] = (idx, fn(arrays[la][idx], arrays[lb][idx]))
    return items, langs, out


def _item_mean(rankings: Rankings, k: int, fn) -> float:
    items, _, pairs = pair_scores(rankings, k, fn)
    total = np.zeros(len(items))
    count = np.zeros(len(items))
    for idx, values in pairs.values():
        np.add.at(total, idx, values)
        np.add.at(count, idx, 1.0)
    has = count > 0
    if not has.any():
        raise DataError("no parallel item has rankings in two or more languages")
    return float(np.mean(total[has] / count[has]))


def mrc_at_k(rankings: Rankings, k: int = 5, mode: Mode = "union") -> float:
    """MRC@k x 100: mean over items of the mean rank correlation over the item's language pairs."""
    return 100.0 * _item_mean(rankings, k, lambda a, b: rank_correlation(a, b, mode))


def mrc_matrix(rankings: Rankings, k: int = 5, mode: Mode = "union") -> pd.DataFrame:
    """L x L DataFrame of pair means x 100 (symmetric, diagonal 100; NaN for pairs never seen)."""
    _, langs, pairs = pair_scores(rankings, k, lambda a, b: rank_correlation(a, b, mode))
    mat = pd.DataFrame(np.nan, index=langs, columns=langs, dtype=float)
    for lang in langs:
        mat.loc[lang, lang] = 100.0
    for (la, lb), (_, values) in pairs.items():
        mat.loc[la, lb] = mat.loc[lb, la] = 100.0 * float(values.mean())
    return mat


def overlap_at_k(rankings: Rankings, k: int = 5) -> float:
    """Mean over items of the mean |A ∩ B| / k over language pairs, in [0, 1]."""
    return _item_mean(rankings, k, lambda a, b: _overlap(a, b, k))


def rbo(rankings: Rankings, k: int = 5, p: float = 0.9) -> float:
    """Mean over items of the mean extrapolated rank-biased overlap (persistence ``p``) at depth k."""
    if not 0.0 < p < 1.0:
        raise ConfigError(f"RBO persistence p must be in (0, 1), got {p}")
    return _item_mean(rankings, k, lambda a, b: _rbo(a, b, p))
