"""Peak memory and time of ``fairltr audit`` on a Parquet table: streamed in record batches
(:func:`fairltr.metrics.stream_audit`, what the command runs) vs one in-memory pass
(``pandas.read_parquet`` + :func:`fairltr.metrics.audit_ranking`). Each run is a fresh subprocess
(its own peak RSS, ``ru_maxrss``); each side is repeated ``--repeats`` times, alternating; prints
min / median / max and the ratios of the medians. Scoring rates with the whole-sample median
(the streamed audit's costliest case: it keeps one float64 score per row for the exact median).

    python benchmarks/bench_audit_stream.py --rows 1000000 --repeats 5
    python benchmarks/bench_audit_stream.py --rows 1000000 10000000 --repeats 3

Several ``--rows`` sizes show whether the streamed audit's memory is bounded: its peak RSS at each
size and the growth per extra row between sizes are printed. The in-memory pass runs only up to
``--memory-max-rows`` (default 2x10^6: at 10^6 rows it already peaks near 2.3 GB, so 10^7 rows
would need the order of 23 GB); above that it is reported as not run, with the estimate.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = r"""
import json, resource, sys, time
import pandas as pd
from fairltr.columns import RankingColumns
from fairltr.metrics import AuditConfig, audit_ranking
from fairltr.metrics.audit_stream import stream_audit
path, side = sys.argv[1], sys.argv[2]
c = RankingColumns(query="qid", group=("sex", "race"), judgment=None)
cfg = AuditConfig(k=10, ci=0, scoring="sample", unknown_values=("",), exclude_small=False)
t = time.perf_counter()
if side == "stream":
    res = stream_audit(path, columns=c, config=cfg, score_column="score")
else:
    df = pd.read_parquet(path)
    df["rel"] = 0.0
    res = audit_ranking(df, "score", columns=c.replace(judgment="rel"), config=cfg)
print(json.dumps({"seconds": time.perf_counter() - t, "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "worst": res.metrics["scoring_impact_ratio"]}))
"""


def make_table(path: Path, rows: int, per_query: int = 100) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    rng = np.random.default_rng(0)
    writer = None
    chunk = 1_000_000
    for start in range(0, rows, chunk):
        n = min(chunk, rows - start)
        idx = np.arange(start, start + n)
        race = rng.choice(np.array(["White", "Black", "Hispanic", "Asian", "Pacific", ""]), n,
                          p=[0.45, 0.25, 0.18, 0.08, 0.01, 0.03])
        sex = rng.choice(np.array(["Female", "Male"]), n)
        score = rng.normal(size=n) + 0.3 * (race == "White")
        t = pa.table({"qid": idx // per_query, "sex": sex, "race": race, "score": score})
        writer = writer or pq.ParquetWriter(path, t.schema)
        writer.write_table(t)
    writer.close()


def run(path: Path, side: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(path), side], capture_output=True, text=True)
    if out.returncode:
        raise SystemExit(f"{side} run failed: {out.stderr.strip().splitlines()[-1]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _summary(rs: list[dict], key: str) -> tuple[float, float, float]:
    values = [r[key] for r in rs]
    return min(values), statistics.median(values), max(values)


def bench_size(rows: int, repeats: int, memory_max_rows: int) -> dict[str, list[dict]]:
    """Make a ``rows``-row table, run each side ``repeats`` times (alternating), print the figures."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "audit.parquet"
        t = time.perf_counter()
        make_table(path, rows)
        print(f"table: {rows:,} rows, {rows // 100:,} queries, {path.stat().st_size / 2**20:.1f} MiB Parquet "
              f"(made in {time.perf_counter() - t:.1f} s)", flush=True)
        sides = ("stream", "memory") if rows <= memory_max_rows else ("stream",)
        results: dict[str, list[dict]] = {side: [] for side in sides}
        for _ in range(repeats):
            for side in sides:
                results[side].append(run(path, side))
    med = {}
    for side, rs in results.items():
        for key in ("peak_rss_mb", "seconds"):
            lo, mid, hi = _summary(rs, key)
            med[(side, key)] = mid
            print(f"  {side:6s} {key:11s} min {lo:9.2f}  median {mid:9.2f}  max {hi:9.2f}  (n={len(rs)})")
    if "memory" in results:
        worst = {side: {round(r["worst"], 12) for r in rs} for side, rs in results.items()}
        print(f"  same worst scoring_impact_ratio both ways: {worst['stream'] == worst['memory']} ({worst['stream']})")
        print(f"  streamed / in-memory at {rows:,} rows: peak RSS "
              f"{med[('stream', 'peak_rss_mb')] / med[('memory', 'peak_rss_mb')]:.2f}x, "
              f"time {med[('stream', 'seconds')] / med[('memory', 'seconds')]:.2f}x (medians)")
    else:
        print(f"  in-memory pass not run at {rows:,} rows (over --memory-max-rows {memory_max_rows:,}); "
              f"worst scoring_impact_ratio streamed: {sorted({round(r['worst'], 12) for r in results['stream']})}")
    return results


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, nargs="+", default=[1_000_000])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--memory-max-rows", type=int, default=2_000_000,
                    help="largest table the in-memory pass is run on (it needs about 2.3 KB a row)")
    args = ap.parse_args()
    by_size = {rows: bench_size(rows, args.repeats, args.memory_max_rows) for rows in sorted(args.rows)}
    sizes = sorted(by_size)
    for small, large in zip(sizes, sizes[1:]):
        a = statistics.median(r["peak_rss_mb"] for r in by_size[small]["stream"])
        b = statistics.median(r["peak_rss_mb"] for r in by_size[large]["stream"])
        ta = statistics.median(r["seconds"] for r in by_size[small]["stream"])
        tb = statistics.median(r["seconds"] for r in by_size[large]["stream"])
        print(f"streamed, {small:,} -> {large:,} rows ({large / small:.0f}x): peak RSS {a:.0f} -> {b:.0f} MB "
              f"({b / a:.2f}x; {(b - a) * 2**20 / (large - small):.1f} bytes per extra row), "
              f"time {ta:.2f} -> {tb:.2f} s ({tb / ta:.2f}x)")


if __name__ == "__main__":
    main()
