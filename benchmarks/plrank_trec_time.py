"""Fit time of PLRank against DELTR on TREC fold 1's training table (50 queries), issue 32 item 2's
speed bar (a PL-Rank TREC trial under 3x DELTR's). Interleaved repeats (default 5) of: DELTR at
gamma 0 (its defaults, the comparison's DELTR trial), PLRank at lambda 0 with the comparison's
100 iterations and with its default 300. Prints min / median / max seconds per fit, the fitted
iterations, seconds per iteration, and the ratios of the medians (fit and per iteration).
Each fit includes its data preparation. One CPU thread, as benchmarks/pareto_comparison.py runs.

    python benchmarks/plrank_trec_time.py --repeats 5      # about a minute
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pareto_comparison import DATA  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    from fairltr import DELTR, PLRank
    from fairltr.io import read_deltr_csv

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    name = "features_withListNetFormat_withGender_withZscore_candidateAmount-200_train.csv"
    train = read_deltr_csv(args.data / "TREC" / "fold_1" / name)
    makers = {"DELTR gamma 0 (defaults)": lambda: DELTR(gamma=0.0),
              "PLRank lambda 0, 100 iterations": lambda: PLRank(lam=0.0, max_iter=100, device="cpu"),
              "PLRank lambda 0, 300 iterations": lambda: PLRank(lam=0.0, device="cpu")}
    for make in makers.values():  # warm-up: imports, compiled kernels' load
        make().fit(train)
    times = {k: [] for k in makers}
    iters = {}
    for _ in range(args.repeats):
        for label, make in makers.items():
            model = make()
            t0 = time.perf_counter()
            model.fit(train)
            times[label].append(time.perf_counter() - t0)
            iters[label] = int(model.n_iter_)
    print(f"TREC fold 1 train: {train['query_id'].nunique()} queries, {len(train)} rows; {args.repeats} repeats, 1 thread")
    med = {k: statistics.median(v) for k, v in times.items()}
    for label, v in times.items():
        print(f"  {label}: fit min / median / max {min(v):.3f} / {med[label]:.3f} / {max(v):.3f} s, "
              f"{iters[label]} iterations, {1e3 * med[label] / max(1, iters[label]):.2f} ms per iteration")
    base = next(iter(makers))
    for label in list(makers)[1:]:
        print(f"  {label} / DELTR: fit {med[label] / med[base]:.2f}x, per iteration "
              f"{(med[label] / iters[label]) / (med[base] / iters[base]):.2f}x")


if __name__ == "__main__":
    main()
