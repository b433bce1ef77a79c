"""Kendall tau-b speed: the O(n log n) ``kendall_tau`` vs the former O(n^2) pairwise version and
vs ``scipy.stats.kendalltau`` called per query; every ratio is measured in this one run.

Each size holds ``--queries`` queries of n candidates (n = 100, 1,000, 10,000 by default), integer
judgments 0-4 (many ties) and distinct predicted ranks; 10% of the slots are padding. Times are
medians over ``--repeats`` rounds of this thread's CPU time (robust to other processes on a shared
machine); the three implementations are interleaved round by round. Every round also checks that
the three agree to 1e-12.

Usage:  python benchmarks/bench_kendall.py [--sizes 100,1000,10000] [--queries 16] [--repeats 3] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

import numpy as np
import torch
from scipy.stats import kendalltau

from fairltr.metrics import kendall_tau, ranks_by
from fairltr.metrics.relevance import _kendall_tau_pairwise


def table(n_queries: int, n: int, seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    rng = np.random.default_rng(seed)
    mask = torch.as_tensor(rng.random((n_queries, n)) < 0.9)
    judgments = torch.as_tensor(rng.integers(0, 5, size=(n_queries, n)).astype(np.float64))
    scores = torch.as_tensor(rng.normal(size=(n_queries, n))) + 0.3 * judgments
    return ranks_by(scores, mask), judgments, mask


def scipy_per_query(pred: torch.Tensor, judgments: torch.Tensor, mask: torch.Tensor) -> np.ndarray:
    x, y, m = (-pred).numpy(), judgments.numpy(), mask.numpy()
    return np.array([kendalltau(x[i][m[i]], y[i][m[i]]).statistic for i in range(len(m))])


def cpu_seconds(fn) -> tuple[float, object]:
    t0 = time.thread_time()
    out = fn()
    return time.thread_time() - t0, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,10000", help="candidates per query, comma-separated")
    parser.add_argument("--queries", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--json", help="also write the table as JSON here")
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    print(f"{args.queries} queries per size, one torch thread, median CPU seconds of {args.repeats} rounds")
    print(f"{'n':>7} {'new':>10} {'pairwise':>10} {'scipy':>10} {'pairwise/new':>13} {'scipy/new':>10}")
    for n in (int(s) for s in args.sizes.split(",")):
        pred, judgments, mask = table(args.queries, n, seed=n)
        times: dict[str, list[float]] = {"new": [], "pairwise": [], "scipy": []}
        for _ in range(args.repeats):
            t_new, new = cpu_seconds(lambda: kendall_tau(pred, judgments, mask))
            t_pair, pair = cpu_seconds(lambda: _kendall_tau_pairwise(pred, judgments, mask))
            t_scipy, ref = cpu_seconds(lambda: scipy_per_query(pred, judgments, mask))
            assert np.allclose(new.numpy(), ref, rtol=0, atol=1e-12), "kendall_tau disagrees with scipy"
            assert np.allclose(pair.numpy(), ref, rtol=0, atol=1e-12), "pairwise disagrees with scipy"
            for key, t in (("new", t_new), ("pairwise", t_pair), ("scipy", t_scipy)):
                times[key].append(t)
        med = {k: statistics.median(v) for k, v in times.items()}
        row = {"n": n, "queries": args.queries, "new_s": med["new"], "pairwise_s": med["pairwise"],
               "scipy_s": med["scipy"], "pairwise_over_new": med["pairwise"] / med["new"],
               "scipy_over_new": med["scipy"] / med["new"]}
        rows.append(row)
        print(f"{n:>7} {med['new']:>10.4f} {med['pairwise']:>10.4f} {med['scipy']:>10.4f} "
              f"{row['pairwise_over_new']:>13.1f} {row['scipy_over_new']:>10.2f}")
    for a, b in zip(rows, rows[1:]):
        growth = b["new_s"] / a["new_s"]
        nlogn = (b["n"] * np.log2(b["n"])) / (a["n"] * np.log2(a["n"]))
        print(f"n {a['n']} -> {b['n']}: n log n time x{growth:.1f} (n log n predicts x{nlogn:.1f}, "
              f"n^2 x{(b['n'] / a['n']) ** 2:.0f}); pairwise x{b['pairwise_s'] / a['pairwise_s']:.1f}")
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
