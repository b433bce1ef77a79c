"""The Geyik re-rankers' compiled loops (fairltr.fair.geyik_kernels, numba) against the numpy code
they replace: DetConstSort's move-up (the numpy steps and the list loop), the unranked rows' ranks,
and the same re-ranked tables for every method with and without them."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.fair import GEYIK_METHODS, rerank_geyik
from fairltr.fair.geyik import _move_up, _move_up_one

pytest.importorskip("numba", reason="the compiled move-up needs numba (the [fast] extra)")
from fairltr.fair.geyik_kernels import move_up_columns  # noqa: E402

COLS = RankingColumns(group="race", judgment=None)


def _entries(rng: np.random.Generator, t: int, q: int):
    """Random entry arrays (T, Q): rows, scores (ties included), max indices that grow with the
    place (as rounds do), and unused places (score -inf) at the end of some columns."""
    rows = rng.permutation(t * q).reshape(t, q).astype(np.int64)
    scores = rng.integers(0, 6, size=(t, q)).astype(np.float64) + rng.random((t, q)) * (rng.random() < 0.5)
    maxi = np.sort(rng.integers(1, t + 1, size=(t, q)), axis=0).astype(np.int64)
    used = rng.integers(1, t + 1, size=q)
    unused = np.arange(t)[:, None] >= used[None, :]
    rows[unused], scores[unused], maxi[unused] = -1, -np.inf, 0
    return rows, scores, maxi


@pytest.mark.parametrize("slack", [0, 1])
def test_compiled_move_up_equals_the_numpy_steps_and_the_list_loop(slack):
    rng = np.random.default_rng(slack)
    for _ in range(40):
        t, q = int(rng.integers(1, 40)), int(rng.integers(1, 6))
        rows, scores, maxi = _entries(rng, t, q)
        got = [a.copy() for a in (rows, scores, maxi)]
        move_up_columns(*got, slack)
        state = np.stack([rows.astype(np.float64), scores, (maxi + slack).astype(np.float64)])
        places = np.arange(2, t + 2, dtype=np.float64)[:, None]
        for step in range(1, t):
            _move_up(state, step, places)
        assert np.array_equal(got[0], state[0].astype(np.int64))
        assert np.array_equal(got[1], state[1])
        for col in range(q):
            lists = _move_up_one(rows[:, col].tolist(), scores[:, col].tolist(), maxi[:, col].tolist(), slack)
            assert got[0][:, col].tolist() == lists[0] and got[2][:, col].tolist() == lists[2]


@pytest.mark.parametrize("method,strict", [("detconstsort", True), ("detconstsort", False), ("detgreedy", True),
                                           ("detcons", True), ("detrelaxed", True)])
@pytest.mark.parametrize("n_q,n", [(1, 400), (30, 25), (3, 600)])
def test_rerank_geyik_is_the_same_table_with_and_without_the_compiled_loops(monkeypatch, method, strict, n_q, n):
    """Rows wider than 256 also take the compiled stable argsort (fairltr.row_sort); uneven query
    lengths; tied scores; k below the list length (the rest ranked after the walk)."""
    rng = np.random.default_rng(n_q)
    sizes = rng.integers(n // 2, n + 1, n_q)
    df = pd.DataFrame({"query_id": np.repeat(np.arange(n_q), sizes),
                       "race": rng.choice(["a", "b", "c"], sizes.sum(), p=[0.6, 0.3, 0.1]),
                       "s": np.round(rng.random(sizes.sum()), 2)})  # rounded: tied scores too
    kw = dict(method=method, k=n // 2, columns=COLS, strict=strict)
    monkeypatch.setenv("FAIRLTR_COMPILED", "1")
    compiled = rerank_geyik(df, "s", **kw)
    monkeypatch.setenv("FAIRLTR_COMPILED", "0")
    pd.testing.assert_frame_equal(compiled, rerank_geyik(df, "s", **kw))


@pytest.mark.parametrize("method,strict", [("detconstsort", True), ("detconstsort", False), ("detgreedy", True),
                                           ("detcons", True), ("detrelaxed", True)])
def test_compiled_buckets_equal_the_numpy_path_on_random_tables(monkeypatch, method, strict):
    """The compiled buckets (fairltr.fair.geyik_kernels.constsort_bucket: category split, entry
    merge, move-up, ranks; det_walk_bucket: category split, walk, ranks) against the numpy path (the
    vectorised walk, or the walk on Python lists for one query): random sizes, 1-5 categories, tied
    scores, the pool's mix or a given target (zero shares included), k from 1 to past the list length."""
    rng = np.random.default_rng(7 + strict + 3 * GEYIK_METHODS.index(method))
    for trial in range(60):
        n_q, n_g = int(rng.integers(1, 6)), int(rng.integers(1, 6))
        sizes = rng.integers(1, 300 if trial % 3 else 700, n_q)
        cats = [f"g{i}" for i in range(n_g)]
        df = pd.DataFrame({"query_id": np.repeat(np.arange(n_q), sizes),
                           "race": rng.choice(cats, sizes.sum(), p=rng.dirichlet(np.ones(n_g))),
                           "s": np.round(rng.random(sizes.sum()), int(rng.integers(1, 4)))})
        present = list(pd.unique(df["race"]))
        target = None
        if trial % 2:
            shares = rng.dirichlet(np.ones(len(present)))
            shares[rng.random(len(present)) < 0.3] = 0.0
            if shares.sum() == 0:
                shares[0] = 1.0
            shares = shares / shares.sum()
            target = {c: float(x) for c, x in zip(present, shares)}
            target[present[0]] += 1.0 - sum(target.values())  # exactly 1 in float
        k = int(rng.integers(1, int(sizes.max()) + 20))
        kw = dict(method=method, k=k, columns=COLS, strict=strict, target=target)
        monkeypatch.setenv("FAIRLTR_COMPILED", "1")
        compiled = rerank_geyik(df, "s", **kw)
        monkeypatch.setenv("FAIRLTR_COMPILED", "0")
        pd.testing.assert_frame_equal(compiled, rerank_geyik(df, "s", **kw), obj=f"trial {trial}")
