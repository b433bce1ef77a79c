"""Multinomial FA*IR re-ranking (fairltr.fair.multinomial_rerank): identical to binomial FA*IR's
re-ranker at one protected group, its output passes the multinomial test whenever the candidates
allow, the vectorised walk equals a plain per-query loop, and the input checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import ConfigError
from fairltr.fair import rerank
from fairltr.fair.multinomial import multinomial_is_fair, multinomial_mtable
from fairltr.fair.multinomial_rerank import parse_min_shares, rerank_multinomial

CATS = np.array(["W", "B", "H", "A"])


@pytest.fixture(autouse=True)
def _own_cache_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("FAIRLTR_CACHE_DIR", str(tmp_path / "cache"))


def random_table(rng, g: int, max_size: int = 60, ties: bool = False):
    n_q = int(rng.integers(1, 7))
    sizes = rng.integers(1, max_size, n_q)
    sizes[0] = max(sizes[0], g + 1)
    q = np.repeat(rng.permutation(n_q) + 100, sizes)
    groups = rng.choice(CATS[: g + 1], len(q), p=rng.dirichlet(np.ones(g + 1)))
    groups[: g + 1] = CATS[: g + 1]  # every category occurs
    scores = np.round(rng.random(len(q)), 1) if ties else rng.random(len(q))
    shares = rng.dirichlet(np.ones(g + 1))[:g] * rng.uniform(0.3, 0.98)
    return pd.DataFrame({"query_id": q, "race": groups}), scores, dict(zip(CATS[1: g + 1], shares.tolist()))


def reference_walk(groups: np.ndarray, scores: np.ndarray, m: np.ndarray) -> list[int]:
    """One query, a plain loop: the order of the first k = len(m) places. Before each place the
    minimums still to meet (a group without candidates left no longer counts) are recomputed from
    scratch: need(l) = sum_j max(0, m_j(l) - c_j); the first l > t with need(l) >= l - t is tight.
    Take the best candidate left unless some l is tight, then the best of a group short at the
    first tight l; none: the best."""
    k, g = m.shape
    left = sorted(range(len(scores)), key=lambda r: (-scores[r], r))
    counts = np.zeros(g, dtype=int)
    order: list[int] = []
    for t in range(k):
        alive = np.array([any(groups[r] == j + 1 for r in left) for j in range(g)])
        need = (np.maximum(m - counts[None, :], 0) * alive[None, :]).sum(axis=1)
        tight = [l for l in range(t + 1, k + 1) if need[l - 1] >= l - t]
        pick = left[0]
        if tight:
            short = {j + 1 for j in range(g) if m[tight[0] - 1, j] > counts[j]}
            pick = next((r for r in left if groups[r] in short), left[0])
        order.append(pick)
        left.remove(pick)
        if groups[pick] >= 1:
            counts[groups[pick] - 1] += 1
    return order


@pytest.mark.parametrize("seed", range(6))
def test_one_group_is_binomial_rerank(seed):
    """Same ranks and flags as fairltr.fair.rerank, infeasible queries and ties included."""
    rng = np.random.default_rng(seed)
    for case in range(12):
        n = int(rng.integers(1, 200))
        df = pd.DataFrame({"query_id": rng.integers(0, 6, n), "protected": (rng.random(n) < rng.uniform(0, 0.7))})
        df["protected"] = df["protected"].astype(int)
        df.loc[0, "protected"] = 1
        scores = np.round(rng.random(n), 1)
        p, k, adjust = float(rng.uniform(0.05, 0.8)), [None, 3, 10, 40][case % 4], bool(case % 3)
        want = rerank(df, scores, k=k, p=p, alpha=0.1, adjust=adjust)
        got = rerank_multinomial(df, scores, {1: p}, k=k, alpha=0.1, adjust=adjust)
        pd.testing.assert_frame_equal(got, want)


@pytest.mark.parametrize("g", [2, 3])
def test_output_passes_the_test_whenever_candidates_allow(g):
    """fair_feasible is the test's verdict on every query's top k_q; it is True whenever every
    group has at least m_j(k_q) candidates and sum_j m_j(l) <= l (then the minimums can be met)."""
    rng = np.random.default_rng(10 + g)
    checked = feasible = 0
    for case in range(30):
        df, scores, shares = random_table(rng, g)
        k, adjust = [None, 10, 25][case % 3], bool(case % 2)
        out = rerank_multinomial(df, scores, shares, k=k, alpha=0.1, group="race", adjust=adjust)
        code = {c: j for j, c in enumerate(shares, start=1)}
        for _, sub in out.groupby("query_id", sort=False):
            kq = len(sub) if k is None else min(k, len(sub))
            top = sub.sort_values("rank").head(kq)["race"].map(code).fillna(0).astype(int).to_numpy()
            verdict = multinomial_is_fair(top, list(shares.values()), 0.1, adjust=adjust)
            assert bool(sub["fair_feasible"].iloc[0]) == verdict
            m = multinomial_mtable(kq, list(shares.values()), 0.1, adjust=adjust)
            have = np.array([(sub["race"] == c).sum() for c in shares])
            if np.all(have >= m[-1]) and np.all(m.sum(axis=1) <= np.arange(1, kq + 1)):
                assert verdict
                feasible += 1
            checked += 1
    assert feasible >= checked // 3  # the guarantee was exercised


@pytest.mark.parametrize("g", [1, 2, 3])
def test_vectorised_walk_equals_plain_loop(g):
    rng = np.random.default_rng(20 + g)
    for case in range(15):
        df, scores, shares = random_table(rng, g, max_size=40, ties=case % 2 == 0)
        k = [None, 7, 20][case % 3]
        out = rerank_multinomial(df, scores, shares, k=k, alpha=0.15, group="race")
        code = {c: j for j, c in enumerate(shares, start=1)}
        groups_all = df["race"].map(code).fillna(0).astype(int).to_numpy()
        for qid in pd.unique(df["query_id"]):
            rows = np.flatnonzero(df["query_id"].to_numpy() == qid)
            kq = len(rows) if k is None else min(k, len(rows))
            m = multinomial_mtable(kq, list(shares.values()), 0.15)
            want = rows[reference_walk(groups_all[rows], scores[rows], m)]
            sub = out[out["query_id"] == qid].sort_values("rank")
            got_scores = sub["score"].to_numpy()[:kq]
            np.testing.assert_array_equal(got_scores, scores[want])
            got_groups = sub["race"].to_numpy()[:kq]
            np.testing.assert_array_equal(got_groups, df["race"].to_numpy()[want])


def test_frame_contract():
    """Every row once; queries in order of first appearance; below k_q the rest in score order;
    the result does not depend on the input row order; integer categories match by text."""
    rng = np.random.default_rng(5)
    df, scores, shares = random_table(rng, 2)
    out = rerank_multinomial(df, scores, shares, k=8, group="race")
    assert len(out) == len(df) and sorted(out["score"]) == sorted(scores)
    assert list(pd.unique(out["query_id"])) == list(pd.unique(df["query_id"]))
    for _, sub in out.groupby("query_id", sort=False):
        assert sub["rank"].tolist() == list(range(1, len(sub) + 1))
        rest = sub["score"].to_numpy()[8:]
        assert np.all(np.diff(rest) <= 0)
    perm = rng.permutation(len(df))
    shuffled = rerank_multinomial(df.iloc[perm].reset_index(drop=True), scores[perm], shares, k=8, group="race")
    key = ["query_id", "rank"]
    a = out.sort_values(key).reset_index(drop=True)
    b = shuffled.sort_values(key).reset_index(drop=True)
    np.testing.assert_array_equal(a["score"], b["score"])
    ints = pd.DataFrame({"query_id": [1] * 6, "grp": [0, 1, 2, 0, 1, 2]})
    out = rerank_multinomial(ints, np.arange(6.0), "1=0.3,2=0.3", group="grp")
    assert out["fair_feasible"].all()


def test_p_parsing():
    assert parse_min_shares("A=0.2, B=0.1") == {"A": 0.2, "B": 0.1}
    assert parse_min_shares("A:0.2,B:0.1") == {"A": 0.2, "B": 0.1}
    assert parse_min_shares({1: 0.3}) == {"1": 0.3}


@pytest.mark.parametrize("p,msg", [
    ("A=0.6,B=0.5", "sum to 1.1; they must sum to less than 1"),
    ("A=0.2,A=0.1", "given twice"),
    ("A0.2", "is not 'category=share'"),
    ("A=x", "share 'x' of 'A' is not a number"),
    ("A=1.5", r"minimum share of 'A' must be in the open interval \(0, 1\)"),
    ("A=0", r"open interval \(0, 1\)"),
    ("", "like 'A=0.2,B=0.1'"),
    ({}, "at least one"),
    (0.3, "mapping or a string"),
])
def test_p_errors(p, msg):
    with pytest.raises(ConfigError, match=msg):
        parse_min_shares(p)


def test_table_errors():
    df = pd.DataFrame({"query_id": [1, 1, 2], "race": ["W", "B", "W"], "sex": ["F", "M", "F"]})
    with pytest.raises(ConfigError, match="p names category 'H', which does not occur in group column 'race'"):
        rerank_multinomial(df, [1.0, 2.0, 3.0], "B=0.2,H=0.1", group="race")
    with pytest.raises(ConfigError, match="one group attribute"):
        rerank_multinomial(df, [1.0, 2.0, 3.0], "B=0.2", group=["race", "sex"])
    with pytest.raises(ConfigError, match="k must be an integer >= 1"):
        rerank_multinomial(df, [1.0, 2.0, 3.0], "B=0.2", k=0, group="race")
