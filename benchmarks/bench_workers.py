"""Sweep throughput with 1 and 2 workers on one PostgreSQL study (a script, not a test).

Runs `fairltr sweep --method deltr` on the DELTR paper's Law race split (the real CLI, one process per
worker, MLflow logging to a local SQLite store) twice on fresh studies: one worker for N trials, then
two workers started together for N trials, ``--rounds`` times (order alternating); prints trials per
minute and min / median / max of each round's speed-up (ratios measured in the same run). Needs a PostgreSQL database URI (one Optuna may own):

    python benchmarks/bench_workers.py --storage postgresql://fairltr:fairltr@127.0.0.1:5432/fairltr_optuna --trials 40
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAW = ROOT.parent / "shared" / "data" / "deltr-experiments" / "LawStudents" / "race_black"


def sweep(storage: str, study: str, trials: int, workers: int, work: Path, max_iter: int) -> float:
    cmd = [sys.executable, "-c", "import sys; from fairltr.cli import main; main(sys.argv[1:])", "sweep",
           "--method", "deltr", "--train", str(LAW / "LawStudents_Race_train.txt"),
           "--test", str(LAW / "LawStudents_Race_test.txt"), "--trials", str(trials), "--study", study,
           "--storage", storage, "--out", str(work / study), "--tracking-uri", f"sqlite:///{work / 'mlflow.db'}",
           "--experiment", "bench-workers", "--max-iter", str(max_iter), "--no-progress"]
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    t0 = time.perf_counter()
    procs = [subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env)
             for _ in range(workers)]
    for p in procs:
        _, err = p.communicate()
        if p.returncode != 0:
            raise SystemExit(f"a worker failed:\n{err[-2000:]}")
    return time.perf_counter() - t0


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--storage", required=True, help="postgresql://USER:PW@HOST:PORT/DB (Optuna's own database)")
    ap.add_argument("--trials", type=int, default=40)
    ap.add_argument("--max-iter", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5, help="rounds of (1 worker, 2 workers), order alternating")
    args = ap.parse_args(argv)
    ones, twos = [], []
    with tempfile.TemporaryDirectory(prefix="fairltr-workers-") as tmp:
        work = Path(tmp)
        # warm the stores (MLflow's SQLite creation, Optuna's tables) outside the timed runs
        sweep(args.storage, f"warm-{uuid.uuid4().hex[:6]}", 1, 1, work, args.max_iter)
        for r in range(args.rounds):
            for n in ((1, 2) if r % 2 == 0 else (2, 1)):
                t = sweep(args.storage, f"w{n}-{uuid.uuid4().hex[:6]}", args.trials, n, work, args.max_iter)
                (ones if n == 1 else twos).append(t)
    cores = os.cpu_count()
    one, two = statistics.median(ones), statistics.median(twos)
    speed = sorted(a / b for a, b in zip(ones, twos))
    print(f"DELTR sweep on Law race, {args.trials} trials, PostgreSQL study, MLflow on SQLite, {cores} cores, "
          f"median of {args.rounds} rounds:")
    print(f"| workers | wall (s) | trials / min |\n|---|---|---|\n| 1 | {one:.1f} | {60 * args.trials / one:.1f} |\n"
          f"| 2 | {two:.1f} | {60 * args.trials / two:.1f} |")
    print(f"speed-up with 2 workers per round: min {speed[0]:.2f} / median {statistics.median(speed):.2f} / max "
          f"{speed[-1]:.2f}x (wall times include each worker's start-up)")


if __name__ == "__main__":
    main()
