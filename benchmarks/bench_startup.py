"""Start-up time of the ``fairltr`` console script against ``python -c "import torch"``.

    python benchmarks/bench_startup.py [--repeat 7]

Wall time of three fresh processes, interleaved, median of ``--repeat`` runs each:

* ``python -c "import torch"`` (the reference: what every command paid before the lazy imports);
* ``fairltr --help``;
* ``fairltr fair mtable --k 10 --p 0.5``.

Printed as the ratio to the reference (goal: < 0.5x for both), with min / median / max of each
round's ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import time

GOAL = 0.5


def wall(argv: list[str]) -> float:
    t = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=7)
    args = ap.parse_args()
    script = shutil.which("fairltr", path=os.path.dirname(sys.executable)) or shutil.which("fairltr")
    if script is None:
        raise SystemExit("the fairltr console script is not installed (pip install -e .)")
    commands = {
        'python -c "import torch"': [sys.executable, "-c", "import torch"],
        "fairltr --help": [script, "--help"],
        "fairltr fair mtable --k 10 --p 0.5": [script, "fair", "mtable", "--k", "10", "--p", "0.5"],
    }
    for argv in commands.values():  # warm the file cache
        wall(argv)
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(args.repeat):
        for name, argv in commands.items():
            times[name].append(wall(argv))
    refs = times['python -c "import torch"']
    ref = statistics.median(refs)
    print(f"{args.repeat} rounds, interleaved (a shared machine: each round's ratio compares runs of the same moment)")
    print(f"{'command':40s}{'median s':>10s}{'ratio':>8s}   per round: min / median / max")
    for name, ts in times.items():
        med = statistics.median(ts)
        per = [t / r for t, r in zip(ts, refs)]
        goal = "" if name.startswith("python") else f"  goal < {GOAL}x: {'met' if statistics.median(per) < GOAL else 'NOT met'}"
        print(f"{name:40s}{med:10.3f}{med / ref:7.2f}x   {min(per):.2f} / {statistics.median(per):.2f} / "
              f"{max(per):.2f}{goal}")


if __name__ == "__main__":
    main()
