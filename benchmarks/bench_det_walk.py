"""DetGreedy / DetCons / DetRelaxed on ONE list: fairltr's ``rerank_geyik`` (DataFrame in and out,
the path a process takes without the compiled kernels: ``FAIRLTR_COMPILED=0``, the single-list walk
:mod:`fairltr.fair.det_walk_one`) against the plain Python loop of benchmarks/bench_geyik.py
(scores, categories and shares as lists in, the top-k order out), outputs checked identical.

    python benchmarks/bench_det_walk.py [--sizes 100 1000 10000] [--categories 3 6] [--repeat 7]

Cells: n in --sizes x G in --categories (bench_geyik.one_list: shares 0.4/0.3/0.3 or
0.3/0.2/0.2/0.1/0.1/0.1, the list's own mix as the target) x k in {100, n}. Each round times the
plain loop then fairltr once (after one warm-up call each); printed: min / median / max over the
rounds of the ratio fairltr / plain (< 1: fairltr faster; issue 34's goal at n = 10^4, k = n: <= 0.5)
and both sides' median milliseconds.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_geyik import COLS, one_list, plain_loop  # noqa: E402

from fairltr.fair import rerank_geyik  # noqa: E402

METHODS = ("detgreedy", "detcons", "detrelaxed")


def plain(scores: list, cats: list, n_g: int, k: int, method: str) -> tuple[float, list]:
    t = time.perf_counter()
    counts = [0] * n_g
    for c in cats:
        counts[c] += 1
    out = plain_loop(scores, cats, [c / len(cats) for c in counts], k, method)
    return time.perf_counter() - t, out


def ours(df, k: int, method: str) -> tuple[float, list]:
    t = time.perf_counter()
    out = rerank_geyik(df, "score", method=method, k=k, columns=COLS)
    return time.perf_counter() - t, out["row"].tolist()[:k]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10000])
    ap.add_argument("--categories", type=int, nargs="+", default=[3, 6])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    os.environ["FAIRLTR_COMPILED"] = "0"
    print(f"fairltr / plain loop, one list, FAIRLTR_COMPILED=0, {args.repeat} rounds (min / median / max)")
    print(f"{'n':>6} {'G':>2} {'k':>6} {'method':<11} {'ratio min / median / max':<26} {'fairltr ms':>10} "
          f"{'plain ms':>9} same")
    for n in args.sizes:
        for n_g in args.categories:
            df = one_list(n, n_g)
            scores, cats = df["score"].tolist(), df["cat"].tolist()
            for k in sorted({min(100, n), n}):
                for method in METHODS:
                    plain(scores, cats, n_g, k, method), ours(df, k, method)  # warm-up
                    tp, to, same = [], [], True
                    for _ in range(args.repeat):
                        t_plain, want = plain(scores, cats, n_g, k, method)
                        t_ours, got = ours(df, k, method)
                        tp.append(t_plain)
                        to.append(t_ours)
                        same &= got == want
                    r = sorted(o / p for o, p in zip(to, tp))
                    print(f"{n:>6} {n_g:>2} {k:>6} {method:<11} {r[0]:.2f} / {statistics.median(r):.2f} / {r[-1]:.2f}"
                          f"{'':<10} {statistics.median(to) * 1e3:>10.2f} {statistics.median(tp) * 1e3:>9.2f} "
                          f"{'yes' if same else 'NO'}", flush=True)
    print(f"numpy {np.__version__}, python {sys.version.split()[0]}")


if __name__ == "__main__":
    main()
