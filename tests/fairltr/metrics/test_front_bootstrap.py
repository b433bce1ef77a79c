"""Hypervolume intervals of Pareto fronts (fairltr.metrics.front_bootstrap): the batched 2-D
hypervolume against the sweep report's and a grid enumeration, the resampled objectives
against evaluate_ranking (all-ones weights) and against the explicitly expanded resample
(scipy's tau-b, a loop for the exposures), and the whole interval against a brute-force loop
over resamples on the same draws."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from fairltr.metrics import evaluate_ranking
from fairltr.metrics.front_bootstrap import (
    RankedFolds, front_hypervolume_intervals, hypervolume_2d_batch, resampled_objectives,
)
from fairltr.metrics.resampling import bootstrap_candidates, bootstrap_queries

DIRS = ("maximize", "minimize")
TOL = 1e-12


def grid_hypervolume(points: np.ndarray, ref: tuple[float, float]) -> float:
    """Brute force: split the plane at every coordinate and add each cell some point dominates
    (tau up, disparity down)."""
    pts = [p for p in points if np.isfinite(p).all() and p[0] > ref[0] and p[1] < ref[1]]
    xs = sorted({ref[0], *(p[0] for p in pts)})
    ys = sorted({ref[1], *(p[1] for p in pts)})
    area = 0.0
    for x0, x1 in zip(xs, xs[1:]):
        for y0, y1 in zip(ys, ys[1:]):
            if any(p[0] >= x1 and p[1] <= y0 for p in pts):
                area += (x1 - x0) * (y1 - y0)
    return area


def test_batched_hypervolume_matches_a_grid():
    rng = np.random.default_rng(0)
    pts = rng.uniform(size=(30, 7, 2))
    pts[3, 2] = np.nan  # an undefined trial adds nothing
    pts[4] = [1.5, 1.5]  # nothing better than the reference in disparity: 0
    ref = (0.1, 0.9)
    got = hypervolume_2d_batch(pts, DIRS, ref)
    for b in range(len(pts)):
        assert got[b] == pytest.approx(grid_hypervolume(pts[b], ref), abs=TOL)
    assert got[4] == 0.0


def ranked_table(seed: int, n_queries: int, n: int, levels: int | None = None) -> pd.DataFrame:
    """Queries of n candidates in rank order (rank 1 first), groups 0/1/2, judgments with ties."""
    rng = np.random.default_rng(seed)
    rows = n_queries * n
    y = rng.integers(0, levels, rows).astype(float) if levels else np.round(rng.normal(size=rows), 1)
    return pd.DataFrame({"query_id": np.repeat(np.arange(n_queries), n), "protected": rng.choice(3, rows, p=[.5, .3, .2]),
                         "judgment": y, "rank": np.tile(np.arange(1, n + 1), n_queries)})


def as_trial(df: pd.DataFrame, fold: np.ndarray | None = None, row: np.ndarray | None = None) -> RankedFolds:
    return RankedFolds(np.zeros(len(df), int) if fold is None else fold, df["query_id"].to_numpy(),
                       df["protected"].to_numpy(), df["judgment"].to_numpy(), df["rank"].to_numpy(),
                       np.arange(len(df)) if row is None else row)


def point_of(df: pd.DataFrame) -> tuple[float, float]:
    m = evaluate_ranking(df, (-df["rank"]).astype(float).to_numpy())
    return m["kendall_tau"], m["exposure_disparity"]


@pytest.mark.parametrize("levels", [3, None])
def test_all_ones_weights_give_evaluate_ranking(levels):
    df = ranked_table(1, 6, 25, levels)
    for unit, units in (("candidates", len(df)), ("queries", 6)):
        got = resampled_objectives(as_trial(df), np.ones((2, units)), unit)
        assert got[0] == pytest.approx(point_of(df), abs=1e-10)
        assert got[1] == pytest.approx(point_of(df), abs=1e-10)


def test_folds_are_averaged_as_the_sweep_averages_them():
    from fairltr.workflows.sweep import mean_over_folds

    a, b = ranked_table(2, 3, 10, 4), ranked_table(3, 4, 12, 4)
    b = b.assign(query_id=b["query_id"] + 3)
    both = pd.concat([a, b], ignore_index=True)
    fold = np.r_[np.zeros(len(a), int), np.ones(len(b), int)]
    got = resampled_objectives(as_trial(both, fold), np.ones((1, 7)), "queries")[0]
    per = [evaluate_ranking(t, (-t["rank"]).astype(float).to_numpy()) for t in (a, b)]
    want = mean_over_folds(per)
    assert got == pytest.approx((want["kendall_tau"], want["exposure_disparity"]), abs=1e-10)


def expanded(df: pd.DataFrame, w: np.ndarray) -> tuple[float, float]:
    """Brute force of one candidate resample: every candidate repeated w times (its rank kept),
    scipy's tau-b per query, the group exposures by a loop."""
    taus, ratios = [], []
    for _, g in df.assign(w=w.astype(int)).groupby("query_id"):
        g = g.loc[g.index.repeat(g["w"])]
        taus.append(stats.kendalltau(-g["rank"], g["judgment"]).statistic)
        v = 1 / np.log1p(g["rank"].to_numpy(float))
        p, n = g["protected"].to_numpy() >= 1, g["protected"].to_numpy() == 0
        ratios.append(v[p].mean() / v[n].mean())
    r = float(np.nanmean(ratios))
    return float(np.nanmean(taus)), 1 - min(r, 1 / r)


@pytest.mark.parametrize("block,levels", [(128, 3), (4, 3), (5, None)])
def test_candidate_resample_equals_the_expanded_table(block, levels, monkeypatch):
    import fairltr.metrics.front_bootstrap as fb

    monkeypatch.setattr(fb, "BLOCK", block)  # several blocks of the sweep down the ranking, or one
    df = ranked_table(4, 3, 15, levels)
    strata = (df["query_id"] * 3 + df["protected"]).to_numpy()
    from fairltr.metrics.resampling import stratified_weights

    w = stratified_weights(strata, 5, np.random.default_rng(0))
    got = resampled_objectives(as_trial(df), w, "candidates")
    for b in range(5):
        assert got[b] == pytest.approx(expanded(df, w[b]), abs=1e-10)


def permuted(df: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, np.ndarray]:
    """Another trial's ranking of the same table: ranks shuffled within each query; ``row`` the
    row numbers of ``df`` in the new order."""
    rng = np.random.default_rng(seed)
    new_rank = df.groupby("query_id")["rank"].transform(lambda r: rng.permutation(r.to_numpy())).to_numpy()
    out = df.assign(rank=new_rank)
    return out, np.arange(len(df))


@pytest.mark.parametrize("unit", ["candidates", "queries"])
def test_interval_matches_a_brute_force_loop(unit):
    base = ranked_table(5, 4, 8, 3)
    fronts_df = [[permuted(base, s) for s in (0, 1, 2)], [permuted(base, s) for s in (3, 4)]]
    fronts = [[as_trial(t, row=row) for t, row in f] for f in fronts_df]
    strata = (base["query_id"] * 3 + base["protected"]).to_numpy()
    ref = (-0.5, 0.9)
    low, high, used = front_hypervolume_intervals(fronts, directions=DIRS, reference=ref, strata=strata,
                                                  n_queries=4, unit=unit, level=0.9, n_boot=60, seed=7)
    assert used == unit

    def brute(weights: np.ndarray) -> np.ndarray:  # one resample at a time, the expanded table
        out = np.empty((len(fronts_df), len(weights)))
        for b, w in enumerate(weights):
            for m, front in enumerate(fronts_df):
                pts = []
                for t, _ in front:
                    if unit == "candidates":
                        pts.append(expanded(t, w))
                    else:  # each drawn query once per draw, under a new query id
                        copies = [t[t["query_id"] == q].assign(query_id=1000 * k + q)
                                  for q in range(4) for k in range(int(w[q]))]
                        pts.append(point_of(pd.concat(copies, ignore_index=True)))
                out[m, b] = grid_hypervolume(np.array(pts), ref)
        return out

    if unit == "candidates":
        want = bootstrap_candidates(brute, strata, level=0.9, n_boot=60, seed=7)
    else:
        want = bootstrap_queries(brute, 4, level=0.9, n_boot=60, seed=7)
    np.testing.assert_allclose(low, want[0], atol=1e-10)
    np.testing.assert_allclose(high, want[1], atol=1e-10)
    assert np.all(low <= high) and np.all(high > 0)


@pytest.mark.parametrize("levels", [3, None])
def test_tied_scores_give_evaluate_rankings_expectation(levels):
    """A trial's scores with ties (docs/spec.md section 3, "Ties"): all-ones weights give
    evaluate_ranking's tie-unordered figures, whatever order the ties were kept in."""
    df = ranked_table(7, 5, 20, levels)
    rng = np.random.default_rng(0)
    score = np.round(rng.normal(size=len(df)), 0)
    # the kept rank: by score, ties in some order (here: reversed row order)
    order = np.lexsort((-np.arange(len(df)), -score, df["query_id"].to_numpy()))
    rank = np.empty(len(df), dtype=np.int64)
    pos = np.arange(len(df)) - np.searchsorted(df["query_id"].to_numpy()[order], df["query_id"].to_numpy()[order])
    rank[order] = pos + 1
    df = df.assign(rank=rank)
    trial = RankedFolds(np.zeros(len(df), int), df["query_id"].to_numpy(), df["protected"].to_numpy(),
                        df["judgment"].to_numpy(), rank, np.arange(len(df)), score=score)
    want = evaluate_ranking(df, score)
    for unit, units in (("candidates", len(df)), ("queries", 5)):
        got = resampled_objectives(trial, np.ones((1, units)), unit)[0]
        assert got == pytest.approx((want["kendall_tau"], want["exposure_disparity"]), abs=1e-10)
    untied = resampled_objectives(RankedFolds(*[getattr(trial, f) for f in ("fold", "query", "group", "judgment",
                                                                              "rank", "row")]), np.ones((1, 5)), "queries")
    assert abs(untied[0][0] - want["kendall_tau"]) > 1e-6  # the kept order alone would differ (ties do matter here)
