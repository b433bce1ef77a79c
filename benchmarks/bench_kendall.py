"""Kendall tau-b speed: fairltr's ``kendall_tau`` (O(n log n), vectorised over queries) vs
``scipy.stats.kendalltau`` called per query; every ratio is measured in this one run.

Sizes n in --sizes (default 100, 1,000, 10,000, 100,000 candidates per query) with --total
candidates in all (queries = total / n, at least 1), for graded (0-4), binary (0/1) and continuous
judgments, distinct predicted ranks. fairltr runs twice: its numpy path (``FAIRLTR_COMPILED=0``
semantics: the radix inversion count) and with the compiled kernels loaded (the Fenwick count,
numba; what runs once they are loaded in a process or where they pay). Each side runs --repeats
times, interleaved; printed: min / median / max of scipy's time over fairltr's, round by round.
Every round checks the values equal scipy's to 1e-12.

Usage:  python benchmarks/bench_kendall.py [--sizes 100,1000,10000,100000] [--total 100000] [--repeats 5]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np
import torch
from scipy.stats import kendalltau

from fairltr.metrics import kendall_tau, ranks_by


def table(kind: str, n_queries: int, n: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    mask = torch.ones(n_queries, n, dtype=torch.bool)
    j = {"graded": lambda: rng.integers(0, 5, (n_queries, n)).astype(np.float64),
         "binary": lambda: rng.integers(0, 2, (n_queries, n)).astype(np.float64),
         "continuous": lambda: rng.random((n_queries, n))}[kind]()
    judgments = torch.as_tensor(j)
    scores = torch.as_tensor(rng.normal(size=(n_queries, n))) + 0.3 * judgments
    return ranks_by(scores, mask), judgments, mask


def scipy_per_query(pred, judgments) -> np.ndarray:
    x, y = (-pred).numpy(), judgments.numpy()
    return np.array([kendalltau(x[i], y[i]).statistic for i in range(len(x))])


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def spread(xs) -> str:
    return f"{min(xs):6.2f} / {statistics.median(xs):6.2f} / {max(xs):6.2f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,1000,10000,100000")
    ap.add_argument("--total", type=int, default=100_000, help="candidates in all per size")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    torch.set_num_threads(1)
    from fairltr.metrics.kendall_kernels import strict_inversions_rows  # load the kernels once (outside timings)

    strict_inversions_rows(np.zeros((1, 2), dtype=np.int64), 1)
    print(f"one torch thread; {args.repeats} interleaved rounds; wall seconds; ratio = scipy / fairltr "
          f"(min / median / max over rounds; > 1: fairltr faster). Shared 2-core machine: ratios, not times, count.")
    print(f"{'judgments':>10} {'n':>7} {'queries':>7} {'scipy s':>8} {'numpy s':>8} {'kernel s':>8}   "
          f"{'scipy/numpy (min/med/max)':>27}   {'scipy/kernel (min/med/max)':>27}")
    for kind in ("graded", "binary", "continuous"):
        for n in (int(s) for s in args.sizes.split(",")):
            q = max(1, args.total // n)
            pred, judgments, mask = table(kind, q, n, seed=n)
            t = {"scipy": [], "numpy": [], "kernel": []}
            for _ in range(args.repeats):
                ts, ref = timed(lambda: scipy_per_query(pred, judgments))
                os.environ["FAIRLTR_COMPILED"] = "0"
                tn, a = timed(lambda: kendall_tau(pred, judgments, mask))
                os.environ["FAIRLTR_COMPILED"] = "1"
                tk, b = timed(lambda: kendall_tau(pred, judgments, mask))
                os.environ.pop("FAIRLTR_COMPILED")
                assert np.allclose(a.numpy(), ref, rtol=0, atol=1e-12) and np.allclose(b.numpy(), ref, rtol=0, atol=1e-12)
                t["scipy"].append(ts), t["numpy"].append(tn), t["kernel"].append(tk)
            med = {k: statistics.median(v) for k, v in t.items()}
            print(f"{kind:>10} {n:>7} {q:>7} {med['scipy']:>8.4f} {med['numpy']:>8.4f} {med['kernel']:>8.4f}   "
                  f"{spread([s / x for s, x in zip(t['scipy'], t['numpy'])]):>27}   "
                  f"{spread([s / x for s, x in zip(t['scipy'], t['kernel'])]):>27}", flush=True)


if __name__ == "__main__":
    main()
