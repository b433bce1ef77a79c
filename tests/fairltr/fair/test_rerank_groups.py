"""FA*IR is binary: several attributes or more than two categories are refused in one line."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError
from fairltr.fair import rerank


def _table(groups) -> pd.DataFrame:
    n = len(groups)
    return pd.DataFrame({"query_id": [1] * n, "g": groups, "score": np.arange(n, 0, -1, dtype=float)})


def test_more_than_two_categories_name_the_multi_group_rerankers():
    with pytest.raises(ConfigError, match=r"FA\*IR is binary.*'g' has 3 categories \(a, b, c\).*detconstsort") as e:
        rerank(_table(["a", "b", "c", "a"]), "score", k=4, p=0.5, columns=RankingColumns(group="g"))
    assert "\n" not in str(e.value) and "DetGreedy" in str(e.value)
    with pytest.raises(ConfigError, match="3 categories"):
        rerank(_table([0, 1, 2, 0]), "score", k=4, p=0.5, columns=RankingColumns(group="g"))
    df = _table(["a", "b", "a", "b"]).assign(h=[0, 1, 0, 1])
    with pytest.raises(ConfigError, match=r"one binary group attribute; got 2 \(g, h\)"):
        rerank(df, "score", k=4, p=0.5, columns=RankingColumns(group=("g", "h")))


def test_two_string_categories_rerank_like_their_integer_coding():
    strings = _table(["maj", "maj", "maj", "min", "min", "maj"])
    ints = strings.assign(g=(strings["g"] == "min").astype(int))
    a = rerank(strings, "score", k=6, p=0.5, columns=RankingColumns(group="g"))
    b = rerank(ints, "score", k=6, p=0.5, columns=RankingColumns(group="g"))
    np.testing.assert_array_equal(a["rank"].to_numpy(), b["rank"].to_numpy())
