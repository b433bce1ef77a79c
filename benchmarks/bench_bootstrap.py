"""Cost of the confidence intervals of docs/spec.md section 3b against one point evaluation.

    python benchmarks/bench_bootstrap.py [--queries 10000] [--candidates 100] [--resamples 2000] [--repeat 5]

One table of Q queries x N candidates (race in 6 string categories, sex 0/1, judgments 0..3),
evaluated twice by :func:`fairltr.metrics.evaluate_ranking` with the audit of race x sex at k = 10:

* point: ``AuditConfig(ci=0)`` -- today's metrics, the per-category table and the worst cases;
* with intervals: ``AuditConfig(ci=0.95, n_boot=B)`` -- the same plus the cluster bootstrap
  (queries unit) for every headline metric, every per-attribute worst case and the table's
  rates and ratios.

and the bootstrap step alone (resampling and re-pooling every figure from the prepared per-query
statistics). Each round runs the three once, in a rotating order, so a round's ratios compare
runs made at the same moment on a shared machine; printed: the median times and min / median /
max over ``--repeat`` rounds (default 5) of each round's ratio to its point evaluation (goal:
under 10x).
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.metrics import AuditConfig, evaluate_ranking, headline_metrics
from fairltr.metrics.audit import interval_bounds, prepare_audit
from fairltr.metrics.evaluate import per_query_extra, per_query_metrics, score_buckets

RACES = np.array(["White", "Black", "Hispanic", "Asian", "Native American", "Other"])


def table(n_queries: int, n_candidates: int, seed: int = 0) -> tuple[pd.DataFrame, np.ndarray]:
    rng = np.random.default_rng(seed)
    rows = n_queries * n_candidates
    df = pd.DataFrame({
        "query_id": np.repeat(np.arange(n_queries), n_candidates),
        "race": rng.choice(RACES, rows, p=[0.45, 0.25, 0.15, 0.08, 0.04, 0.03]),
        "sex": rng.integers(0, 2, rows),
        "judgment": rng.integers(0, 4, rows).astype(float),
    })
    scores = df["judgment"].to_numpy() + rng.normal(size=rows)
    return df, scores


def rounds(repeat: int, fns: dict) -> tuple[dict[str, list[float]], dict]:
    """Each of ``fns`` once per round (order rotating); the seconds of every run and the last outputs."""
    names = list(fns)
    times: dict[str, list[float]] = {n: [] for n in names}
    out: dict = {}
    for r in range(repeat):
        for name in names[r % len(names):] + names[:r % len(names)]:
            t = time.perf_counter()
            out[name] = fns[name]()
            times[name].append(time.perf_counter() - t)
    return times, out


def spread(values: list[float]) -> str:
    return f"min {min(values):.2f} / median {statistics.median(values):.2f} / max {max(values):.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--queries", type=int, default=10_000)
    ap.add_argument("--candidates", type=int, default=100)
    ap.add_argument("--resamples", type=int, default=2000)
    ap.add_argument("--repeat", type=int, default=5, help="rounds (each side once per round)")
    args = ap.parse_args()
    df, scores = table(args.queries, args.candidates)
    columns = RankingColumns(group=("race", "sex"))
    k = (10,)
    cfg = AuditConfig(k=10, ci=0.95, n_boot=args.resamples)
    buckets, s = score_buckets(df, scores, columns=columns)
    per_q = per_query_metrics(s, buckets, k=k)
    plan = prepare_audit(df, scores, columns=columns, config=cfg)
    point_keys = evaluate_ranking(df, scores, columns=columns, k=k, audit=AuditConfig(k=10, ci=0))
    extra = per_query_extra(per_q, [key for key in headline_metrics(10) if key in point_keys])
    times, out = rounds(args.repeat, {
        "point": lambda: evaluate_ranking(df, scores, columns=columns, k=k, audit=AuditConfig(k=10, ci=0)),
        "intervals": lambda: evaluate_ranking(df, scores, columns=columns, k=k, audit=cfg),
        # the bootstrap step alone, on the same table: resampling + re-pooling every figure
        "bootstrap": lambda: interval_bounds(plan, extra),
    })
    point, full = out["point"], out["intervals"]
    med = {n: statistics.median(v) for n, v in times.items()}
    ci_ratio = [c / p for c, p in zip(times["intervals"], times["point"])]
    boot_ratio = [b / p for b, p in zip(times["bootstrap"], times["point"])]
    n_bounds = sum(1 for key in full if key.endswith("_ci_low"))
    print(f"table: {args.queries:,} queries x {args.candidates} candidates ({len(df):,} rows), race (6) x sex (2), "
          f"k = 10; {args.repeat} rounds, order rotating (a shared machine: each round's ratios count)")
    print(f"point evaluation (today's metrics + audit):   median {med['point']:8.2f} s")
    print(f"with {args.resamples:,} bootstrap resamples ({full['ci_unit']}): median {med['intervals']:8.2f} s  "
          f"({n_bounds} metrics with an interval, plus the table's rates and ratios)")
    print(f"the bootstrap step alone ({args.resamples:,} resamples of every figure):   median {med['bootstrap']:8.2f} s")
    print(f"ratio evaluation with intervals / point evaluation, per round: {spread(ci_ratio)} (goal < 10x)")
    print(f"ratio bootstrap step alone / point evaluation, per round: {spread(boot_ratio)}")
    for key in headline_metrics(10):
        if f"{key}_ci_low" in full:
            print(f"  {key:28s} {full[key]:.4f} [{full[key + '_ci_low']:.4f}, {full[key + '_ci_high']:.4f}]")
    assert all(point[key] == full[key] or (np.isnan(point[key]) and np.isnan(full[key])) for key in point)


if __name__ == "__main__":
    main()
