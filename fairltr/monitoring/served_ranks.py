"""The served ranks of a traffic table: each query's ranks must be exactly 1, 2, ..., n (one
candidate per position), or the table does not say what was served."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairltr.errors import DataError

__all__ = ["check_rank_permutation"]


def check_rank_permutation(frame: pd.DataFrame, rank_column: str, query: str, source: str = "") -> np.ndarray:
    """The ranks of ``frame`` as float64 after checking, vectorised over every query, that each
    query's ranks are a permutation of 1..n; the error names the query and what is wrong (not a
    number, not a whole number, outside 1..n, repeated)."""
    from fairltr.data import locate_row, query_codes, show_value

    raw = frame[rank_column]
    ranks = pd.to_numeric(raw, errors="coerce").to_numpy(dtype=np.float64)
    codes, ids = query_codes(frame, query)

    def fail(pos: int, what: str) -> DataError:
        return DataError(f"{locate_row(frame, pos, source or None)}: rank column {rank_column!r} holds "
                         f"{show_value(raw.iloc[pos])} in query {show_value(ids[codes[pos]])}: {what}; the ranks of a "
                         f"query must be 1, 2, ..., n, one candidate each")

    bad = ~np.isfinite(ranks)
    if bad.any():
        raise fail(int(np.flatnonzero(bad)[0]), "not a number")
    frac = ranks != np.round(ranks)
    if frac.any():
        raise fail(int(np.flatnonzero(frac)[0]), "not a whole number")
    sizes = np.bincount(codes, minlength=len(ids))
    outside = (ranks < 1) | (ranks > sizes[codes])
    if outside.any():
        pos = int(np.flatnonzero(outside)[0])
        raise fail(pos, f"outside 1..{int(sizes[codes[pos]])} (the query has {int(sizes[codes[pos]])} rows)")
    order = np.lexsort((ranks, codes))
    repeated = np.zeros(len(ranks), dtype=bool)
    same = (codes[order][1:] == codes[order][:-1]) & (ranks[order][1:] == ranks[order][:-1])
    repeated[order[1:][same]] = True
    if repeated.any():
        raise fail(int(np.flatnonzero(repeated)[0]), "given to two candidates")
    return ranks
