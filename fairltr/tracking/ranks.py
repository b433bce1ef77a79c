"""Per-query ranks aligned with the input rows (what the pyfunc returns)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairltr.data import query_codes

__all__ = ["aligned_ranks"]


def aligned_ranks(df: pd.DataFrame, scores: np.ndarray, query: str) -> np.ndarray:
    """1-based rank of every row inside its query by decreasing score (ties: input order),
    in the row order of ``df`` (not sorted). Vectorised: one lexsort, one cumulative count."""
    codes, _ = query_codes(df, query)
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    order = np.lexsort((np.arange(len(df)), -s, codes))
    sorted_codes = codes[order]
    sizes = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    within = np.arange(len(df)) - starts[sorted_codes]
    ranks = np.empty(len(df), dtype=np.int64)
    ranks[order] = within + 1
    return ranks
