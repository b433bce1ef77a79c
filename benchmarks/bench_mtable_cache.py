"""The mtable disk cache (fairltr.fair.table_cache): a first process computes an adjusted mtable and
writes it; fresh processes then read it. Goal: a second process reads k = 10^5 in under 0.5 s.

    python benchmarks/bench_mtable_cache.py [--repeat 5] [--k 100000] [--multinomial-k 2000]

Everything runs in fresh processes of this python against an empty temporary cache folder
(FAIRLTR_CACHE_DIR), so the user's cache is not touched. Per table:

* first process: computes the adjusted table (the search) and writes the entry; timed once;
* second processes (--repeat of them, one after the other): the ``mtable(...)`` call alone (the
  entry read and checked) and the whole process (interpreter start, imports, read, exit);
* the ratio first / second of the call times.

Printed: min / median / max over the second processes; the tables read are checked equal to the
computed one (SHA-256 of the bytes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

CALL = """
import hashlib, sys, time
t0 = time.perf_counter()
{imports}
t1 = time.perf_counter()
table = {call}
t2 = time.perf_counter()
print(t1 - t0, t2 - t1, hashlib.sha256(table.tobytes()).hexdigest())
"""

TABLES = {
    "binomial": ("from fairltr.fair import mtable", "mtable({k}, 0.5, 0.1)"),
    "multinomial": ("from fairltr.fair.multinomial import multinomial_mtable",
                    "multinomial_mtable({k}, (0.2, 0.3), 0.1)"),
}


def run(code: str, env: dict) -> tuple[float, float, str, float]:
    t = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", code], env=env, check=True, capture_output=True, text=True).stdout
    wall = time.perf_counter() - t
    imports, call, digest = out.split()
    return float(imports), float(call), digest, wall


def spread(xs: list[float]) -> str:
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--k", type=int, default=100_000, help="binomial table length (p 0.5, alpha 0.1)")
    ap.add_argument("--multinomial-k", type=int, default=2000, help="multinomial table length (p 0.2, 0.3); 0 skips")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fairltr-cache-bench-") as folder:
        env = {**os.environ, "FAIRLTR_CACHE_DIR": folder}
        env.pop("FAIRLTR_MTABLE_CACHE", None)
        jobs = [("binomial", args.k)] + ([("multinomial", args.multinomial_k)] if args.multinomial_k else [])
        for kind, k in jobs:
            imports, call = TABLES[kind]
            code = CALL.format(imports=imports, call=call.format(k=k))
            _, first, digest, first_wall = run(code, env)
            reads = [run(code, env) for _ in range(args.repeat)]
            assert all(r[2] == digest for r in reads), "a table read back differs from the computed one"
            calls = [r[1] for r in reads]
            walls = [r[3] for r in reads]
            ratios = [first / c for c in calls]
            goal = f"   goal < 0.5 s: {'met' if max(calls) < 0.5 else 'MISSED'} (max)" if kind == "binomial" else ""
            print(f"{kind} adjusted mtable k = {k:,}: first process computes in {first:.2f} s "
                  f"(process {first_wall:.2f} s); {args.repeat} second processes read it in {spread(calls)} s "
                  f"(whole process {spread(walls)} s), first / second {spread(ratios)}{goal}")


if __name__ == "__main__":
    main()
