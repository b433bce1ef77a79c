"""Peak memory of the full-batch DELTR estimator at 10^6 rows x 32 float32 features (issue 34, item 4).

Every run is a FRESH child process that imports torch and fairltr, fits DELTR once on a 10-row
table (the first L-BFGS step imports torch._dynamo, ~80 MiB, whatever the data), records its
peak RSS (the import floor, ``ru_maxrss``), builds the table (10,000 queries x 100 candidates, 32 float32
features, an int8 protected column, a float32 judgment: the 32 features are 122 MiB), then runs
``DELTR(gamma=1e5, dtype=float32, max_iter=--iters, tol=0).fit(df)`` (L-BFGS) and records the new
peak. The figure is

    (peak RSS - import floor) / feature bytes      (the table itself counts: >= 1)

(also printed: the same above the floor right after ``import fairltr``, before the warm-up fit).

glibc's mmap threshold is fixed (MALLOC_MMAP_THRESHOLD_=131072) so that freed temporaries leave
the process and peaks repeat; 1 torch thread. ``--dtype float64`` measures DELTR's default dtype
(a float64 training copy alone is 2x a float32 table). Each setting runs ``--repeats`` times;
min / median / max are printed. A run whose peak passes ``--cap-gib`` fails with MemoryError.

Usage:  python benchmarks/bench_deltr_memory.py [--rows 1000000] [--features 32] [--iters 3]
        [--repeats 5] [--dtype float32 float64]
Run with PYTHONPATH=<another checkout> to measure another version the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def child(args) -> dict:
    cap = int(args.cap_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import numpy as np
    import pandas as pd
    import torch

    torch.set_num_threads(1)
    from fairltr import DELTR

    imported = _peak_mib()
    warm = pd.DataFrame({"query_id": np.repeat([1, 2], 5), "protected": np.tile([0, 1], 5),
                         "x1": np.arange(10.0), "judgment": np.arange(10.0) % 3})
    DELTR(gamma=1.0, max_iter=2, device="cpu", dtype=getattr(torch, args.child_dtype)).fit(warm)
    floor = _peak_mib()  # imports + the fit path's lazy imports (torch.optim's first step imports torch._dynamo)
    n_q = args.rows // 100
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n_q * 100, args.features), dtype=np.float32)
    prot = (rng.random(n_q * 100) < 0.4).astype(np.int8)
    judgment = (x[:, 0] + 0.5 * x[:, 1] - prot).astype(np.float32)
    names = [f"x{i}" for i in range(1, args.features + 1)]
    df = pd.DataFrame({"query_id": np.repeat(np.arange(n_q, dtype=np.int32), 100), "protected": prot})
    df = pd.concat([df, pd.DataFrame(x, columns=names, copy=False)], axis=1)
    df["judgment"] = judgment
    del x
    table_mib = n_q * 100 * args.features * 4 / 2**20
    dtype = getattr(torch, args.child_dtype)
    t0 = time.perf_counter()
    record = {"dtype": args.child_dtype, "floor_mib": floor, "import_mib": imported, "table_mib": table_mib}
    try:
        model = DELTR(gamma=1e5, max_iter=args.iters, tol=0.0, device="cpu", dtype=dtype)
        model.fit(df, features=[*names, "protected"])
        record.update(ok=True, n_iter=model.n_iter_, loss=model.history_[-1]["total"])
    except (MemoryError, RuntimeError) as exc:
        record.update(ok=False, error=f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}")
    record["seconds"] = time.perf_counter() - t0
    record["peak_mib"] = _peak_mib()
    record["ratio"] = (record["peak_mib"] - floor) / table_mib
    record["ratio_import"] = (record["peak_mib"] - imported) / table_mib
    return record


def measure(args, dtype: str) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child-dtype", dtype, "--rows", str(args.rows),
           "--features", str(args.features), "--iters", str(args.iters), "--cap-gib", str(args.cap_gib)]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
               MALLOC_MMAP_THRESHOLD_="131072")
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["(no output)"])[-1][:200]
        return {"dtype": dtype, "ok": False, "error": f"exit {out.returncode}: {tail}"}
    return json.loads(lines[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child-dtype", help=argparse.SUPPRESS)
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--features", type=int, default=32)
    ap.add_argument("--iters", type=int, default=3, help="L-BFGS iterations (memory does not depend on them)")
    ap.add_argument("--repeats", type=int, default=5, help="fresh processes per dtype")
    ap.add_argument("--dtype", nargs="+", default=["float32"], choices=["float32", "float64"])
    ap.add_argument("--cap-gib", type=float, default=8.0)
    ap.add_argument("--timeout", type=float, default=300.0)
    args = ap.parse_args(argv)
    if args.child_dtype:
        print(json.dumps(child(args)), flush=True)
        return 0
    print(f"DELTR.fit peak memory, {args.rows:,} rows x {args.features} float32 features, {args.iters} L-BFGS "
          f"iterations, gamma 1e5, 1 torch thread, MALLOC_MMAP_THRESHOLD_=131072, each run a fresh process; "
          f"ratio = (peak RSS - import floor) / feature bytes (the table counts)", flush=True)
    for dtype in args.dtype:
        runs = [measure(args, dtype) for _ in range(args.repeats)]
        for r in runs:
            state = "ok" if r.get("ok") else f"FAILED ({r.get('error')})"
            print(f"  training dtype {dtype}: floor {r.get('floor_mib', 0):.0f} MiB, peak {r.get('peak_mib', 0):.0f} MiB,"
                  f" table {r.get('table_mib', 0):.0f} MiB -> {r.get('ratio', float('nan')):.2f}x "
                  f"({r.get('ratio_import', float('nan')):.2f}x above the floor before the warm-up fit, "
                  f"{r.get('import_mib', 0):.0f} MiB), "
                  f"{r.get('seconds', 0):.1f} s: {state}", flush=True)
        ratios = [r["ratio"] for r in runs if r.get("ok")]
        if ratios:
            print(f"training dtype {dtype}: (peak - floor) / table min {min(ratios):.2f} median "
                  f"{statistics.median(ratios):.2f} max {max(ratios):.2f} over {len(ratios)} runs; goal <= 3: "
                  f"{'meets' if max(ratios) <= 3 else 'MISSES'}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
