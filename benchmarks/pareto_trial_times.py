"""The cost of one sweep trial per method, as benchmarks/pareto_comparison.py runs them.

Each method's trial is built by the sweep registry exactly as the comparison's studies build it
(:func:`fairltr.workflows.sweep_plugins.get_sweep_method` ``.trial``, the folds of
:func:`pareto_comparison.load_folds`, PLRank's ``--plrank-max-iter`` iterations), and called at
four values of its searched weight: 0 (the space's "with 0" point), the declared range's low end,
its geometric middle and its high end (DELTR: gamma 0, 100, 3.2e4, 1e7; PLRank: lambda 0, 0.1,
10, 1000). One round times every method at every value once, interleaved; ``--repeats`` rounds (>= 5).
A method's trial time in a round is the mean over its four values; printed: min / median / max
over the rounds of each method's wall and CPU (this process's) time, of each value's time, and of
the ratio of every method to the first (``--methods``, default ``deltr,plrank``) in the same round.

    python benchmarks/pareto_trial_times.py --dataset trec --repeats 5
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from pareto_comparison import DATA, load_folds  # noqa: E402


def trial_runner(method: str, folds, plrank_max_iter: int, seed: int):
    """The method's sweep trial over ``folds`` (the comparison's settings) and its four values."""
    from fairltr.columns import DEFAULT_COLUMNS
    from fairltr.workflows.sweep_plugins import SweepInputs, get_sweep_method
    from tuning.sweep import SweepConfig

    cfg = SweepConfig(method=method, train="train", test="test", n_trials=1, study="times", seed=seed,
                      mlflow=False, progress=False, plot=False,
                      method_options={"max_iter": plrank_max_iter} if method == "plrank" else {})
    runner = get_sweep_method(method).trial(SweepInputs(cfg, list(folds), DEFAULT_COLUMNS))
    param = runner.space.params[0]
    name = param.name
    low, high = float(param.param.low), float(param.param.high)  # the declared range (below it: 0)
    values = [0.0, low, math.sqrt(low * high), high]
    return runner, [{name: v} for v in values]


def spread(values: list[float]) -> str:
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f}"


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="trec")
    ap.add_argument("--methods", default="deltr,plrank", help="the first is the reference of the ratios")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--plrank-max-iter", type=int, default=100, help="as pareto_comparison.py's default")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    folds = load_folds(args.dataset, args.data, args.seed)
    methods = [m.strip() for m in args.methods.split(",") if m.strip()]
    runners = {m: trial_runner(m, folds, args.plrank_max_iter, args.seed) for m in methods}
    for runner, values in runners.values():  # warm-up: imports, compiled kernels' first calls
        runner(values[0])
    wall = {m: [] for m in methods}
    cpu = {m: [] for m in methods}
    per_value = {(m, i): [] for m in methods for i in range(4)}
    for _ in range(args.repeats):
        for m in methods:
            runner, values = runners[m]
            w_round, c_round = [], []
            for i, v in enumerate(values):
                c0, t0 = time.process_time(), time.perf_counter()
                runner(v)
                w_round.append(time.perf_counter() - t0)
                c_round.append(time.process_time() - c0)
                per_value[(m, i)].append(c_round[-1])
            wall[m].append(statistics.mean(w_round))
            cpu[m].append(statistics.mean(c_round))
    ref = methods[0]
    print(f"{args.dataset}: one sweep trial ({len(folds)} folds; PLRank {args.plrank_max_iter} iterations), "
          f"{args.repeats} rounds, seconds min / median / max")
    out = {"dataset": args.dataset, "repeats": args.repeats, "methods": {}}
    for m in methods:
        values = runners[m][1]
        print(f"  {m}: wall {spread(wall[m])}, CPU {spread(cpu[m])}")
        for i, v in enumerate(values):
            print(f"    {v}: CPU {spread(per_value[(m, i)])}")
        ratios_w = [a / b for a, b in zip(wall[m], wall[ref])]
        ratios_c = [a / b for a, b in zip(cpu[m], cpu[ref])]
        if m != ref:
            print(f"  {m} / {ref} per round: wall {spread(ratios_w)}, CPU {spread(ratios_c)}")
        out["methods"][m] = {"wall": wall[m], "cpu": cpu[m], "ratio_wall": ratios_w, "ratio_cpu": ratios_c}
    return out


if __name__ == "__main__":
    main()
