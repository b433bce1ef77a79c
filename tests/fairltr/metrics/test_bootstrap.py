"""Confidence intervals of docs/spec.md section 3b: the cluster bootstrap over queries, the
stratified candidate bootstrap, the paired difference, coverage and the 1/sqrt(n) width."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError
from fairltr.metrics import (
    CI_METADATA_KEYS, AuditConfig, audit_ranking, evaluate_ranking, headline_metrics, paired_difference,
)
from fairltr.metrics.resampling import query_weights, resolve_unit, stratified_weights

COLUMNS = RankingColumns(group=("race", "sex"))
SHIFT = {"A": 0.6, "B": 0.2, "C": -0.4}  # C is selected least: the worst impact ratio is C's, clearly


def generate(n_queries: int, seed: int, n: int = 20) -> pd.DataFrame:
    """A known generating process: i.i.d. queries of n candidates, race A/B/C, sex 0/1, a
    relevance that depends on race, a score = relevance + noise."""
    rng = np.random.default_rng(seed)
    rows = n_queries * n
    race = rng.choice(np.array(["A", "B", "C"]), rows, p=[0.5, 0.3, 0.2])
    rel = np.clip(np.round(rng.normal(size=rows) + pd.Series(race).map(SHIFT).to_numpy() + 1.0), 0, 3)
    return pd.DataFrame({"query_id": np.repeat(np.arange(n_queries), n), "race": race,
                         "sex": rng.integers(0, 2, rows), "judgment": rel,
                         "score": rel + rng.normal(scale=1.0, size=rows)})


def test_query_weights_and_stratified_weights():
    idx = np.array([[0, 0, 2], [1, 2, 2]])
    np.testing.assert_array_equal(query_weights(idx, 4), [[2, 0, 1, 0], [0, 1, 2, 0]])
    strata = np.array([3, 1, 3, 3, 1, 0])
    w = stratified_weights(strata, 50, np.random.default_rng(0))
    for s in np.unique(strata):  # every stratum keeps its size in every resample, rows leave their stratum never
        np.testing.assert_array_equal(w[:, strata == s].sum(axis=1), (strata == s).sum())
    assert w.min() >= 0 and w[:, strata == 0].min() == 1
    assert resolve_unit("auto", 29) == "candidates" and resolve_unit("auto", 30) == "queries"
    with pytest.raises(ConfigError):
        resolve_unit("rows", 5)


def test_every_headline_metric_gets_an_interval_with_its_metadata():
    df = generate(80, seed=1)
    m = evaluate_ranking(df, "score", columns=COLUMNS, k=(10,), audit=AuditConfig(k=10, n_boot=300, seed=4))
    present = [key for key in headline_metrics(10) if key in m]
    assert {"impact_ratio_at_10", "exposure_ratio", "ndcg_at_10", "kendall_tau", "ndkl_at_10"} <= set(present)
    for key in present:
        low, high = m[f"{key}_ci_low"], m[f"{key}_ci_high"]
        assert low <= high, key
        if key != "impact_ratio_at_10":  # a smooth figure: its interval holds the point value
            assert low <= m[key] <= high, key
    for key in ("impact_ratio_at_10.race", "impact_ratio_at_10.race:sex", "ndkl_at_10.sex"):
        assert m[f"{key}_ci_low"] <= m[f"{key}_ci_high"]
    assert [m[k] for k in CI_METADATA_KEYS] == [0.95, 300, 4, "queries", "percentile"]
    again = evaluate_ranking(df, "score", columns=COLUMNS, k=(10,), audit=AuditConfig(k=10, n_boot=300, seed=4))
    assert again == m  # the seed fixes the resamples
    other = evaluate_ranking(df, "score", columns=COLUMNS, k=(10,), audit=AuditConfig(k=10, n_boot=300, seed=5))
    assert other["ndcg_at_10_ci_low"] != m["ndcg_at_10_ci_low"]
    assert other["ndcg_at_10"] == m["ndcg_at_10"]


def test_bca_interval_and_the_table_bounds():
    df = generate(40, seed=2)
    res = audit_ranking(df, "score", columns=COLUMNS, config=AuditConfig(k=5, n_boot=200, method="BCa"))
    assert res.interval == {"level": 0.95, "n_boot": 200, "seed": 0, "unit": "queries", "method": "BCa"}
    t = res.table
    for col in ("selection_rate_at_k", "impact_ratio_at_k", "exposure_ratio"):
        ok = t[f"{col}_ci_low"].notna()
        assert ok.all() or col != "selection_rate_at_k"
        assert (t.loc[ok, f"{col}_ci_low"] <= t.loc[ok, f"{col}_ci_high"] + 1e-12).all()
    inside = (t["selection_rate_at_k_ci_low"] <= t["selection_rate_at_k"]) & (
        t["selection_rate_at_k"] <= t["selection_rate_at_k_ci_high"])
    assert inside.all()


def test_width_shrinks_as_one_over_sqrt_n_when_queries_quadruple():
    cfg = AuditConfig(k=5, n_boot=400, seed=0)
    widths = []
    for n_queries, seed in ((100, 10), (400, 11)):
        res = audit_ranking(generate(n_queries, seed), "score", columns=COLUMNS, config=cfg)
        rows = res.table.set_index(["attribute", "category"])
        widths.append(rows.loc[("race", "C"), "selection_rate_at_k_ci_high"]
                      - rows.loc[("race", "C"), "selection_rate_at_k_ci_low"])
    assert widths[1] / widths[0] == pytest.approx(0.5, abs=0.15)  # 1/sqrt(4)


def test_few_queries_resample_candidates_within_query_and_category():
    df = generate(8, seed=3, n=60)
    m = evaluate_ranking(df, "score", columns=COLUMNS, k=(10,), audit=AuditConfig(k=10, n_boot=300))
    assert m["ci_unit"] == "candidates" and m["ci_method"] == "percentile"
    assert m["impact_ratio_at_10_ci_low"] <= m["impact_ratio_at_10_ci_high"]
    assert m["exposure_ratio_ci_low"] <= m["exposure_ratio"] <= m["exposure_ratio_ci_high"]
    assert "ndcg_at_10_ci_low" not in m and "ndkl_at_10_ci_low" not in m  # rank-based: no candidate interval
    forced = evaluate_ranking(df, "score", columns=COLUMNS, k=(10,), audit=AuditConfig(k=10, n_boot=100,
                                                                                         unit="queries"))
    assert forced["ci_unit"] == "queries" and "ndcg_at_10_ci_low" in forced


def test_paired_difference_uses_the_same_resamples():
    df = generate(60, seed=4)
    # noisy enough that the better ranking's nDCG is not 1 in every resample (then both widths
    # would be equal by construction and the comparison below would hinge on float rounding)
    better = df["judgment"] + 0.6 * np.random.default_rng(0).normal(size=len(df))
    cfg = AuditConfig(k=10, n_boot=400)
    same = paired_difference(df, "score", "score", columns=COLUMNS, metric="ndcg_at_10", config=cfg)
    assert same["difference"] == 0 and same["ci_low"] == 0 and same["ci_high"] == 0
    d = paired_difference(df, better, "score", columns=COLUMNS, metric="ndcg_at_10", config=cfg)
    a = evaluate_ranking(df, better, columns=COLUMNS, k=(10,))["ndcg_at_10"]
    b = evaluate_ranking(df, "score", columns=COLUMNS, k=(10,))["ndcg_at_10"]
    assert d["difference"] == pytest.approx(a - b) and 0 < d["ci_low"] < d["difference"] < d["ci_high"]
    assert (d["level"], d["n_boot"], d["unit"]) == (0.95, 400, "queries")
    ir = paired_difference(df, better, "score", columns=COLUMNS, metric="impact_ratio_at_10.race", config=cfg)
    assert ir["ci_low"] <= ir["ci_high"] and math.isfinite(ir["difference"])
    # paired: the interval of the difference is narrower than the two intervals side by side
    ma = evaluate_ranking(df, better, columns=COLUMNS, k=(10,), audit=cfg)
    mb = evaluate_ranking(df, "score", columns=COLUMNS, k=(10,), audit=cfg)
    unpaired = (ma["ndcg_at_10_ci_high"] - ma["ndcg_at_10_ci_low"]) + (mb["ndcg_at_10_ci_high"] - mb["ndcg_at_10_ci_low"])
    assert d["ci_high"] - d["ci_low"] < unpaired
    with pytest.raises(ConfigError, match="unknown metric"):
        paired_difference(df, better, "score", columns=COLUMNS, metric="accuracy", config=cfg)
    with pytest.raises(ConfigError, match="confidence level"):
        paired_difference(df, better, "score", columns=COLUMNS, metric="ndcg_at_10", config=AuditConfig(ci=0))


def _truth(k: int) -> tuple[float, float]:
    """The population impact ratio of C and exposure_ratio_worst, from one very large sample of
    the same process (200,000 queries: its own error is ~1e-3, far inside the intervals)."""
    res = audit_ranking(generate(200_000, seed=999), "score", columns=RankingColumns(group="race"),
                        config=AuditConfig(k=k, ci=0))
    return res.metrics[f"impact_ratio_at_{k}"], res.metrics["exposure_ratio_worst"]


@pytest.mark.slow
def test_coverage_of_the_95_percent_intervals():
    k, reps = 5, 200
    true_ir, true_er = _truth(k)
    cover_ir = cover_er = 0
    for rep in range(reps):
        res = audit_ranking(generate(100, seed=rep), "score", columns=RankingColumns(group="race"),
                            config=AuditConfig(k=k, n_boot=500, seed=rep))
        m = res.metrics
        cover_ir += m[f"impact_ratio_at_{k}_ci_low"] <= true_ir <= m[f"impact_ratio_at_{k}_ci_high"]
        cover_er += m["exposure_ratio_worst_ci_low"] <= true_er <= m["exposure_ratio_worst_ci_high"]
    assert 0.90 <= cover_ir / reps <= 0.99, cover_ir / reps
    assert 0.90 <= cover_er / reps <= 0.99, cover_er / reps


@pytest.mark.parametrize("n_queries", [8, 40])
def test_the_resampled_statistic_at_unit_weights_is_the_point_evaluation(n_queries):
    """The statistic the bootstrap resamples, evaluated on the original table (every weight 1),
    gives exactly the point figures: the audit's, and evaluate_ranking's per-query averages
    (queries unit) or its binary section-3 exposure figures recomputed from candidate statistics
    (candidates unit)."""
    from fairltr.metrics.audit import prepare_audit, resampled_figures
    from fairltr.metrics.evaluate import per_query_extra, per_query_metrics, score_buckets

    df = generate(n_queries, seed=6)
    cfg = AuditConfig(k=10)
    point = evaluate_ranking(df, "score", columns=COLUMNS, k=(10,), audit=AuditConfig(k=10, ci=0))
    plan = prepare_audit(df, "score", columns=COLUMNS, config=cfg)
    buckets, s = score_buckets(df, "score", columns=COLUMNS)
    extra = per_query_extra(per_query_metrics(s, buckets, k=(10,)), headline_metrics(10))
    for unit, size in (("queries", plan.n_queries), ("candidates", plan.n_rows)):
        metrics, _ = resampled_figures(plan, unit, extra if unit == "queries" else None)(np.ones((2, size)))
        for key, values in metrics.items():
            np.testing.assert_allclose(values, point[key], rtol=1e-12, atol=1e-15, err_msg=f"{unit}: {key}")
        assert {"exposure_ratio", "exposure_disparity", "selection_ratio_at_10"} <= set(metrics)


@pytest.mark.parametrize("n_queries, unit", [(12, "candidates"), (45, "queries")])
def test_intervals_do_not_depend_on_the_row_order(n_queries, unit):
    """Issue 29: the same model, data and seed gave [0.500, 0.769] in one command and [0.533, 0.818]
    in another, because the candidate bootstrap drew rows in the frame's order. Queries are drawn in
    sorted-id order and candidates by stratum, score and judgment, so a shuffled table (and its
    queries renumbered in another order of appearance) gives the same intervals."""
    df = generate(n_queries, seed=7)
    df["score"] = np.round(df["score"], 1)  # ties inside strata
    cfg = AuditConfig(k=5, n_boot=200, seed=3)
    a = evaluate_ranking(df, "score", columns=COLUMNS, k=(5, 10), audit=cfg)
    assert a["ci_unit"] == unit
    for seed in (1, 2):
        shuffled = df.sample(frac=1.0, random_state=seed).reset_index(drop=True)
        b = evaluate_ranking(shuffled, "score", columns=COLUMNS, k=(5, 10), audit=cfg)
        assert set(a) == set(b)
        for key, value in a.items():
            if isinstance(value, float) and math.isfinite(value):
                assert b[key] == pytest.approx(value, rel=1e-12, abs=1e-12), key
            else:
                assert b[key] == value or (isinstance(value, float) and math.isnan(b[key])), key
        # the paired interval too: the same two rankings of the same rows, in another row order
        base = np.round(df["judgment"] + 0.5 * np.random.default_rng(seed).normal(size=len(df)), 1)
        d1 = paired_difference(df, base, "score", columns=COLUMNS, metric="impact_ratio_at_5", config=cfg)
        order = df.sample(frac=1.0, random_state=seed).index.to_numpy()
        d2 = paired_difference(df.iloc[order].reset_index(drop=True), base.to_numpy()[order], "score",
                               columns=COLUMNS, metric="impact_ratio_at_5", config=cfg)
        for key in ("difference", "ci_low", "ci_high"):
            assert d2[key] == pytest.approx(d1[key], rel=1e-12, abs=1e-12), key
