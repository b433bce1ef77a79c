"""evaluate_ranking: the metric names of docs/spec.md §6, averages over defined queries, `<metric>_n_queries`, row order."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import kendalltau

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError, DataError
from fairltr.metrics import METRICS, evaluate_ranking, higher_is_better, metric_info


def _frame(seed=0, n_queries=6, n=12):
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        m = int(rng.integers(3, n + 1))
        for i in range(m):
            rows.append({"qid": f"q{q}", "grp": int(rng.random() < 0.4), "rel": float(rng.integers(0, 4)),
                         "score": float(rng.normal())})
    df = pd.DataFrame(rows)
    slot = df.groupby("qid").cumcount()
    df.loc[slot == 0, "grp"] = 1  # every query holds both groups ...
    df.loc[slot == 1, "grp"] = 0
    df.loc[df.qid == "q0", "grp"] = 0  # ... except q0  # no protected item: exposure metrics undefined there
    return df


def _loop_metrics(df: pd.DataFrame) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {"kendall_tau": [], "exposure_ratio": [], "precision_at_5": []}
    for _, d in df.groupby("qid", sort=False):
        s, y, g = d.score.to_numpy(), d.rel.to_numpy(), d.grp.to_numpy()
        if len(set(y)) > 1:
            out["kendall_tau"].append(kendalltau(s, y).statistic)
        order = np.argsort(-s, kind="stable")
        rank = np.empty(len(s), dtype=int)
        rank[order] = np.arange(1, len(s) + 1)
        v = 1 / np.log1p(rank)
        if (g >= 1).any() and (g == 0).any():
            out["exposure_ratio"].append(v[g >= 1].mean() / v[g == 0].mean())
        # tied judgments are unordered: an item with g better-judged items and m items of its grade
        # (itself included) is in the true top 5 with probability clip(5 - g, 0, m) / m
        p_true = [min(max(5 - int((y > yi).sum()), 0), int((y == yi).sum())) / int((y == yi).sum()) for yi in y]
        out["precision_at_5"].append(sum(p_true[i] for i in order[:5]) / 5)
    return out


def test_names_values_and_n_queries():
    df = _frame()
    res = evaluate_ranking(df, df.score.to_numpy(), query="qid", group="grp", judgment="rel", k=(5, 10))
    expected = {"ndcg_at_5", "ndcg_at_10", "precision_at_5", "precision_at_10", "kendall_tau",
                "exposure_protected", "exposure_nonprotected", "exposure_ratio", "exposure_gap",
                "exposure_disparity", "exposure_shortfall", "selection_ratio_at_5", "selection_ratio_at_10",
                "tied_score_share", "awrf", "ndcg_awrf", "iaa"}
    assert expected | {f"{k}_n_queries" for k in expected} == set(res)
    loops = _loop_metrics(df)
    for name, values in loops.items():
        assert res[name] == pytest.approx(float(np.mean(values)), rel=1e-12)
        assert res[f"{name}_n_queries"] == len(values)
    assert res["exposure_ratio_n_queries"] == 5  # q0 has no protected item
    assert res["exposure_nonprotected_n_queries"] == 6
    assert res["precision_at_5_n_queries"] == 6


def test_retrieval_metrics_and_default_k():
    df = _frame(seed=1)
    res = evaluate_ranking(df, "score", query="qid", group="grp", judgment="rel", retrieval=True)
    for k in (1, 5, 10, 20, 100):
        for base in ("ndcg", "precision", "mrr", "recall"):
            assert f"{base}_at_{k}" in res and f"{base}_at_{k}_n_queries" in res
    assert res["recall_at_100"] == pytest.approx(1.0)


def test_non_adjacent_query_rows_give_the_same_result():
    df = _frame(seed=2)
    base = evaluate_ranking(df, "score", query="qid", group="grp", judgment="rel")
    # interleave the queries' rows, keeping each query's internal row order (tie-breaks unchanged)
    pos = df.groupby("qid", sort=False).cumcount()
    shuffled = df.assign(_pos=pos.to_numpy()).sort_values(["_pos", "qid"], kind="stable").drop(columns="_pos")
    assert not shuffled.index.equals(df.index)
    res = evaluate_ranking(shuffled, "score", query="qid", group="grp", judgment="rel")
    for key, value in base.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(res[key])
        else:
            assert res[key] == pytest.approx(value, rel=1e-12), key


def test_all_queries_undefined_gives_nan_and_zero_count():
    df = pd.DataFrame({"query_id": [1, 1, 2], "protected": [0, 0, 0], "judgment": [1.0, 0.0, 2.0]})
    res = evaluate_ranking(df, [0.3, 0.1, 0.5], k=(1,))
    assert math.isnan(res["exposure_ratio"]) and res["exposure_ratio_n_queries"] == 0
    assert res["kendall_tau_n_queries"] == 1  # the one-item query is left out


def test_errors_name_the_problem():
    df = _frame(seed=3)
    with pytest.raises(DataError, match="scores for"):
        evaluate_ranking(df, [0.0] * 3, query="qid", group="grp", judgment="rel")
    bad = df.score.to_numpy().copy()
    bad[4] = np.nan
    with pytest.raises(DataError, match="row 4"):
        evaluate_ranking(df, bad, query="qid", group="grp", judgment="rel")
    with pytest.raises(DataError, match="score column 'nope'"):
        evaluate_ranking(df, "nope", query="qid", group="grp", judgment="rel")
    with pytest.raises(DataError, match=r"missing column\(s\) \['protected'\]"):
        evaluate_ranking(df, "score", query="qid", judgment="rel")


def test_metric_declarations():
    assert higher_is_better("ndcg_at_10") and not higher_is_better("exposure_disparity")
    for key in ("exposure_gap", "exposure_gap_n_queries"):  # signed, target 0: never an objective (issue 20)
        with pytest.raises(ConfigError, match="signed"):
            higher_is_better(key)
    with pytest.raises(ConfigError, match="exposure_disparity"):  # parity is a target, not "higher"
        higher_is_better("exposure_ratio")
    assert metric_info("precision_at_10").takes_k and metric_info("mrc_at_5").kind == "fairness"
    assert all(m.degenerate for m in METRICS.values())
    with pytest.raises(KeyError, match="unknown metric"):
        metric_info("accuracy")


# ---------------------------------------------------------------------------- length buckets
SKEWED_COLUMNS = RankingColumns(query="qid", group="grp", judgment="rel")
"""The column contract of :func:`_skewed`'s tables."""


def _skewed(seed: int) -> pd.DataFrame:
    """One long query, mid-length and short ones, a one-row query, a query without protected
    items, one without non-protected items, one with all-equal judgments, negative judgments;
    rows of a query not adjacent. Padded to one batch it is mostly padding (several buckets)."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(2, 15, size=60)
    sizes[0], sizes[1:4], sizes[4] = 400, rng.integers(80, 200, size=3), 1
    qid = np.repeat([f"q{i}" for i in rng.permutation(60)], sizes)
    n = len(qid)
    df = pd.DataFrame({"qid": qid, "grp": (rng.random(n) < 0.4).astype(int),
                       "rel": rng.integers(-1, 4, size=n).astype(float), "score": rng.normal(size=n)})
    df.loc[df.qid == df.qid.iloc[-1], "grp"] = 0  # the last row's query: no protected item
    first = df.qid.iloc[0]
    df.loc[df.qid == first, "grp"] = 2  # another group >= 1 only: no non-protected item
    df.loc[df.qid == df.qid.unique()[5], "rel"] = 1.0  # all judgments equal
    df.loc[rng.random(n) < 0.05, "score"] = 0.0  # score ties
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)


def _unbucketed(df, **kw):
    """The same metrics from one padded batch (every query padded to the longest)."""
    from fairltr.data import to_batch
    from fairltr.metrics import evaluate_batch

    frame = df[["qid", "grp", "rel"]].assign(__score__=df.score.to_numpy())
    batch = to_batch(frame, query="qid", group="grp", judgment="rel", features=["__score__"])
    return batch, evaluate_batch(batch.features[..., 0], batch, **kw)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("kw", [{}, {"k": (3, 50), "exposure_k": 10, "retrieval": True}])
def test_bucketed_metrics_equal_one_padded_batch(seed, kw):
    from fairltr.buckets import to_buckets

    df = _skewed(seed)
    assert len(to_buckets(df, query="qid", group="grp", judgment="rel", features=["score"]).batches) > 1
    res = evaluate_ranking(df, "score", query="qid", group="grp", judgment="rel", **kw)
    _, ref = _unbucketed(df, **kw)
    assert set(res) == set(ref)
    for key, value in ref.items():
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(res[key]), key
        else:
            assert res[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
    both = df.assign(p=df.grp >= 1).groupby("qid").p.agg(lambda s: 0 < s.sum() < len(s))
    assert res["exposure_ratio_n_queries"] == int(both.sum()) <= 58  # one-sided queries are left out


def test_per_query_table_equals_one_padded_batch():
    from fairltr.metrics import per_query_metrics
    from fairltr.metrics.evaluate import per_query_table

    df = _skewed(7)
    table = per_query_table(df, df.score.to_numpy(), columns=SKEWED_COLUMNS, k=(5,))
    batch, _ = _unbucketed(df)
    ref = per_query_metrics(batch.features[..., 0], batch, k=(5,))
    assert table.columns.tolist() == ["qid", *ref]
    assert table.qid.tolist() == batch.query_ids == list(df.qid.unique())
    for name, values in ref.items():
        np.testing.assert_allclose(table[name].to_numpy(), values.numpy(), rtol=1e-12, atol=1e-12, err_msg=name)


def test_per_query_metrics_of_buckets_needs_one_score_tensor_per_bucket():
    from fairltr.metrics import per_query_metrics
    from fairltr.metrics.evaluate import score_buckets

    buckets, scores = score_buckets(_skewed(1), "score", columns=SKEWED_COLUMNS)
    assert len(scores) == len(buckets.batches) > 1
    with pytest.raises(ValueError, match="one score tensor per bucket"):
        per_query_metrics(scores[:1], buckets)


def test_degenerate_tables_bucketed():
    one_query = pd.DataFrame({"query_id": [7] * 4, "protected": [0, 1, 0, 1], "judgment": [3.0, 2, 1, 0]})
    res = evaluate_ranking(one_query, [0.4, 0.3, 0.2, 0.1], k=(2,))
    assert res["kendall_tau"] == pytest.approx(1.0) and res["precision_at_2"] == 1.0
    # a long query and two one-row queries: two buckets; one-row queries have no kendall_tau and
    # one-sided groups no exposure ratio
    long_and_ones = pd.DataFrame({"query_id": [1] * 10 + [2, 3], "protected": [0, 1] * 5 + [1, 0],
                                  "judgment": list(range(10)) + [1.0, 0.0]})
    from fairltr.buckets import to_buckets

    assert len(to_buckets(long_and_ones, features=["protected"]).batches) == 2
    res = evaluate_ranking(long_and_ones, -np.arange(12.0), k=(1,))
    assert res["kendall_tau"] == pytest.approx(-1.0) and res["kendall_tau_n_queries"] == 1
    assert res["precision_at_1_n_queries"] == 3 and res["exposure_ratio_n_queries"] == 1
    assert res["ndcg_at_1_n_queries"] == 2  # query 3's only judgment is 0: no ideal DCG
