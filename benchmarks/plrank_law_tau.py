"""PL-Rank at lambda 0 against DELTR at gamma 0 on the DELTR paper's Law race and Law gender
split (issue 32 item 2), for both PL samplers: the compiled kernels (``FAIRLTR_COMPILED=1``) and
the tensor code (``FAIRLTR_COMPILED=0``).

Per split: DELTR's test ``kendall_tau``; PLRank's (its defaults: 16 samples, Adam 0.05, 300
iterations; and the comparison's 100 iterations, as benchmarks/pareto_comparison.py trains it)
with the standard deviation of its test scores, its weight norm, the difference to DELTR and
the fit time. Rows are permuted within the query as the comparison does (``load_folds``).
A constant (non-learning) scorer would show std ~ 0 and tau ~ 0.

    python benchmarks/plrank_law_tau.py            # about 30 s on a shared 2-core machine
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pareto_comparison import DATA, load_folds  # noqa: E402


def main(argv: list[str] | None = None) -> None:
    from fairltr import DELTR, PLRank
    from fairltr.metrics import evaluate_ranking

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    tau = lambda test, scores: evaluate_ranking(test, scores, k=(10,))["kendall_tau"]  # noqa: E731
    worst = 0.0
    for dataset in ("law-race", "law-gender"):
        train, test = load_folds(dataset, args.data, 0)[0]
        deltr_tau = tau(test, DELTR(gamma=0.0, seed=args.seed).fit(train).predict(test))
        print(f"{dataset}: {len(train)} training / {len(test)} test rows; DELTR gamma 0 kendall_tau {deltr_tau:.4f}")
        for compiled in ("1", "0"):
            os.environ["FAIRLTR_COMPILED"] = compiled
            for max_iter in (300, 100):
                t0 = time.perf_counter()
                model = PLRank(lam=0.0, seed=args.seed, max_iter=max_iter, device="cpu").fit(train)
                seconds = time.perf_counter() - t0
                scores = model.predict(test)
                t = tau(test, scores)
                worst = max(worst, deltr_tau - t)
                print(f"  PLRank lambda 0, FAIRLTR_COMPILED={compiled}, {max_iter} iterations: kendall_tau {t:.4f} "
                      f"(PLRank - DELTR {t - deltr_tau:+.4f}), test score std {np.std(scores):.3f}, "
                      f"|w| {np.linalg.norm(model.weights_):.3f}, fit {seconds:.2f} s")
    os.environ.pop("FAIRLTR_COMPILED", None)
    print(f"largest gap below DELTR: {worst:.4f} ({'within' if worst <= 0.02 else 'NOT within'} 0.02)")


if __name__ == "__main__":
    main()
