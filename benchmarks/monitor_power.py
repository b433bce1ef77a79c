"""False alarms and power of ``fairltr monitor``'s window verdicts, by simulation
(fairltr.monitoring.simulate: the code monitor runs). Prints, for each traffic size, the share of
FAIR years with any FAIL (at --confidence and with point estimates only) and the share of years in
which one biased week fails, at several biases; docs/monitoring.md quotes this output.

    .venv/bin/python benchmarks/monitor_power.py --years 200
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fairltr.gates import parse_gate
from fairltr.monitoring.simulate import TrafficModel, simulate_year, year_verdicts

SIZES = {
    "20 rankings x 20 candidates a week, top 10": TrafficModel(20, 20, 10),
    "80 rankings x 20 candidates a week, top 10": TrafficModel(80, 20, 10),
    "one ranking of 60 a week, top 10 (COMPAS-like)": TrafficModel(1, 60, 10),
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--years", type=int, default=200)
    ap.add_argument("--power-years", type=int, default=100)
    ap.add_argument("--confidence", type=float, default=0.95)
    ap.add_argument("--biases", default="0.5,1.0,1.5", help="score shift of category C in the biased week")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    gates = [parse_gate("four_fifths@10")]
    biases = [float(b) for b in args.biases.split(",")]
    print(f"gate four_fifths@10, categories A 50% / B 30% / C 20%, 52 weekly windows a year, "
          f"confidence {args.confidence}, seed {args.seed}")
    for label, model in SIZES.items():
        t0 = time.perf_counter()
        rng = np.random.default_rng(args.seed)
        fair = [year_verdicts(simulate_year(model, rng), gates, args.confidence) for _ in range(args.years)]
        alarms = sum("fail" in v for v in fair) / args.years
        insufficient = float(np.mean([v.count("insufficient evidence") / len(v) for v in fair]))
        rng = np.random.default_rng(args.seed + 1)
        point = sum("fail" in year_verdicts(simulate_year(model, rng), gates, None)
                    for _ in range(min(args.years, 50))) / min(args.years, 50)
        power = []
        for bias in biases:
            rng = np.random.default_rng(args.seed + 2)
            hits = [year_verdicts(simulate_year(model, rng, biased_week=26, biased="C", bias=bias), gates,
                                  args.confidence)[26] == "fail" for _ in range(args.power_years)]
            power.append(f"bias {bias:g}: {np.mean(hits):.2f}")
        print(f"\n{label}:\n  fair years with any FAIL: {alarms:.3f} at confidence {args.confidence} "
              f"({args.years} years); {point:.2f} with point estimates only ({min(args.years, 50)} years)\n"
              f"  windows with insufficient evidence (fair): {insufficient:.3f}\n"
              f"  biased week caught ({args.power_years} years): {'; '.join(power)}\n"
              f"  ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
