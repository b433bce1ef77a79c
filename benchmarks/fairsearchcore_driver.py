"""Times fairsearchcore 1.0.4's adjusted mtable; run by benchmarks/bench_fair.py --reference-python.

It runs in a throwaway venv, never fairltr's (fairsearchcore is no dependency of fairltr and none
of its code is copied):

    python -m venv /tmp/fscvenv && /tmp/fscvenv/bin/pip install fairsearchcore==1.0.4
    /tmp/fscvenv/bin/python benchmarks/fairsearchcore_driver.py --k 100 --repeat 5

fairsearchcore's ``LegalAssignmentKey.__hash__`` returns a numpy integer (its counts come out of a
pandas frame), which Python 3.11 refuses ("__hash__ method should return an integer"); the one line
below wraps it in ``int``, which changes no value. Prints one JSON line per run:
``{"k", "p", "alpha", "seconds", "mtable"}``.
"""

from __future__ import annotations

import argparse
import json
import time
import warnings

import fairsearchcore
from fairsearchcore import fail_prob

_hash = fail_prob.LegalAssignmentKey.__hash__
fail_prob.LegalAssignmentKey.__hash__ = lambda self: int(_hash(self))  # the one-line fix


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--k", type=int, nargs="+", default=[100])
    ap.add_argument("--p", type=float, default=0.5)
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # "Library has not been tested with values outside this range"
    for k in args.k:
        for _ in range(args.repeat):
            t = time.perf_counter()
            table = fairsearchcore.Fair(k, args.p, args.alpha).create_adjusted_mtable()
            seconds = time.perf_counter() - t
            print(json.dumps({"k": k, "p": args.p, "alpha": args.alpha, "seconds": seconds,
                              "mtable": [int(v) for v in table]}), flush=True)


if __name__ == "__main__":
    main()
