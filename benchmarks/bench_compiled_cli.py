"""A whole ``fairltr rerank --method detconstsort`` CLI call with the compiled kernels available
(the ``[fast]`` extra, default ``FAIRLTR_COMPILED`` unset: they run only where they pay) against the
same call with ``FAIRLTR_COMPILED=0``, end to end (process start, imports, read, re-rank, write).

    python benchmarks/bench_compiled_cli.py [--repeat 5] [--layouts one:1000 lists:100000 one:100000 one:1000000]

Layouts: ``one:N`` one query of N candidates, ``lists:N`` N / 100 queries of 100; 3 categories;
CSV in, CSV out; whole lists re-ranked. Where the numpy path is estimated below the kernels' load
(fairltr.compiled.pays) both commands run the same code and the ratio shows the noise; one list of
10^6 is where the kernels run. Per layout the two commands alternate --repeat times (after
one untimed warm-up call each; the [fast] one with FAIRLTR_COMPILED=1 fills the numba cache, kept in
a temporary FAIRLTR_CACHE_DIR); the outputs are checked byte-identical. Printed: min / median / max seconds of
each side and of the ratio fast / off round by round (<= 1: [fast] is not slower). Then the
kernels' load in a fresh process (fairltr.compiled.LOAD_SECONDS), and one call with an EMPTY numba
cache per layout (what a first run after installing pays). The machine
is shared (2 cores): ratios within a run are what count.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

FAIRLTR = str(Path(sys.executable).with_name("fairltr"))


def write_input(path: Path, layout: str, n: int) -> None:
    rng = np.random.default_rng(0)
    per = n if layout == "one" else 100
    df = pd.DataFrame({"query_id": np.repeat(np.arange(n // per), per), "cat": rng.choice(3, n, p=[0.5, 0.3, 0.2]),
                       "score": rng.random(n), "judgment": rng.integers(0, 3, n)})
    df.to_csv(path, index=False)


def call(src: Path, out: Path, env: dict) -> tuple[float, str]:
    t = time.perf_counter()
    subprocess.run([FAIRLTR, "rerank", "--input", str(src), "--method", "detconstsort", "--group", "cat",
                    "--out", str(out)], env=env, check=True, capture_output=True)
    return time.perf_counter() - t, hashlib.sha256(out.read_bytes()).hexdigest()


LOAD = """
import time
t = time.perf_counter()
import numpy as np
import fairltr.fair.geyik_kernels as g
t1 = time.perf_counter()
g.constsort_bucket(np.arange(4)[None], np.zeros(4, dtype=np.int64), np.random.rand(4), np.ones((1, 1)), np.array([4]),
                   np.zeros(4, dtype=np.int64), True)
print(t1 - t, time.perf_counter() - t)
"""


def load_seconds(env: dict, repeat: int) -> str:
    """The kernels' one-time cost in a fresh process, warm cache: import (numba included), then the
    first DetConstSort call (cached code loaded); fairltr.compiled.LOAD_SECONDS is set from it."""
    runs = [subprocess.run([sys.executable, "-c", LOAD], env=env, check=True, capture_output=True, text=True)
            .stdout.split() for _ in range(repeat + 1)][1:]  # the first fills the cache
    return (f"kernel load, fresh process, warm cache ({repeat} runs): import {spread([float(r[0]) for r in runs])} s, "
            f"import + first call {spread([float(r[1]) for r in runs])} s")


def spread(xs: list[float]) -> str:
    return f"{min(xs):.3f} / {statistics.median(xs):.3f} / {max(xs):.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--layouts", nargs="*", default=["one:1000", "lists:100000", "one:100000", "one:1000000"])
    args = ap.parse_args()
    print("fairltr rerank --method detconstsort, whole lists, 3 categories; seconds min / median / max; "
          "shared 2-core machine")
    with tempfile.TemporaryDirectory(prefix="fairltr-cli-bench-") as tmp:
        folder = Path(tmp)
        base = {k: v for k, v in os.environ.items() if k != "FAIRLTR_COMPILED"}
        base["FAIRLTR_CACHE_DIR"] = str(folder / "cache")
        base["MLFLOW_DISABLE_TELEMETRY"] = "true"
        fast, off = dict(base), {**base, "FAIRLTR_COMPILED": "0"}
        for spec in args.layouts:
            layout, n = spec.split(":")
            src = folder / f"{spec.replace(':', '_')}.csv"
            write_input(src, layout, int(n))
            # warm-up; FAIRLTR_COMPILED=1 compiles the kernels into the cache (auto mode compiles only where
            # the numpy path would cost more than compiling, ~4 s), so [fast] is timed with a warm cache
            call(src, folder / "w1.csv", {**fast, "FAIRLTR_COMPILED": "1"}), call(src, folder / "w2.csv", off)
            tf, to = [], []
            for _ in range(args.repeat):
                a, da = call(src, folder / "fast.csv", fast)
                b, db = call(src, folder / "off.csv", off)
                assert da == db, f"{spec}: outputs differ"
                tf.append(a), to.append(b)
            print(f"{spec:>14}: [fast] {spread(tf)} s   FAIRLTR_COMPILED=0 {spread(to)} s   "
                  f"fast / off {spread([a / b for a, b in zip(tf, to)])}   outputs identical", flush=True)
        print(load_seconds({**fast, "FAIRLTR_COMPILED": "1"}, args.repeat), flush=True)
        for spec in args.layouts:
            src = folder / f"{spec.replace(':', '_')}.csv"
            cold = {**fast, "FAIRLTR_CACHE_DIR": str(folder / f"cold-{spec.replace(':', '_')}")}
            a, _ = call(src, folder / "cold.csv", cold)
            b, _ = call(src, folder / "off.csv", off)
            print(f"{spec:>14}: empty numba cache, one call: [fast] {a:.3f} s, FAIRLTR_COMPILED=0 {b:.3f} s "
                  f"(ratio {a / b:.2f})", flush=True)


if __name__ == "__main__":
    main()
