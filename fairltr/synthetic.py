"""A synthetic ranking-of-people generator with an injected training bias (the quickstart data).

Every candidate has a latent merit z ~ N(0, 1) that does NOT depend on the group. Features are
noisy views of z (``x_j = z + noise_j``, plus the group column). Test judgments are the merit;
training judgments are biased the way the DELTR paper's TREC set is: equal merit, protected
candidates placed below (``y_train = z - bias * protected``). A ranker that learns from the
training order therefore under-exposes the protected group unless it is made fair.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.errors import ConfigError

__all__ = ["make_biased_rankings"]


def make_biased_rankings(
    n_queries: int = 60,
    n_candidates: int = 40,
    protected_share: float = 0.3,
    n_features: int = 4,
    bias: float = 1.0,
    noise: float = 0.5,
    test_fraction: float = 0.33,
    seed: int = 0,
    columns: RankingColumns = DEFAULT_COLUMNS,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(train, test) ranking tables with the query, group, x1..xF and judgment columns of
    ``columns`` (default query_id, protected, x1..xF, judgment; an item column is not made).

    Queries are split between train and test; train judgments carry the bias, test judgments
    are the unbiased merit.
    """
    columns.require("group", "judgment", purpose="make_biased_rankings")
    if n_queries < 2:
        raise ConfigError(f"n_queries must be >= 2 (train and test), got {n_queries}")
    if n_candidates < 2:
        raise ConfigError(f"n_candidates must be >= 2, got {n_candidates}")
    if not 0.0 < protected_share < 1.0:
        raise ConfigError(f"protected_share must be in (0, 1), got {protected_share}")
    if n_features < 1:
        raise ConfigError(f"n_features must be >= 1, got {n_features}")
    if not 0.0 < test_fraction < 1.0:
        raise ConfigError(f"test_fraction must be in (0, 1), got {test_fraction}")
    rng = np.random.default_rng(seed)
    n = n_queries * n_candidates
    qid = np.repeat(np.arange(1, n_queries + 1), n_candidates)
    protected = (rng.random(n) < protected_share).astype(np.int64)
    merit = rng.standard_normal(n)
    feats = merit[:, None] + noise * rng.standard_normal((n, n_features))
    n_test = max(1, int(round(test_fraction * n_queries)))
    is_test = qid > n_queries - n_test
    judgment = np.where(is_test, merit, merit - bias * protected)
    df = pd.DataFrame({columns.query: qid, columns.group: protected})
    for j in range(n_features):
        df[f"x{j + 1}"] = feats[:, j]
    df[columns.judgment] = judgment
    # rows of a query sorted by decreasing judgment, as in the DELTR paper's files
    df = df.sort_values([columns.query, columns.judgment], ascending=[True, False], kind="stable")
    train = df[~is_test[df.index]].reset_index(drop=True)
    test = df[is_test[df.index]].reset_index(drop=True)
    return train, test
