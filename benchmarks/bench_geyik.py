"""Speed of fairltr's DetConstSort against AIF360 and FairRankTune, measured in one run.

    python benchmarks/bench_geyik.py --reference-python /tmp/refvenv/bin/python [--sizes 10000 100000] [--repeat 3]

The references run in a throwaway venv (``--reference-python``; see compare_geyik.py); never
dependencies. Two layouts per size N (candidates in total), 3 categories, each query's own mix
as the target:

* ``one list``: one query of N candidates, its top 1,000 re-ranked (a recruiter's long list);
* ``lists of 100``: N / 100 queries of 100 candidates, whole lists re-ranked (a search log);
* ``one list, k = N`` (N <= --max-whole only): one query re-ranked whole (fairltr's default k).
  FairRankTune's cost grows as k x N there (it looks every output item up in the input list),
  so N = 10^5 would take hours and is not run.

fairltr: ``rerank_geyik`` on the whole table (DataFrame in, DataFrame out), best of --repeat;
``strict=True`` is compared with AIF360 ``Constrained`` and ``strict=False`` with FairRankTune
(the outputs are checked to be identical). References: their per-query API called for every
query (input conversion included), timed inside the reference venv, best of --repeat passes
while the passes so far took under --ref-repeat-seconds (one pass otherwise). A reference run over
--max-ref-seconds on the smaller size is skipped at the larger one and marked "skipped"; with
--ref-queries Q only the first Q queries of a layout are timed and the time is scaled by
(queries / Q), marked "extrapolated" (queries are independent, so the cost is linear in them).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.fair import rerank_geyik

DRIVER = Path(__file__).resolve().with_name("geyik_reference_driver.py")
COLS = RankingColumns(group="cat", judgment=None)
RUNS = {"aif360:Constrained": True, "fairranktune:DetConstSort": False}  # reference -> fairltr's strict


def table(n_total: int, per_query: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_q = n_total // per_query
    cats = rng.choice(3, size=n_total, p=[0.5, 0.3, 0.2])
    cats.reshape(n_q, per_query)[:, :3] = [0, 1, 2]  # every category in every query
    return pd.DataFrame({"query_id": np.repeat(np.arange(n_q), per_query), "cat": cats,
                         "score": rng.permutation(n_total) + rng.random(n_total) * 0.5,
                         "row": np.tile(np.arange(per_query), n_q)})


def time_ours(df: pd.DataFrame, k: int, strict: bool, repeat: int) -> tuple[float, pd.DataFrame]:
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = rerank_geyik(df, "score", method="detconstsort", k=k, columns=COLS, strict=strict)
        best = min(best, time.perf_counter() - t)
    return best, out


def top_orders(out: pd.DataFrame, k: int) -> list[list[int]]:
    return [grp["row"].tolist()[:min(k, len(grp))] for _, grp in out.groupby("query_id", sort=False)]


def run_refs(python: str, df: pd.DataFrame, k: int, runs: list[str], n_ref: int, repeat: int = 1,
             budget: float = 0.0) -> dict:
    queries = []
    for qi, (_, grp) in enumerate(df.groupby("query_id", sort=False)):
        if qi >= n_ref:
            break
        cats = grp["cat"].to_numpy()
        queries.append({"scores": grp["score"].tolist(), "cats": cats.tolist(),
                        "p": [float(np.sum(cats == g)) / len(grp) for g in range(3)], "k": min(k, len(grp))})
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "in.json", Path(tmp) / "out.json"
        src.write_text(json.dumps({"queries": queries, "runs": runs, "repeat": repeat, "repeat_budget_s": budget}))
        subprocess.run([python, str(DRIVER), str(src), str(dst)], check=True)
        return json.loads(dst.read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reference-python", required=True)
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ref-queries", type=int, default=None, help="time the references on this many queries only")
    ap.add_argument("--max-ref-seconds", type=float, default=600.0)
    ap.add_argument("--ref-repeat-seconds", type=float, default=2.0,
                    help="a reference pass is repeated (best of --repeat) while its passes took under this")
    ap.add_argument("--max-whole", type=int, default=10_000, help="largest N of the whole-list layout")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    slow: set[tuple[str, str]] = set()
    for n in args.sizes:
        layouts = [("one list", n, 1000), ("lists of 100", 100, 100)]
        if n <= args.max_whole:
            layouts.append(("one list, k = N", n, n))
        for layout, per_query, k in layouts:
            df = table(n, per_query)
            n_q = n // per_query
            n_ref = n_q if args.ref_queries is None else min(n_q, args.ref_queries)
            runs = [r for r in RUNS if (layout, r) not in slow]
            ref = (run_refs(args.reference_python, df, k, runs, n_ref, args.repeat, args.ref_repeat_seconds) if runs
                   else {"results": {}, "seconds": {}})
            for run, strict in RUNS.items():
                ours_s, out = time_ours(df, k, strict, args.repeat)
                if run not in ref["seconds"]:
                    rows.append({"N": n, "layout": layout, "reference": run, "fairltr_s": ours_s, "reference_s": None,
                                 "ratio": None, "note": "skipped (too slow at the smaller size)"})
                    continue
                ref_s = ref["seconds"][run] * n_q / n_ref
                res = ref["results"][run]
                same = all(r["order"] == o for r, o in zip(res, top_orders(out, k)[:n_ref]))
                errors = sum(r["error"] is not None for r in res)
                if ref_s > args.max_ref_seconds:
                    slow.add((layout, run))
                rows.append({"N": n, "layout": layout, "reference": run, "fairltr_s": ours_s, "reference_s": ref_s,
                             "ratio": ref_s / ours_s, "identical": same, "reference_errors": errors,
                             "note": "extrapolated" if n_ref < n_q else ""})
                print(f"N={n:>7,} {layout:16s} {run:27s} fairltr {ours_s:8.3f} s  reference {ref_s:9.2f} s  "
                      f"ratio {ref_s / ours_s:8.1f}x  identical={same} {rows[-1]['note']}", flush=True)
    if args.json:
        print(json.dumps(rows))
    sys.exit(0)


if __name__ == "__main__":
    main()
