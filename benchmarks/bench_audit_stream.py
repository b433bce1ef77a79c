"""Peak memory and time of ``fairltr audit`` on a Parquet table: streamed in record batches
(:func:`fairltr.metrics.stream_audit`, what the command runs) vs one in-memory pass
(``pandas.read_parquet`` + :func:`fairltr.metrics.audit_ranking`). Each run is a fresh subprocess
(its own peak RSS, ``ru_maxrss``); each side is repeated ``--repeats`` times, alternating; prints
min / median / max and the ratios of the medians. Scoring rates with the whole-sample median
(the streamed audit's costliest case: it keeps one float64 score per row for the exact median).

    python benchmarks/bench_audit_stream.py --rows 1000000 --repeats 5
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "audit.parquet"
        t = time.perf_counter()
        make_table(path, args.rows)
        print(f"table: {args.rows:,} rows, {args.rows // 100:,} queries, {path.stat().st_size / 2**20:.1f} MiB Parquet "
              f"(made in {time.perf_counter() - t:.1f} s)")
        results: dict[str, list[dict]] = {"stream": [], "memory": []}
        for _ in range(args.repeats):
            for side in ("stream", "memory"):
                results[side].append(run(path, side))
    worst = {side: {round(r["worst"], 12) for r in rs} for side, rs in results.items()}
    print(f"same worst scoring_impact_ratio both ways: {worst['stream'] == worst['memory']} ({worst['stream']})")
    med = {}
    for side, rs in results.items():
        for key in ("peak_rss_mb", "seconds"):
            values = [r[key] for r in rs]
            med[(side, key)] = statistics.median(values)
            print(f"{side:6s} {key:11s} min {min(values):9.2f}  median {statistics.median(values):9.2f}  "
                  f"max {max(values):9.2f}  (n={len(values)})")
    print(f"streamed / in-memory: peak RSS {med[('stream', 'peak_rss_mb')] / med[('memory', 'peak_rss_mb')]:.2f}x, "
          f"time {med[('stream', 'seconds')] / med[('memory', 'seconds')]:.2f}x (medians)")


if __name__ == "__main__":
    main()
