"""DELTR speed benchmark; every ratio is measured in this one run.

(a) fairltr vs ``fairsearchdeltr`` 1.0.2 (the public reference package) per training iteration on
    the same synthetic data at 10x20 and 50x20 rows (queries x candidates). fairsearchdeltr is
    installed by this script into a throwaway venv (never a project dependency); its per-iteration
    time is read from its own training log (timestamps per iteration, set-up excluded). fairltr's
    per-iteration time is the marginal cost of one more iteration of ``DELTR.fit`` (Adam: one
    objective + gradient + update, like fairsearchdeltr's gradient step; L-BFGS also shown).
    If fairsearchdeltr cannot be installed, the published figures (docs/spec.md §2) are used and the output says so.
(b) fairltr's full-batch iteration (objective + gradient as in ``DELTR.fit``) at 10,000 queries x
    100 candidates x 8 features vs the two unavoidable passes over the feature tensor (X w and
    X^T v, same layout and dtype), interleaved round by round in the same process; medians of
    wall-clock and of this thread's CPU time (the latter is robust to other processes on a shared
    machine), float64 (DELTR's default dtype) and float32.

(profile, --profile) every step of (b)'s iteration timed alone against the two passes: where the
    time above the floor goes (docs/deltr.md).

Usage:  python benchmarks/bench_deltr.py [--skip-reference] [--reference-python PATH] [--profile] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from fairltr import DELTR
from fairltr.losses import LinearDELTRObjective, deltr_objective

REFERENCE = "fairsearchdeltr==1.0.2"
# docs/spec.md §2: fairsearchdeltr 1.0.2 seconds per iteration at 50 and 200 rows (published figures)
SPEC_REFERENCE_S = {50: 0.65, 200: 2.6}

REFERENCE_SCRIPT = textwrap.dedent("""
    import json, sys, time
    import numpy as np, pandas as pd
    from fairsearchdeltr import Deltr
    df = pd.read_csv(sys.argv[1])
    iters = int(sys.argv[2])
    model = Deltr("protected", gamma=float(sys.argv[3]), number_of_iterations=iters, standardize=False)
    t0 = time.perf_counter()
    model.train(df)
    total = time.perf_counter() - t0
    stamps = [step.timestamp for step in model.log]   # ms, taken at the end of each iteration
    print(json.dumps({"total_s": total, "per_iteration_s": list(np.diff(stamps) / 1000.0)}))
""")


# ---------------------------------------------------------------------------- data
def synthetic(n_queries: int, n_candidates: int, n_features: int, seed: int = 0) -> pd.DataFrame:
    """Columns: query_id, doc_id, protected, x1..xF, judgment (biased against the protected group)."""
    rng = np.random.default_rng(seed)
    rows = n_queries * n_candidates
    prot = (rng.random(rows) < 0.4).astype(np.int64)
    x = rng.normal(size=(rows, n_features))
    judgment = x[:, 0] + 0.5 * x[:, 1 % n_features] - prot + 0.1 * rng.normal(size=rows)
    df = pd.DataFrame(x, columns=[f"x{i}" for i in range(1, n_features + 1)])
    df.insert(0, "protected", prot)
    df.insert(0, "doc_id", np.tile(np.arange(1, n_candidates + 1), n_queries))
    df.insert(0, "query_id", np.repeat(np.arange(1, n_queries + 1), n_candidates))
    df["judgment"] = judgment
    return df


# ---------------------------------------------------------------------------- (a)
def install_reference(python: str | None, keep: bool) -> tuple[str | None, str, str | None]:
    """Python of a venv with fairsearchdeltr; returns (python, note, venv_dir_to_delete)."""
    if python:
        return python, f"reference interpreter given: {python}", None
    venv_dir = tempfile.mkdtemp(prefix="fairsearchdeltr-venv-")
    try:
        subprocess.run([sys.executable, "-m", "venv", venv_dir], check=True, capture_output=True, text=True)
        py = str(Path(venv_dir) / "bin" / "python")
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", REFERENCE],
                       check=True, capture_output=True, text=True, timeout=900)
        version = subprocess.run([py, "-c", "import importlib.metadata as m; print(m.version('fairsearchdeltr'))"],
                                 check=True, capture_output=True, text=True).stdout.strip()
        return py, f"installed {REFERENCE} (found {version}) into a throwaway venv {venv_dir}", (None if keep else venv_dir)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        detail = getattr(exc, "stderr", "") or str(exc)
        shutil.rmtree(venv_dir, ignore_errors=True)
        return None, f"could not install {REFERENCE}: {detail.strip().splitlines()[-1] if detail else exc}", None


def time_reference(python: str, df: pd.DataFrame, iterations: int, gamma: float) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "train.csv"
        df.to_csv(path, index=False)
        script = Path(tmp) / "run_reference.py"
        script.write_text(REFERENCE_SCRIPT)
        env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
        out = subprocess.run([python, str(script), str(path), str(iterations), str(gamma)],
                             check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _fit_time(df: pd.DataFrame, optimizer: str, gamma: float, n: int) -> tuple[float, int]:
    """Seconds of one DELTR.fit with ``max_iter=n``, and the optimizer steps it made."""
    features = [c for c in df.columns if c.startswith("x")] + ["protected"]
    model = DELTR(gamma=gamma, optimizer=optimizer, max_iter=n, tol=0.0,
                  lr=0.01 if optimizer == "adam" else None, device="cpu")
    t0 = time.perf_counter()
    model.fit(df, features=features)
    elapsed = time.perf_counter() - t0
    return elapsed, model.n_iter_  # optimizer steps (an exact convergence stops before n)


def fairltr_per_iteration(df: pd.DataFrame, optimizer: str, gamma: float, n1: int, n2: int,
                          repeats: int = 5) -> float:
    """Marginal seconds per iteration of DELTR.fit, (t(n2) - t(n1)) / (steps2 - steps1), best of
    ``repeats``; set-up (validation, padding, standardisation) cancels out."""
    _fit_time(df, optimizer, gamma, n1)  # warm-up
    t1, s1 = min(_fit_time(df, optimizer, gamma, n1) for _ in range(repeats))
    t2, s2 = min(_fit_time(df, optimizer, gamma, n2) for _ in range(repeats))
    if s2 <= s1:  # converged within n1 steps: fall back to the whole fit per step
        return t2 / max(1, s2)
    return max(t2 - t1, 1e-9) / (s2 - s1)


def part_a(args) -> list[dict]:
    python, note, cleanup = (None, "skipped (--skip-reference)", None) if args.skip_reference else \
        install_reference(args.reference_python, args.keep_venv)
    print(f"(a) reference: {note}", flush=True)
    rows = []
    try:
        for size in args.sizes:
            q, n = (int(v) for v in size.lower().split("x"))
            df = synthetic(q, n, 3, seed=1)
            adam = fairltr_per_iteration(df, "adam", args.gamma, 20, 20 + args.adam_iters)
            lbfgs = fairltr_per_iteration(df, "lbfgs", args.gamma, 2, 12)
            row = {"size": f"{q}x{n}", "rows": q * n, "fairltr_adam_s": adam, "fairltr_lbfgs_s": lbfgs}
            if python:
                ref = time_reference(python, df, args.reference_iters, args.gamma)
                its = ref["per_iteration_s"]
                row["reference_s"] = statistics.median(its)
                row["reference_spread_s"] = [min(its), max(its)]
                row["reference_source"] = (f"measured, median of {len(its)} iterations, min {min(its):.3f} / max "
                                           f"{max(its):.3f} s")
            elif q * n in SPEC_REFERENCE_S:
                row["reference_s"] = SPEC_REFERENCE_S[q * n]
                row["reference_source"] = "published figure (docs/spec.md §2)"
            if "reference_s" in row:
                row["speedup_adam"] = row["reference_s"] / adam
                row["speedup_lbfgs"] = row["reference_s"] / lbfgs
            rows.append(row)
            print(format_a_row(row), flush=True)
    finally:
        if cleanup:
            shutil.rmtree(cleanup, ignore_errors=True)
    return rows


def format_a_row(r: dict) -> str:
    ref = f"{r['reference_s']:.3f} s ({r['reference_source']})" if "reference_s" in r else "n/a"
    s = (f"  {r['size']:>6} ({r['rows']} rows): fairsearchdeltr {ref}; fairltr adam {r['fairltr_adam_s'] * 1e6:.1f} us/it, "
         f"lbfgs {r['fairltr_lbfgs_s'] * 1e6:.1f} us/it")
    if "speedup_adam" in r:
        s += f"  -> {r['speedup_adam']:,.0f}x (adam), {r['speedup_lbfgs']:,.0f}x (lbfgs per iteration)"
    return s


# ---------------------------------------------------------------------------- (b)
def part_b(args) -> list[dict]:
    q, n, f = (int(v) for v in args.big.lower().split("x"))
    results = []
    for dtype in (torch.float64, torch.float32):
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(q, n, f, generator=gen, dtype=dtype)
        y = torch.randn(q, n, generator=gen, dtype=dtype)
        groups = (torch.rand(q, n, generator=gen) < 0.3).long()
        mask = torch.ones(q, n, dtype=torch.bool)
        obj = LinearDELTRObjective(x, y, groups, mask, args.gamma_big)
        w = (0.3 * torch.randn(f, generator=gen, dtype=dtype)).requires_grad_(True)
        xs = obj.x  # the (Q*N, F) tensor the iteration reads
        s_out = torch.empty(q * n, dtype=dtype)
        g_out = torch.empty(f, dtype=dtype)
        v = torch.randn(q * n, generator=gen, dtype=dtype)

        def iteration():
            w.grad = None
            obj(w).total.backward()

        def passes():
            torch.mv(xs, w.detach(), out=s_out)  # X w
            torch.mv(xs.T, v, out=g_out)  # X^T v

        def autograd_iteration():  # the generic path (used for plugin losses), for reference
            w.grad = None
            deltr_objective((x @ w), y, groups, mask, args.gamma_big, n_groups=2).total.backward()

        # wall clock and this thread's CPU time (robust to other processes on a shared machine)
        wall = {"it": [], "pass": [], "auto": []}
        cpu = {"it": [], "pass": [], "auto": []}

        def timed(fn, key):
            c0, t0 = time.thread_time(), time.perf_counter()
            fn()
            wall[key].append(time.perf_counter() - t0)
            cpu[key].append(time.thread_time() - c0)

        iteration(), passes(), autograd_iteration()
        for r in range(args.rounds):
            pair = ((iteration, "it"), (passes, "pass"))
            for fn, key in (pair if r % 2 == 0 else pair[::-1]):
                timed(fn, key)
            if r < max(3, args.rounds // 5):
                timed(autograd_iteration, "auto")
        share = _unfair_share(obj, w)
        med = {k: 1e3 * statistics.median(v) for k, v in wall.items()}
        cmed = {k: 1e3 * statistics.median(v) for k, v in cpu.items()}
        row = {
            "dtype": str(dtype).replace("torch.", ""), "shape": f"{q}x{n}x{f}", "rounds": args.rounds,
            "iteration_ms": med["it"], "passes_ms": med["pass"], "autograd_ms": med["auto"],
            "iteration_cpu_ms": cmed["it"], "passes_cpu_ms": cmed["pass"], "autograd_cpu_ms": cmed["auto"],
            "unfair_query_share": share,
        }
        row["ratio"] = row["iteration_ms"] / row["passes_ms"]
        row["ratio_cpu"] = row["iteration_cpu_ms"] / row["passes_cpu_ms"]
        per_round = sorted(a / b for a, b in zip(cpu["it"], cpu["pass"]))  # each round's pair, same moment
        row["ratio_cpu_min"], row["ratio_cpu_max"] = per_round[0], per_round[-1]
        row["ratio_cpu_round_median"] = statistics.median(per_round)
        results.append(row)
        print(f"(b) {row['shape']} {row['dtype']}: iteration {med['it']:.2f} ms wall / {cmed['it']:.2f} ms CPU; "
              f"X w + X^T v {med['pass']:.2f} ms wall / {cmed['pass']:.2f} ms CPU -> ratio {row['ratio']:.2f} wall, "
              f"{row['ratio_cpu']:.2f} CPU (per round CPU ratio min {row['ratio_cpu_min']:.2f} median "
              f"{row['ratio_cpu_round_median']:.2f} max {row['ratio_cpu_max']:.2f} over {args.rounds} rounds); autograd path {med['auto']:.1f} ms wall; "
              f"{100 * share:.0f}% of queries with an active hinge", flush=True)
        del x, obj, xs
    return results


def profile_b(args) -> list[dict]:
    """Where the iteration's time goes beyond the two passes: each step of the fused iteration
    (LinearDELTRObjective, two groups, active hinge) timed alone on the same tensors, interleaved
    round by round with the two passes; this thread's CPU time, medians, as a share of the passes."""
    q, n, f = (int(v) for v in args.big.lower().split("x"))
    rows = []
    for dtype in (torch.float64, torch.float32):
        gen = torch.Generator().manual_seed(0)
        x = torch.randn(q, n, f, generator=gen, dtype=dtype)
        y = torch.randn(q, n, generator=gen, dtype=dtype)
        groups = (torch.rand(q, n, generator=gen) < 0.3).long()
        obj = LinearDELTRObjective(x, y, groups, torch.ones(q, n, dtype=torch.bool), args.gamma_big)
        del x
        w = 0.3 * torch.randn(f, generator=gen, dtype=dtype)
        xs, a = obj.x, obj.a
        s = torch.empty(q * n, dtype=dtype)
        e = torch.empty(q, n, dtype=dtype)
        t = torch.empty(q, n, dtype=dtype)
        v = torch.randn(q * n, generator=gen, dtype=dtype)
        g = torch.empty(f, dtype=dtype)
        col = torch.rand(q, 1, generator=gen, dtype=dtype)
        torch.mv(xs, w, out=s)
        s_qn = s.view(q, n)
        steps = {
            "X w (pass 1)": lambda: torch.mv(xs, w, out=s),
            "X^T v (pass 2)": lambda: torch.mv(xs.T, v, out=g),
            "exp(s)": lambda: torch.exp(s_qn, out=e),
            "z = sum_i e": lambda: e.sum(dim=1),
            "a * e": lambda: torch.mul(a, e, out=t),
            "sum_i a e": lambda: t.sum(dim=1),
            "e *= per-query factor": lambda: e.mul_(col),
            "e += (a e) * per-query factor": lambda: e.addcmul_(t, col),
            "whole iteration": lambda: obj.value_and_grad(w),
        }
        cpu = {k: [] for k in steps}
        for fn in steps.values():
            fn()
        for _ in range(args.rounds):
            for key, fn in steps.items():
                c0 = time.thread_time()
                fn()
                cpu[key].append(time.thread_time() - c0)
                if key.startswith("exp"):
                    torch.exp(s_qn, out=e)  # keep e bounded for the in-place steps
        med = {k: 1e3 * statistics.median(v) for k, v in cpu.items()}
        floor = med["X w (pass 1)"] + med["X^T v (pass 2)"]
        print(f"(profile) {q}x{n}x{f} {str(dtype).replace('torch.', '')}: CPU ms and share of the two passes")
        for key, ms in med.items():
            print(f"    {key:<32} {ms:8.2f} ms  {ms / floor:5.2f}")
        rows.append({"dtype": str(dtype).replace("torch.", ""), "shape": f"{q}x{n}x{f}", "ms": med,
                     "floor_ms": floor})
        del obj, xs, a
    return rows


def _unfair_share(obj: LinearDELTRObjective, w: torch.Tensor) -> float:
    """Share of queries whose hinge is active at ``w`` (the fairness gradient path is exercised)."""
    return float((obj.per_query_exposure(w) > 0).to(torch.float64).mean())


# ---------------------------------------------------------------------------- main
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", nargs="+", default=["10x20", "50x20"], help="(a) queries x candidates")
    ap.add_argument("--gamma", type=float, default=1.0, help="(a) gamma for both packages")
    ap.add_argument("--reference-iters", type=int, default=5, help="(a) fairsearchdeltr iterations per size")
    ap.add_argument("--adam-iters", type=int, default=2000, help="(a) extra fairltr iterations timed")
    ap.add_argument("--reference-python", help="(a) python of an existing venv with fairsearchdeltr 1.0.2")
    ap.add_argument("--skip-reference", action="store_true", help="(a) use the published figures (docs/spec.md §2)")
    ap.add_argument("--keep-venv", action="store_true", help="(a) keep the throwaway venv")
    ap.add_argument("--big", default="10000x100x8", help="(b) queries x candidates x features")
    ap.add_argument("--gamma-big", type=float, default=1e5, help="(b) gamma")
    ap.add_argument("--rounds", type=int, default=30, help="(b) interleaved timing rounds")
    ap.add_argument("--threads", type=int, default=1, help="torch threads (1: stable numbers on a shared machine)")
    ap.add_argument("--skip-a", action="store_true")
    ap.add_argument("--skip-b", action="store_true")
    ap.add_argument("--profile", action="store_true", help="(b) also time each step of the iteration alone")
    ap.add_argument("--json", type=Path, help="write all measurements as JSON")
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {args.threads} thread(s), {os.cpu_count()} CPU(s) visible", flush=True)
    out = {"threads": args.threads}
    if not args.skip_a:
        out["a"] = part_a(args)
    if not args.skip_b:
        out["b"] = part_b(args)
    if args.profile:
        out["profile"] = profile_b(args)
    print("\nsummary")
    for r in out.get("a", []):
        if "speedup_adam" in r:
            goal = "meets" if r["speedup_adam"] >= 1000 else "MISSES"
            print(f"  (a) {r['size']}: {r['speedup_adam']:,.0f}x faster per iteration than fairsearchdeltr "
                  f"({r['reference_source']}); goal >= 1,000x: {goal}")
    for r in out.get("b", []):
        goal = "meets" if max(r["ratio"], r["ratio_cpu"]) <= 1.5 else (
            "meets on CPU time" if r["ratio_cpu"] <= 1.5 else "MISSES")
        print(f"  (b) {r['shape']} {r['dtype']}: iteration / (X w + X^T v) = {r['ratio']:.2f} (wall), "
              f"{r['ratio_cpu']:.2f} (CPU time; per round min {r['ratio_cpu_min']:.2f} / median "
              f"{r['ratio_cpu_round_median']:.2f} / max {r['ratio_cpu_max']:.2f}); goal <= 1.5: {goal}; "
              f"goal <= 1.3 (issue 34): {'meets on CPU time' if r['ratio_cpu'] <= 1.3 else 'MISSES (see --profile)'}")
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
