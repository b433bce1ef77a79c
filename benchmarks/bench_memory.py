"""Peak memory of evaluation, FA*IR re-ranking and DELTR training on a skewed vs a uniform table.

The skewed table holds one query of 10,000 candidates and 9,999 queries of 100 (1,009,900 rows);
the uniform table 10,000 queries of 100 (1,000,000 rows). Both carry ``--features`` numeric
features, a 0/1 protected column, a judgment and a score. Padding every query to the longest
list would make the skewed table 100x larger than the uniform one (10,000 x 10,000 slots);
with length buckets both need memory proportional to their rows, so the skewed/uniform ratio of
each operation should stay near 1.

Every measurement runs in a FRESH child process (``--child OP TABLE``) that builds its table,
records its peak RSS so far (``ru_maxrss``: the table, the imports), runs one operation and
reports the new peak RSS and the operation's wall time. glibc's mmap threshold is fixed in the
children so that freed temporaries leave the process and peaks repeat (``--malloc-default``
keeps the dynamic one). The child's address space is capped (``--cap-gib``, RLIMIT_AS) and its
run time limited (``--timeout``), so a regression fails with MemoryError or a timeout instead
of eating the machine. Operations:

* ``evaluate``: ``evaluate_ranking(df, "score")`` (default cut-offs 1, 5, 10, 20, 100);
* ``rerank``: ``rerank(df, "score", k=--rerank-k, p=0.3, alpha=0.1)`` (``--rerank-k 0``: k=None, every
  candidate re-ranked);
* ``fit``: ``DELTR(gamma=1e5, max_iter=--iters, tol=0).fit(df)`` (L-BFGS, the features and the
  protected column).

Usage:  python benchmarks/bench_memory.py [--features 8] [--iters 5] [--rerank-k 100] [--cap-gib 8] [--repeats 5]
        [--timeout 300] [--ops evaluate rerank fit] [--tables uniform skewed] [--malloc-default]
        [--markdown OUT.md] [--json OUT.json] [--label TEXT]
Run with PYTHONPATH=<another checkout> to measure another version of fairltr the same way.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import resource
import subprocess
import sys
import time
from pathlib import Path

TABLES = ("uniform", "skewed")
OPS = ("evaluate", "rerank", "fit")


# ---------------------------------------------------------------------------- child
def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def build_table(kind: str, n_features: int, seed: int = 0):
    """The skewed (1 x 10,000 + 9,999 x 100 rows) or uniform (10,000 x 100) ranking table."""
    import numpy as np
    import pandas as pd

    sizes = np.full(10_000, 100, dtype=np.int64)
    if kind == "skewed":
        sizes[0] = 10_000
    rng = np.random.default_rng(seed)
    rows = int(sizes.sum())
    x = rng.normal(size=(rows, n_features))
    prot = (rng.random(rows) < 0.4).astype(np.int64)
    judgment = x[:, 0] + 0.5 * x[:, 1 % n_features] - prot + 0.1 * rng.normal(size=rows)
    df = pd.DataFrame(x, columns=[f"x{i}" for i in range(1, n_features + 1)])
    df.insert(0, "protected", prot)
    df.insert(0, "query_id", np.repeat(np.arange(1, len(sizes) + 1), sizes))
    df["judgment"] = judgment
    df["score"] = x[:, 0] + 0.3 * rng.normal(size=rows)
    return df


def child(op: str, table: str, args) -> dict:
    """Run one measurement in this (fresh) process; returns the JSON record."""
    cap = int(args.cap_gib * 2**30)
    resource.setrlimit(resource.RLIMIT_AS, (cap, cap))
    import numpy as np  # noqa: F401
    import torch

    torch.set_num_threads(1)
    from fairltr import DELTR, evaluate_ranking
    from fairltr.fair import rerank

    df = build_table(table, args.features)
    features = [c for c in df.columns if c.startswith("x")] + ["protected"]
    base = _peak_mib()
    record = {"op": op, "table": table, "rows": len(df), "queries": int(df["query_id"].nunique()),
              "base_peak_mib": base}
    t0 = time.perf_counter()
    try:
        if op == "evaluate":
            evaluate_ranking(df, "score")
        elif op == "rerank":
            rerank(df, "score", k=args.rerank_k or None, p=0.3, alpha=0.1)
        elif op == "fit":
            DELTR(gamma=1e5, max_iter=args.iters, tol=0.0, device="cpu").fit(
                df[["query_id", *features, "judgment"]], features=features)
        else:
            raise ValueError(op)
        record["ok"] = True
    except MemoryError as exc:
        record.update(ok=False, error=f"MemoryError: {str(exc)[:160]}")
    except RuntimeError as exc:  # torch reports a failed allocation as RuntimeError
        asked = re.search(r"you tried to allocate (\d+) bytes", str(exc))
        record.update(ok=False, error=(f"torch could not allocate {int(asked.group(1)) / 2**30:.2f} GiB more" if asked
                                       else f"RuntimeError: {str(exc).splitlines()[0][:160]}"))
    record["seconds"] = time.perf_counter() - t0
    record["peak_mib"] = _peak_mib()
    return record


# ---------------------------------------------------------------------------- parent
def padding_summary() -> str:
    """Padded slots of each table as one batch (queries x longest) and in length buckets."""
    import numpy as np

    try:
        from fairltr.buckets import length_buckets
    except ImportError:  # a fairltr without length buckets
        length_buckets = None
    parts = []
    for kind in TABLES:
        sizes = np.full(10_000, 100, dtype=np.int64)
        if kind == "skewed":
            sizes[0] = 10_000
        text = f"{kind}: {sizes.sum():,} rows, one padded batch {len(sizes) * sizes.max():,} slots"
        if length_buckets is not None:
            buckets = length_buckets(sizes)
            cells = sum(len(b) * int(sizes[b].max()) for b in buckets)
            text += f", {len(buckets)} length bucket(s) {cells:,} slots"
        parts.append(text)
    return "Padding: " + "; ".join(parts) + "."


def measure(op: str, table: str, args) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", op, table, "--features", str(args.features),
           "--cap-gib", str(args.cap_gib), "--iters", str(args.iters), "--rerank-k", str(args.rerank_k)]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1")
    if not args.malloc_default:
        # glibc's default mmap threshold grows as large blocks are freed, after which freed
        # temporaries stay in the heap: the same operation then peaks anywhere between 800 and
        # 1,200 MiB from run to run. A fixed threshold (glibc's initial 128 KiB) returns every
        # large block to the system when freed, so the peak is that of the live arrays and repeats.
        env["MALLOC_MMAP_THRESHOLD_"] = "131072"
    t0 = time.perf_counter()
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"op": op, "table": table, "ok": False, "error": f"timeout after {args.timeout} s",
                "seconds": time.perf_counter() - t0}
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode != 0 or not lines:
        tail = (out.stderr.strip().splitlines() or ["(no output)"])[-1][:200]
        return {"op": op, "table": table, "ok": False, "error": f"exit {out.returncode}: {tail}",
                "seconds": time.perf_counter() - t0}
    return json.loads(lines[-1])


def _fmt(r: dict | None, key: str, spec: str) -> str:
    if r is None or key not in r:
        return "-"
    return format(r[key], spec)


def report(results: list[dict], args) -> str:
    by = {(r["op"], r["table"]): r for r in results}
    head = ("| operation | uniform peak MiB (op) | uniform s | skewed peak MiB (op) | skewed s "
            "| skewed/uniform peak (op) |")
    lines = [head, "|" + "---|" * 6]
    for op in args.ops:
        u, s = by.get((op, "uniform")), by.get((op, "skewed"))
        cells = [op]
        for r in (u, s):
            if r is None:
                cells += ["-", "-"]
            elif not r.get("ok"):
                cells += [f"FAILED: {r.get('error', '?')}", _fmt(r, "seconds", ".1f")]
            else:
                cells += [f"{r['peak_mib']:.0f} ({r['peak_mib'] - r['base_peak_mib']:.0f})", f"{r['seconds']:.1f}"]
        if u and s and u.get("ok") and s.get("ok"):
            du = max(u["peak_mib"] - u["base_peak_mib"], 1.0)
            ds = max(s["peak_mib"] - s["base_peak_mib"], 1.0)
            cells.append(f"{s['peak_mib'] / u['peak_mib']:.2f} ({ds / du:.2f})")
        else:
            cells.append("-")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=2, metavar=("OP", "TABLE"), help=argparse.SUPPRESS)
    ap.add_argument("--ops", nargs="+", choices=OPS, default=list(OPS))
    ap.add_argument("--tables", nargs="+", choices=TABLES, default=list(TABLES))
    ap.add_argument("--features", type=int, default=8, help="numeric features (plus the protected column)")
    ap.add_argument("--iters", type=int, default=5, help="L-BFGS iterations of DELTR.fit")
    ap.add_argument("--rerank-k", type=int, default=100, help="FA*IR k (top-k re-ranked per query; 0: every candidate)")
    ap.add_argument("--cap-gib", type=float, default=8.0, help="address-space cap of each child (RLIMIT_AS)")
    ap.add_argument("--timeout", type=float, default=300.0, help="seconds before a child is killed")
    ap.add_argument("--malloc-default", action="store_true",
                    help="keep glibc's dynamic mmap threshold in the children (peaks then vary from run to run)")
    ap.add_argument("--repeats", type=int, default=5, help="rounds (every cell once per round, fresh processes)")
    ap.add_argument("--label", default="", help="a name for this run in the output")
    ap.add_argument("--markdown", type=Path, help="append the table (with the settings) to this file")
    ap.add_argument("--json", type=Path, help="write the raw records as JSON")
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], args)), flush=True)
        return 0
    import fairltr

    settings = (f"{args.label + ': ' if args.label else ''}fairltr from {Path(fairltr.__file__).parent}, "
                f"{args.features} features + protected, DELTR {args.iters} L-BFGS iterations (gamma 1e5), "
                f"FA*IR k={args.rerank_k or 'None (every candidate)'} p=0.3 alpha=0.1, "
                f"cap {args.cap_gib:g} GiB address space per child, "
                f"Python {platform.python_version()}, 1 torch thread, "
                f"{'glibc default malloc' if args.malloc_default else 'MALLOC_MMAP_THRESHOLD_=131072'}")
    print(settings, flush=True)
    cells = padding_summary()
    if cells:
        print(cells, flush=True)
        settings += f"\n\n{cells}"
    results = []
    ratios: dict[str, list[float]] = {op: [] for op in args.ops}
    for rep in range(args.repeats):  # every cell once per round, each a fresh process
        run = []
        for op in args.ops:
            for table in args.tables:
                r = measure(op, table, args)
                run.append(r)
                state = "ok" if r.get("ok") else f"FAILED ({r.get('error')})"
                print(f"  round {rep + 1}: {op:8} {table:8} peak {_fmt(r, 'peak_mib', '.0f')} MiB "
                      f"(before the op {_fmt(r, 'base_peak_mib', '.0f')} MiB), {_fmt(r, 'seconds', '.1f')} s: {state}",
                      flush=True)
            by = {(r["op"], r["table"]): r for r in run}
            u, k = by.get((op, "uniform")), by.get((op, "skewed"))
            if u and k and u.get("ok") and k.get("ok"):
                ratios[op].append(k["peak_mib"] / u["peak_mib"])
        results = run  # the table shows the last round
    table = report(results, args)
    print("\n" + table)
    for op, rs in ratios.items():
        if rs:
            print(f"{op}: skewed / uniform peak per round min {min(rs):.2f} / median {sorted(rs)[len(rs) // 2]:.2f} / "
                  f"max {max(rs):.2f} over {len(rs)} rounds")
    if args.markdown:
        args.markdown.parent.mkdir(parents=True, exist_ok=True)
        with args.markdown.open("a") as fh:
            fh.write(f"\n{settings}\n\n{table}\n")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"settings": settings, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
