"""Speed of multinomial FA*IR (fairltr.fair.multinomial): the adjusted mtable for several protected
groups against binomial FA*IR's adjusted mtable at the same k, and the multinomial re-ranker against
the binomial one on the same table, every ratio measured in this one run.

    python benchmarks/bench_multinomial.py [--repeat 5] [--quick] [--cold]

* adjusted mtable, alpha = 0.1: three categories (two protected groups, p = 0.2 and 0.3, the rest
  0.5; the goal: k = 1,000 in under a second) at k = 100, 1,000, 2,000, and four categories (three
  protected, p = 0.1, 0.2, 0.3) at k = 100, 300; the binomial side is fairltr.fair.mtable at the same
  k with p = 0.5 (one protected group). Each run starts with the in-process caches cleared and
  the disk cache off (FAIRLTR_MTABLE_CACHE=0), after one untimed call that loads the compiled
  kernel (``--cold`` also times one fresh process doing its first table, kernel load included);
* re-ranking 10,000 queries x 100 candidates to their top 100 (three categories: W 0.6, B 0.25,
  H 0.15 of the candidates; p = B:0.2, H:0.1) against fairltr.fair.rerank with the non-W
  candidates protected at p = 0.3; tables cached (the re-ranking alone).

Every figure is min / median / max over --repeat runs, each side timed alternately.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

os.environ["FAIRLTR_MTABLE_CACHE"] = "0"  # time the computation, not the disk cache

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from fairltr.compiled import compiled_enabled  # noqa: E402
from fairltr.fair import clear_caches, mtable, rerank  # noqa: E402
from fairltr.fair.multinomial import (  # noqa: E402
    clear_multinomial_caches, multinomial_fail_probability, multinomial_mtable,
)
from fairltr.fair.multinomial_rerank import rerank_multinomial  # noqa: E402

GOAL_S = 1.0  # k = 1,000, three categories


def spread(xs: list[float]) -> str:
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}"


def timed(fn) -> float:
    t = time.perf_counter()
    fn()
    return time.perf_counter() - t


def bench_tables(cases, repeat: int) -> None:
    print(f"adjusted mtable, alpha = 0.1 (seconds min / median / max of {repeat}; caches cleared every run)")
    multinomial_mtable(100, (0.25, 0.25), 0.1)  # load the compiled kernel (untimed)
    for p, k in cases:
        multi, binom = [], []
        for _ in range(repeat):
            clear_multinomial_caches()
            multi.append(timed(lambda: multinomial_mtable(k, p, 0.1)))
            clear_caches()
            binom.append(timed(lambda: mtable(k, 0.5, 0.1)))
        fail = multinomial_fail_probability(multinomial_mtable(k, p, 0.1), p)
        ratios = [m / b for m, b in zip(multi, binom)]
        line = (f"  {len(p) + 1} categories p = {','.join(f'{v:g}' for v in p):<11} k = {k:>5,}: "
                f"{spread(multi)} s   binomial {spread(binom)} s   multinomial / binomial {spread(ratios)}"
                f"   fail {fail:.6f}")
        if len(p) == 2 and k == 1000:
            line += f"   goal < {GOAL_S:g} s: {'met' if max(multi) < GOAL_S else 'MISSED'} (max)"
        print(line)


def bench_cold() -> None:
    code = ("import os, time; os.environ['FAIRLTR_MTABLE_CACHE'] = '0'; t = time.perf_counter(); "
            "from fairltr.fair.multinomial import multinomial_mtable; multinomial_mtable(1000, (0.2, 0.3), 0.1); "
            "print(time.perf_counter() - t)")
    t = time.perf_counter()
    inner = float(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout)
    print(f"  one fresh process, import + first table (k = 1,000, three categories, kernel load included): "
          f"{inner:.3f} s (process {time.perf_counter() - t:.3f} s)")


def bench_rerank(repeat: int) -> None:
    rng = np.random.default_rng(0)
    n_q, n_c = 10_000, 100
    race = rng.choice(np.array(["W", "B", "H"]), n_q * n_c, p=[0.6, 0.25, 0.15])
    df = pd.DataFrame({"query_id": np.repeat(np.arange(n_q), n_c), "race": race,
                       "protected": (race != "W").astype(np.int64)})
    scores = rng.random(len(df))
    rerank_multinomial(df.head(2 * n_c), scores[: 2 * n_c], "B=0.2,H=0.1", k=n_c, group="race")  # tables cached
    rerank(df.head(2 * n_c), scores[: 2 * n_c], k=n_c, p=0.3, alpha=0.1)
    multi, binom = [], []
    for _ in range(repeat):
        multi.append(timed(lambda: rerank_multinomial(df, scores, "B=0.2,H=0.1", k=n_c, alpha=0.1, group="race")))
        binom.append(timed(lambda: rerank(df, scores, k=n_c, p=0.3, alpha=0.1)))
    ratios = [m / b for m, b in zip(multi, binom)]
    print(f"re-rank {n_q:,} queries x {n_c} candidates, k = {n_c} (seconds min / median / max of {repeat}): "
          f"multinomial {spread(multi)}   binomial {spread(binom)}   multinomial / binomial {spread(ratios)}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="skip k = 2,000 and the four-category k = 300")
    ap.add_argument("--cold", action="store_true", help="also time a fresh process's first table")
    args = ap.parse_args()
    print(f"compiled kernels: {'on' if compiled_enabled() else 'off (numpy)'}")
    cases = [((0.2, 0.3), 100), ((0.2, 0.3), 1000)] + ([] if args.quick else [((0.2, 0.3), 2000)])
    cases += [((0.1, 0.2, 0.3), 100)] + ([] if args.quick else [((0.1, 0.2, 0.3), 300)])
    bench_tables(cases, args.repeat)
    if args.cold:
        bench_cold()
    bench_rerank(args.repeat)


if __name__ == "__main__":
    main()
