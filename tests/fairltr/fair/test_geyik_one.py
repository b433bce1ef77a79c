"""fairltr.fair.geyik_order (one list, arrays in and out) equals rerank_geyik on a one-query table."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError, DataError
from fairltr.fair import GEYIK_METHODS, geyik_order, rerank_geyik

COLS = RankingColumns(group="race", judgment=None)


@pytest.mark.parametrize("compiled", ["0", "1"])
@pytest.mark.parametrize("method", GEYIK_METHODS)
def test_geyik_order_is_rerank_geyik_on_one_query(monkeypatch, compiled, method):
    if compiled == "1":
        pytest.importorskip("numba")
    monkeypatch.setenv("FAIRLTR_COMPILED", compiled)
    rng = np.random.default_rng(len(method))
    for trial in range(12):
        n = int(rng.integers(1, 400))
        cats = rng.choice(["a", "b", "c", "d"][: int(rng.integers(1, 5))], n)
        s = np.round(rng.random(n), int(rng.integers(1, 4)))  # tied scores too
        k = None if trial % 3 == 0 else int(rng.integers(1, n + 5))
        present = list(pd.unique(cats))
        target = None
        if trial % 2:
            target = {c: 1.0 / len(present) for c in present}
            target[present[0]] += 1.0 - sum(target.values())
        strict = bool(trial % 4 < 2)
        df = pd.DataFrame({"query_id": 1, "race": cats, "s": s, "row": np.arange(n)})
        want = rerank_geyik(df, "s", method=method, k=k, columns=COLS, target=target, strict=strict)["row"]
        got = geyik_order(s, cats, method=method, k=k, target=target, strict=strict)
        assert got.tolist() == want.tolist(), f"trial {trial}"


def test_geyik_order_refuses_bad_input():
    with pytest.raises(DataError, match="got 2 categories for 3 scores"):
        geyik_order([1.0, 2.0, 3.0], ["a", "b"])
    with pytest.raises(DataError, match="score at position 1 is nan"):
        geyik_order([1.0, float("nan")], ["a", "b"])
    with pytest.raises(DataError, match="category missing at position 0"):
        geyik_order([1.0, 2.0], [None, "b"])
    with pytest.raises(ConfigError, match="method must be one of"):
        geyik_order([1.0], ["a"], method="greedy")
    assert geyik_order([], []).tolist() == []
