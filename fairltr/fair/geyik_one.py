"""Geyik et al.'s re-rankers on ONE list given as arrays (numpy in, numpy out): the same walk as
:func:`fairltr.fair.geyik.rerank_geyik` without the table's machinery (column checks, query codes,
the output frame), which costs more than the walk itself on a list of 100 (a serving request)."""

from __future__ import annotations

from typing import Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.compiled import pays
from fairltr.errors import ConfigError, DataError
from fairltr.fair.geyik import GEYIK_METHODS, KERNELS, _check_k, _rerank_bucket, numpy_seconds
from fairltr.fair.target import target_shares

__all__ = ["geyik_order"]


def geyik_order(
    scores: Sequence[float] | np.ndarray,
    categories: Sequence[object] | np.ndarray,
    *,
    method: str = "detconstsort",
    target: Mapping[object, float] | str | None = None,
    k: int | None = None,
    strict: bool = True,
) -> np.ndarray:
    """The re-ranked order of one list: positions (0-based, into ``scores``) of the whole list, the
    first ``min(k, n)`` re-ranked by ``method`` (one of :data:`GEYIK_METHODS`), the rest in score
    order, exactly as ``rerank_geyik`` orders a table holding this one query. ``categories``: one
    value per candidate (any values, no missing one); ``target``: None (the list's own mix), a mapping
    ``{category: share}`` or a ``"cat:share,..."`` string (see :func:`fairltr.fair.parse_target`)."""
    if method not in GEYIK_METHODS:
        raise ConfigError(f"method must be one of {list(GEYIK_METHODS)}, got {method!r}")
    k = _check_k(k)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    values = np.asarray(categories).reshape(-1)
    n = len(s)
    if len(values) != n:
        raise DataError(f"got {len(values)} categories for {n} scores")
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    if not np.isfinite(s).all():
        row = int(np.flatnonzero(~np.isfinite(s))[0])
        raise DataError(f"score at position {row} is {s[row]}; scores must be finite")
    if values.dtype.kind not in "iub" and pd.isna(values).any():
        raise DataError(f"category missing at position {int(np.flatnonzero(pd.isna(values))[0])}")
    gcodes, uniques = pd.factorize(values, sort=False)
    gcodes = gcodes.astype(np.int64, copy=False)
    n_g = len(uniques)
    if target is None:
        shares = np.bincount(gcodes, minlength=n_g) / n
    else:
        shares = target_shares(target, [u.item() if hasattr(u, "item") else u for u in uniques], "categories")
    kq = np.array([n if k is None else min(k, n)], dtype=np.int64)
    fast = pays(KERNELS, numpy_seconds(method, 1, int(kq[0]), n, n_g))
    rank = np.zeros(n, dtype=np.int64)
    rows = np.arange(n, dtype=np.int64)
    _rerank_bucket(rows, np.zeros(n, dtype=np.int64), rows, np.array([n]), kq, s, gcodes, n_g,
                   np.ascontiguousarray(shares, dtype=np.float64)[None, :], rank, method, strict, fast)
    order = np.empty(n, dtype=np.int64)
    order[rank - 1] = rows
    return order
