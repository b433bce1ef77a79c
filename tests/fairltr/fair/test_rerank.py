"""FA*IR re-ranking: agreement with a plain per-query reference, fairness, completeness, order
within groups, invariance to the input row order, the infeasible flag, and bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import ConfigError, DataError
from fairltr.fair import is_fair, mtable, rerank


def reference_rerank(items: list[tuple[int, float, bool]], k: int, m: np.ndarray) -> tuple[list[int], bool]:
    """docs/spec.md §4 literally, one query: items = (row, score, protected); returns rows in order."""
    key = lambda it: (-it[1], it[0])  # noqa: E731 - best score first, ties by input row
    prot = sorted([it for it in items if it[2]], key=key)
    other = sorted([it for it in items if not it[2]], key=key)
    out, feasible, count = [], True, 0
    for i in range(k):
        if count < m[i]:
            if prot:
                out.append(prot.pop(0))
                count += 1
                continue
            feasible = False
        if prot and (not other or key(prot[0]) < key(other[0])):
            out.append(prot.pop(0))
            count += 1
        else:
            out.append(other.pop(0))
    rest = sorted(prot + other, key=key)
    return [it[0] for it in out + rest], feasible


def random_table(rng: np.random.Generator, n_queries: int = 30, max_len: int = 25, share: float = 0.3,
                 ties: bool = False) -> pd.DataFrame:
    sizes = rng.integers(1, max_len + 1, size=n_queries)
    q = np.repeat(np.arange(n_queries) * 7 + 3, sizes)
    n = len(q)
    score = rng.normal(size=n)
    if ties:
        score = np.round(score, 0)
    df = pd.DataFrame({"query_id": q, "protected": (rng.random(n) < share).astype(int), "score": score,
                       "item": np.arange(n)})
    return df.sample(frac=1.0, random_state=int(rng.integers(1 << 30))).reset_index(drop=True)


def check_against_reference(df: pd.DataFrame, out: pd.DataFrame, k: int | None, p: float, alpha: float,
                            adjust: bool = True) -> None:
    for qid, grp in df.groupby("query_id", sort=False):
        items = [(int(r), float(s), bool(g >= 1)) for r, s, g in zip(grp.index, grp["score"], grp["protected"])]
        kq = len(items) if k is None else min(k, len(items))
        m = mtable(kq, p, alpha, adjust=adjust)
        rows, feasible = reference_rerank(items, kq, m)
        got = out[out["query_id"] == qid]
        assert got["item"].tolist() == df.loc[rows, "item"].tolist()
        assert got["rank"].tolist() == list(range(1, len(rows) + 1))
        assert set(got["fair_feasible"]) == {feasible}


@pytest.mark.parametrize("k", [None, 1, 5, 12])
@pytest.mark.parametrize("ties", [False, True])
def test_matches_reference(k, ties):
    rng = np.random.default_rng(0 if k is None else k)
    df = random_table(rng, ties=ties)
    out = rerank(df, "score", k=k, p=0.4, alpha=0.1)
    check_against_reference(df, out, k, 0.4, 0.1)


def test_matches_reference_unadjusted_and_scores_as_array():
    rng = np.random.default_rng(5)
    df = random_table(rng, share=0.2)
    out = rerank(df, df["score"].to_numpy(), k=10, p=0.3, alpha=0.2, adjust=False)
    check_against_reference(df, out, 10, 0.3, 0.2, adjust=False)


@pytest.mark.parametrize("seed", range(4))
def test_properties(seed):
    rng = np.random.default_rng(seed)
    df = random_table(rng, n_queries=60, max_len=40, share=float(rng.uniform(0.1, 0.6)), ties=seed % 2 == 1)
    p, alpha = float(rng.uniform(0.2, 0.7)), 0.1
    k = None if seed < 2 else 15
    out = rerank(df, "score", k=k, p=p, alpha=alpha)
    # every candidate exactly once, queries in order of first appearance
    assert sorted(out["item"]) == sorted(df["item"])
    assert list(out["query_id"].drop_duplicates()) == list(df["query_id"].drop_duplicates())
    for qid, got in out.groupby("query_id", sort=False):
        n_q = len(got)
        kq = n_q if k is None else min(k, n_q)
        g = got["protected"].to_numpy()
        top = g[:kq]
        feasible = bool(got["fair_feasible"].iloc[0])
        if feasible:
            assert is_fair(top, p, alpha)
        else:  # protected ran out: all of them are in the top k_q
            assert top.sum() == g.sum()
            assert not is_fair(top, p, alpha)
        # never reorders within a group: by score, ties by input row (df index = input row)
        orig = df.set_index("item")
        for flag in (0, 1):
            items = got.loc[got["protected"] == flag, "item"].to_numpy()
            key = list(zip(-orig.loc[items, "score"].to_numpy(), orig.index.get_indexer(items)))
            assert key == sorted(key)
        # below k: score order
        rest = got["score"].to_numpy()[kq:]
        assert np.all(np.diff(rest) <= 0)


def test_invariant_to_input_row_order():
    rng = np.random.default_rng(11)
    df = random_table(rng, n_queries=40, max_len=30)  # distinct scores: order fully determined
    out = rerank(df, "score", p=0.35, alpha=0.1)
    for seed in range(3):
        shuffled = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
        again = rerank(shuffled, "score", p=0.35, alpha=0.1)
        a = out.sort_values(["query_id", "rank"])[["query_id", "item", "rank", "fair_feasible"]].reset_index(drop=True)
        b = again.sort_values(["query_id", "rank"])[["query_id", "item", "rank", "fair_feasible"]].reset_index(drop=True)
        pd.testing.assert_frame_equal(a, b)


def test_infeasible_flag():
    df = pd.DataFrame({
        "query_id": ["a"] * 10 + ["b"] * 10 + ["c"] * 10,
        "protected": [0] * 10 + [0] * 9 + [1] + [0, 1] * 5,
        "score": np.tile(np.arange(10, 0, -1), 3).astype(float),
    })
    out = rerank(df, "score", p=0.5, alpha=0.1)
    flags = out.groupby("query_id")["fair_feasible"].first()
    assert not flags["a"] and not flags["b"] and flags["c"]
    # b: its one protected candidate moves up to position 5 (m(5) = 1), then m(7) = 2 cannot be met
    b = out[out["query_id"] == "b"]
    assert b["protected"].tolist().index(1) == 4
    assert b["score"].tolist() == [10, 9, 8, 7, 1, 6, 5, 4, 3, 2]
    assert (out[out["query_id"] == "a"]["score"].diff().dropna() < 0).all()


def test_input_order_does_not_matter_within_a_group():
    df = pd.DataFrame({"query_id": [1] * 6, "protected": [1, 0, 1, 0, 1, 0],
                       "score": [0.1, 0.2, 0.9, 0.8, 0.5, 0.3]})
    out = rerank(df, "score", p=0.5, alpha=0.1)
    prot = out[out["protected"] == 1]["score"].tolist()
    assert prot == [0.9, 0.5, 0.1]


def test_tie_between_groups_goes_to_the_earlier_row():
    df = pd.DataFrame({"query_id": [1, 1, 1, 1], "protected": [0, 1, 1, 0], "score": [1.0, 1.0, 1.0, 1.0]})
    out = rerank(df, "score", p=0.1, alpha=0.1)  # table all zeros: pure score order
    assert out["protected"].tolist() == [0, 1, 1, 0]
    swapped = df.iloc[[1, 0, 3, 2]].reset_index(drop=True)
    assert rerank(swapped, "score", p=0.1, alpha=0.1)["protected"].tolist() == [1, 0, 0, 1]


def test_k_larger_than_list_and_single_item_queries():
    df = pd.DataFrame({"query_id": [1, 2, 2], "protected": [1, 0, 1], "score": [0.3, 0.9, 0.1]})
    out = rerank(df, "score", k=50, p=0.5, alpha=0.1)
    assert out["rank"].tolist() == [1, 1, 2]
    assert out["fair_feasible"].all()


def test_bad_input():
    df = pd.DataFrame({"query_id": [1, 1], "protected": [0, 1], "score": [0.5, np.nan]})
    with pytest.raises(DataError, match="row 1"):
        rerank(df, "score", p=0.5, alpha=0.1)
    with pytest.raises(DataError, match="'nope'"):
        rerank(df, "nope", p=0.5, alpha=0.1)
    with pytest.raises(DataError, match="got 3 scores for 2 rows"):
        rerank(df, [1, 2, 3], p=0.5, alpha=0.1)
    with pytest.raises(ConfigError, match="p .*required"):
        rerank(df, [1, 2])
    with pytest.raises(ConfigError, match=">= 1"):
        rerank(df, [1, 2], k=0, p=0.5)
    with pytest.raises(ConfigError, match=r"\(0, 1\)"):
        rerank(df, [1, 2], p=0.5, alpha=1.5)
    with pytest.raises(DataError, match="missing column.*protected"):
        rerank(df.drop(columns="protected"), [1, 2], p=0.5)


def test_required_counts_look_ahead():
    from fairltr.fair import required_counts

    assert required_counts(np.array([0, 0, 2, 2])).tolist() == [0, 1, 2, 2]
    table = mtable(50, 0.3, 0.1)
    assert np.array_equal(required_counts(table), table)  # steps of at most one: unchanged


# ---------------------------------------------------------------------------- length buckets
def skewed_table(rng: np.random.Generator, ties: bool = False) -> pd.DataFrame:
    """random_table plus one long query, a few mid-length ones, one-row queries and a query
    without protected candidates: padded to one (Q, N) array it is mostly padding."""
    base = random_table(rng, n_queries=60, max_len=12, ties=ties)
    sizes = [300, 90, 70, 1, 1, 40]
    q = np.repeat(-np.arange(1, len(sizes) + 1), sizes)
    n = len(q)
    score = rng.normal(size=n)
    extra = pd.DataFrame({"query_id": q, "protected": (rng.random(n) < 0.3).astype(int),
                          "score": np.round(score, 0) if ties else score, "item": np.arange(n) + len(base)})
    extra.loc[extra.query_id == -6, "protected"] = 0  # no protected candidate: infeasible when m > 0
    return pd.concat([base, extra]).sample(frac=1.0, random_state=int(rng.integers(1 << 30))).reset_index(drop=True)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("k", [None, 10, 60])
def test_bucketed_rerank_is_identical_to_one_padded_array(seed, k, monkeypatch):
    import importlib

    from fairltr.buckets import length_buckets

    rerank_module = importlib.import_module("fairltr.fair.rerank")  # the package re-exports the function

    rng = np.random.default_rng(100 + seed)
    df = skewed_table(rng, ties=seed % 2 == 1)
    sizes = df.groupby("query_id", sort=False).size().to_numpy()
    assert len(length_buckets(sizes)) > 1
    out = rerank(df, "score", k=k, p=0.4, alpha=0.1)
    # the unbucketed layout: every query in one (Q, longest) array, as before buckets
    monkeypatch.setattr(rerank_module, "length_buckets", lambda s, *a, **kw: [np.arange(len(s))])
    one = rerank(df, "score", k=k, p=0.4, alpha=0.1)
    pd.testing.assert_frame_equal(out, one)
    check_against_reference(df, out, k, 0.4, 0.1)
    assert not out.loc[out.query_id == -6, "fair_feasible"].any()


def test_rerank_degenerate_bucketed_tables():
    one_query = pd.DataFrame({"query_id": [5] * 4, "protected": [0, 0, 1, 1], "score": [4.0, 3, 2, 1],
                              "item": range(4)})
    out = rerank(one_query, "score", k=4, p=0.5, alpha=0.1)
    check_against_reference(one_query, out, 4, 0.5, 0.1)
    # a long query and one-row queries (two buckets), one of them protected
    df = pd.DataFrame({"query_id": [1] * 30 + [2, 3], "protected": [0] * 20 + [1] * 10 + [1, 0],
                       "score": list(np.linspace(1, 0, 30)) + [0.5, 0.5], "item": range(32)})
    out = rerank(df, "score", k=None, p=0.5, alpha=0.1)
    check_against_reference(df, out, None, 0.5, 0.1)
    assert out.query_id.tolist() == [1] * 30 + [2, 3] and out["rank"].tolist() == list(range(1, 31)) + [1, 1]
