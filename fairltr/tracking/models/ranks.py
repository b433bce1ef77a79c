"""Per-query ranks aligned with the input rows (what the pyfunc returns)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairltr.data import query_codes, rank_within_query

__all__ = ["aligned_ranks"]


def aligned_ranks(df: pd.DataFrame, scores: np.ndarray, query: str) -> np.ndarray:
    """1-based rank of every row inside its query by decreasing score (ties: input order),
    in the row order of ``df`` (not sorted): :func:`fairltr.data.rank_within_query`."""
    codes, _ = query_codes(df, query)
    return rank_within_query(codes, np.asarray(scores, dtype=np.float64).reshape(-1))
