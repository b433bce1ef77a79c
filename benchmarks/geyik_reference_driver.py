"""Runs the reference implementations of Geyik et al.'s re-rankers on given queries; executed by
the python of a THROWAWAY venv that has aif360==0.6.1 and fairranktune==0.0.7 (never fairltr
dependencies; nothing of theirs is copied here: this only calls their public functions).

    python geyik_reference_driver.py IN.json OUT.json

IN: {"queries": [{"scores": [...], "cats": [0, 2, 1, ...], "p": [share of code 0, 1, ...], "k": K}],
     "runs": ["aif360:Greedy", "aif360:Conservative", "aif360:Relaxed", "aif360:Constrained",
              "fairranktune:DetConstSort"]}
OUT: {"results": {run: [{"order": [row indices of the top k] | null, "error": str | null}, ...]},
      "seconds": {run: wall seconds over all queries, the inputs' conversion included (best pass)},
      "times": {run: [seconds of every pass]}}
Imported by nothing in fairltr; stdout stays free for the caller.
"""

from __future__ import annotations

import json
import logging
import sys
import time
import warnings

warnings.filterwarnings("ignore")
logging.disable(logging.WARNING)  # aif360 logs its optional extras at import

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def run_aif360(query: dict, rerank_type: str) -> list[int]:
    from aif360.algorithms.postprocessing import DeterministicReranking
    from aif360.datasets import RegressionDataset

    n = len(query["scores"])
    codes = sorted(set(int(c) for c in query["cats"]))
    # RegressionDataset min-max scales every column, categories included, and checks that each
    # category is privileged or unprivileged BEFORE scaling: give the categories values already in
    # [0, 1] with 0 and 1 present, which the scaling leaves as they are
    value = {c: i / max(len(codes) - 1, 1) for i, c in enumerate(codes)}
    df = pd.DataFrame({"cat": [value[int(c)] for c in query["cats"]], "row": np.arange(n, dtype=float),
                       "score": np.asarray(query["scores"], dtype=float)})
    ds = RegressionDataset(df, dep_var_name="score", protected_attribute_names=["cat"],
                           privileged_classes=[[value[codes[0]]]])
    unpriv, priv = codes[1:], codes[:1]  # category 0 (the lowest code) privileged
    ranker = DeterministicReranking(unprivileged_groups=[{"cat": value[c]} for c in unpriv],
                                    privileged_groups=[{"cat": value[c]} for c in priv])
    prop = [query["p"][c] for c in unpriv + priv]  # aif360's group order: unprivileged, then privileged
    res = ranker.fit_predict(ds, rec_size=int(query["k"]), target_prop=prop, rerank_type=rerank_type)
    return [int(name) for name in res.instance_names]  # instance names are the input frame's index = row


def run_fairranktune(query: dict) -> list[int]:
    import FairRankTune as frt

    scores = np.asarray(query["scores"], dtype=float)
    order = np.argsort(-scores, kind="stable")  # FairRankTune expects the input ranking sorted by score
    items = pd.DataFrame(order)
    groups = {int(i): int(query["cats"][i]) for i in order}
    dist = {int(c): float(query["p"][c]) for c in set(groups.values())}
    ranking, _, _ = frt.Rankers.DETCONSTSORT(items, groups, pd.DataFrame(scores[order]), dist, int(query["k"]))
    return [int(x) for x in ranking[0].tolist()]


def main(src: str, dst: str) -> None:
    spec = json.loads(open(src, encoding="utf-8").read())
    import aif360.algorithms.postprocessing  # noqa: F401 - imports outside the timings
    import aif360.datasets  # noqa: F401
    import FairRankTune  # noqa: F401
    results: dict[str, list] = {}
    seconds: dict[str, float] = {}
    times: dict[str, list] = {}
    repeat, budget = int(spec.get("repeat", 1)), float(spec.get("repeat_budget_s", 0.0))
    for run in spec["runs"]:
        lib, _, kind = run.partition(":")
        out: list = []
        best, spent, passes = float("inf"), 0.0, 0
        times[run] = []
        # best of `repeat` passes while the passes so far took under `budget` seconds (fairltr's
        # side is a best of --repeat too); the orders come from the first pass
        while passes == 0 or (passes < repeat and spent < budget):
            start = time.perf_counter()
            this = []
            for query in spec["queries"]:
                try:
                    order = run_aif360(query, kind) if lib == "aif360" else run_fairranktune(query)
                    this.append({"order": order, "error": None})
                except Exception as exc:  # a reference crash is a finding, recorded per query
                    this.append({"order": None, "error": f"{type(exc).__name__}: {exc}"[:200]})
            took = time.perf_counter() - start
            times[run].append(took)
            best, spent, passes = min(best, took), spent + took, passes + 1
            out = out or this
        seconds[run] = best
        results[run] = out
    with open(dst, "w", encoding="utf-8") as fh:
        json.dump({"results": results, "seconds": seconds, "times": times}, fh)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
