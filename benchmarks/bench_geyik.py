"""Speed of fairltr's Geyik et al. re-rankers on ONE list against a plain Python loop, AIF360 and
FairRankTune, measured in one run, outputs checked identical.

    python benchmarks/bench_geyik.py --reference-python /tmp/refvenv/bin/python [--sizes 100 1000 10000 100000]
        [--categories 3 6] [--repeat 5] [--ref-budget 20]

Cells: one query of n candidates (n in --sizes) x G categories (--categories; shares 0.4/0.3/0.3 or
0.3/0.2/0.2/0.1/0.1/0.1, every category present) x k in {100, n}, each query's own mix as the target.

* fairltr: ``rerank_geyik`` on the whole table (DataFrame in, DataFrame out), two paths: ``numpy``
  (``FAIRLTR_COMPILED=0``: for one list, the walk on Python lists) and ``kernels`` (the compiled
  kernels loaded in the process: what runs once they are, or where they pay;
  :func:`fairltr.compiled.pays`). DetConstSort is run strict (AIF360's reading) and literal
  (``strict=False``, FairRankTune's reading). A third column times ``geyik_order`` (the same list
  as arrays: scores and categories in, the order out; kernels loaded), the one-list API.
* ``plain``: a plain Python loop of DetGreedy / DetCons / DetRelaxed on lists (scores and categories
  in, top-k order out; below), the baseline of issue 34.
* references (a throwaway venv, ``--reference-python``: aif360==0.6.1, fairranktune==0.0.7; see
  compare_geyik.py), through benchmarks/geyik_reference_driver.py: AIF360 ``Greedy``/``Conservative``/
  ``Relaxed``/``Constrained`` and FairRankTune ``DETCONSTSORT``. A reference whose cell took over
  --ref-budget seconds is not run at larger n ("-"), nor on whole lists above --max-ref-whole. AIF360's Greedy and the below-minimum branch of
  its Conservative / Relaxed deviate from the paper (docs/fair.md), so "same" is printed, not assumed.

Each side runs --repeat times (references: while under --ref-budget, at least once); every figure
is min / median / max of the ratio other / fairltr over the rounds (> 1: fairltr faster). The
machine is shared (2 cores): ratios within one run are what count.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.fair import geyik_order, rerank_geyik

DRIVER = Path(__file__).resolve().with_name("geyik_reference_driver.py")
COLS = RankingColumns(group="cat", judgment=None)
SHARES = {3: [0.4, 0.3, 0.3], 6: [0.3, 0.2, 0.2, 0.1, 0.1, 0.1]}
REFS = {"detgreedy": ["aif360:Greedy"], "detcons": ["aif360:Conservative"], "detrelaxed": ["aif360:Relaxed"],
        "detconstsort": ["aif360:Constrained", "fairranktune:DetConstSort"]}
STRICT = {"aif360:Constrained": True, "fairranktune:DetConstSort": False}


def plain_loop(scores: list, cats: list, p: list, k: int, method: str) -> list:
    """DetGreedy / DetCons / DetRelaxed on lists: the baseline (ties: larger score, then earlier row)."""
    n_g = len(p)
    lists = [[] for _ in range(n_g)]
    for i in sorted(range(len(scores)), key=lambda i: (-scores[i], i)):
        lists[cats[i]].append(i)
    cnt, out = [0] * n_g, []
    for j in range(1, k + 1):
        best_min = best_max = best_any = None
        for g in range(n_g):
            if cnt[g] >= len(lists[g]):
                continue
            i = lists[g][cnt[g]]
            lo, hi = math.floor(j * p[g]), math.ceil(j * p[g])
            key = (-scores[i], i)
            if cnt[g] < lo:
                if best_min is None or key < best_min[0]:
                    best_min = (key, g)
            elif cnt[g] < hi:
                u = 0 if method == "detgreedy" else hi / p[g] if method == "detcons" else math.ceil(hi / p[g])
                if best_max is None or (u, key) < best_max[0]:
                    best_max = ((u, key), g)
            if best_any is None or key < best_any[0]:
                best_any = (key, g)
        g = (best_min or best_max or best_any)[1]
        out.append(lists[g][cnt[g]])
        cnt[g] += 1
    return out


def one_list(n: int, n_g: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cats = rng.choice(n_g, size=n, p=SHARES[n_g])
    cats[:n_g] = np.arange(n_g)
    return pd.DataFrame({"query_id": 0, "cat": cats, "score": rng.permutation(n) + rng.random(n) * 0.5,
                         "row": np.arange(n)})


def ours(df, method, k, strict, compiled: str) -> tuple[float, list]:
    os.environ["FAIRLTR_COMPILED"] = compiled
    try:
        t = time.perf_counter()
        out = rerank_geyik(df, "score", method=method, k=k, columns=COLS, strict=strict)
        return time.perf_counter() - t, out["row"].tolist()[:k]
    finally:
        os.environ.pop("FAIRLTR_COMPILED")


def ours_arrays(df, method, k, strict) -> tuple[float, list]:
    os.environ["FAIRLTR_COMPILED"] = "1"
    try:
        scores, cats = df["score"].to_numpy(), df["cat"].to_numpy()
        t = time.perf_counter()
        order = geyik_order(scores, cats, method=method, k=k, strict=strict)
        return time.perf_counter() - t, order[:k].tolist()
    finally:
        os.environ.pop("FAIRLTR_COMPILED")


def refs(python: str, df: pd.DataFrame, k: int, runs: list[str], repeat: int, budget: float) -> dict:
    cats = df["cat"].to_numpy()
    n_g = int(cats.max()) + 1
    query = {"scores": df["score"].tolist(), "cats": cats.tolist(),
             "p": [float(np.sum(cats == g)) / len(df) for g in range(n_g)], "k": k}
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({"queries": [query], "runs": runs, "repeat": repeat, "repeat_budget_s": budget}))
        subprocess.run([python, str(DRIVER), str(src), str(dst)], check=True)
        return json.loads(dst.read_text())


def spread(xs: list[float]) -> str:
    return f"{min(xs):8.2f} /{statistics.median(xs):8.2f} /{max(xs):8.2f}" if xs else f"{'-':>28}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference-python", default=None)
    ap.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 10_000, 100_000])
    ap.add_argument("--categories", type=int, nargs="+", default=[3, 6])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ref-budget", type=float, default=20.0)
    ap.add_argument("--max-ref-whole", type=int, default=10_000,
                    help="largest n whose whole list (k = n) the references re-rank (FairRankTune's cost grows "
                         "as k x n: hours at 10^5; AIF360 fails there when a category runs out)")
    args = ap.parse_args()
    ours(one_list(500, 3), "detgreedy", 500, True, "1")  # load the kernels once, outside the timings
    ours(one_list(500, 3), "detconstsort", 500, True, "1")
    print("one list of n, whole (k = n) or top 100; ratio = other / fairltr, min / median / max of "
          f"{args.repeat} rounds (> 1: fairltr faster); shared 2-core machine")
    print("columns: fairltr ms = kernels loaded, numpy ms = FAIRLTR_COMPILED=0 (medians); numpy / kernels per round")
    print(f"{'method':>13} {'n':>7} {'G':>2} {'k':>7} {'kernel ms':>10} {'numpy ms':>9} {'numpy / kernels':>28} "
          f"{'other':>26} {'runs':>4} "
          f"{'other / fairltr numpy':>28} {'other / fairltr kernels':>28} {'other / geyik_order':>28}  same")
    slow: set[tuple[str, int, bool]] = set()
    for n in args.sizes:
        for n_g in args.categories:
            df = one_list(n, n_g)
            for k in sorted({min(100, n), n}):
                for method in ("detgreedy", "detcons", "detrelaxed", "detconstsort"):
                    pairs = [(strict, r) for strict in ([True, False] if method == "detconstsort" else [True])
                             for r in ([None] if method != "detconstsort" else []) + [
                                 r for r in REFS[method] if STRICT.get(r, True) == strict]]
                    for strict, ref in pairs:
                        _row(args, df, n, n_g, k, method, strict, ref, slow)


def _row(args, df, n, n_g, k, method, strict, ref, slow) -> None:
    tn, tk, ta, order = [], [], [], None
    for _ in range(args.repeat):
        a, order = ours(df, method, k, strict, "0")
        b, order_k = ours(df, method, k, strict, "1")
        c, order_a = ours_arrays(df, method, k, strict)
        assert order == order_k == order_a
        tn.append(a), tk.append(b), ta.append(c)
    other_t, same = [], "-"
    if ref is None:
        name = "plain loop"
        cats = df["cat"].tolist()
        p = (np.bincount(df["cat"], minlength=n_g) / n).tolist()
        for _ in range(args.repeat):
            t = time.perf_counter()
            want = plain_loop(df["score"].tolist(), cats, p, k, method)
            other_t.append(time.perf_counter() - t)
        same = str(want == order)
    else:
        name = ref
        key = (ref, k == n, n_g)
        if args.reference_python and key not in slow and not (k == n and n > args.max_ref_whole):
            res = refs(args.reference_python, df, k, [ref], args.repeat, args.ref_budget)
            other_t = res["times"][ref]
            got = res["results"][ref][0]
            same = f"error ({got['error'][:40]})" if got["error"] else str(got["order"] == order)
            if max(other_t) > args.ref_budget:
                slow.add(key)
    m = len(other_t)
    rn = [o / t for o, t in zip(other_t, tn[:m] if m else [])]
    rk = [o / t for o, t in zip(other_t, tk[:m] if m else [])]
    ra = [o / t for o, t in zip(other_t, ta[:m] if m else [])]
    label = method + ("" if method != "detconstsort" else (" strict" if strict else " literal"))
    speedup = [a / b for a, b in zip(tn, tk)]
    print(f"{label:>13} {n:>7} {n_g:>2} {k:>7} {statistics.median(tk) * 1e3:>10.2f} {statistics.median(tn) * 1e3:>9.2f} "
          f"{spread(speedup)} {name:>26} {m:>4} {spread(rn)} {spread(rk)} {spread(ra)}  {same}", flush=True)


if __name__ == "__main__":
    main()
