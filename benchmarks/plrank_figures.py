"""The figures docs/plrank.md quotes for issue 32: PL-Rank learns the DELTR paper's Law tables, and
lambda cuts the policy's expected exposure disparity on a held-out TREC fold.

* ``--part law``: on Law race and Law gender (the paper's single split, rows permuted within the
  query as benchmarks/pareto_comparison.py does), the test ``kendall_tau`` of DELTR at gamma 0
  and of PLRank at lambda 0 (its defaults: 16 samples, Adam 0.05, 300 iterations; and the
  comparison's 100 iterations) for seeds 0..``--seeds``-1, with the default estimator (the
  position baseline) and ``plrank_plain`` (PL-Rank as published): min / median / max and the
  largest gap below DELTR.
* ``--part trec``: on TREC fold 1 (W3C expert search, protected = female; train on its 50
  training queries, evaluate on its 10 held-out queries), ``fairltr train plrank``'s recipe
  (:func:`fairltr.workflows.plrank_outcome`) for each ``--lambdas``: the policy's figures from 100
  sampled rankings per query (``expected_exposure_disparity``, ``expected_exposure_ratio``,
  ``expected_ndcg_at_10``, ``ee_l``) and the mean-score ranking's (``exposure_disparity``,
  ``ndcg_at_10``, ``kendall_tau``), and each lambda's disparity relative to lambda 0.

    python benchmarks/plrank_figures.py --part law --seeds 10
    python benchmarks/plrank_figures.py --part trec --lambdas 0,10,100,1000,10000
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from pareto_comparison import DATA, load_folds  # noqa: E402


def law(data: Path, seeds: int) -> None:
    from fairltr import DELTR, PLRank
    from fairltr.metrics import evaluate_ranking

    for dataset in ("law-race", "law-gender"):
        train, test = load_folds(dataset, data, 0)[0]
        deltr = evaluate_ranking(DELTR(gamma=0.0).fit(train).rank(test), "score")["kendall_tau"]
        print(f"{dataset}: DELTR gamma 0 kendall_tau {deltr:.4f}")
        for label, kw in (("plrank, 300 iterations", {}), ("plrank, 100 iterations", {"max_iter": 100}),
                          ("plrank_plain, 300 iterations", {"estimator": "plrank_plain"})):
            t0 = time.perf_counter()
            taus = [evaluate_ranking(PLRank(lam=0.0, seed=s, **kw).fit(train).rank(test), "score")["kendall_tau"]
                    for s in range(seeds)]
            print(f"  PLRank lambda 0, {label}, seeds 0-{seeds - 1}: kendall_tau min / median / max "
                  f"{min(taus):.4f} / {statistics.median(taus):.4f} / {max(taus):.4f}; largest gap below DELTR "
                  f"{deltr - min(taus):.4f} ({(time.perf_counter() - t0) / seeds:.2f} s per fit)")


def trec(data: Path, lambdas: list[float]) -> None:
    from fairltr.io import read_deltr_csv
    from fairltr.workflows.train_plrank import PLRankSpec, plrank_outcome

    fold = data / "TREC" / "fold_1"
    name = "features_withListNetFormat_withGender_withZscore_candidateAmount-200_{}.csv"
    train, test = read_deltr_csv(fold / name.format("train")), read_deltr_csv(fold / name.format("test"))
    print(f"TREC fold 1: {train['query_id'].nunique()} training queries, {test['query_id'].nunique()} held out; "
          "PLRank defaults, policy figures from 100 sampled rankings per test query (seed 0)")
    base, halved = None, None
    for lam in lambdas:
        m = plrank_outcome(train, test, PLRankSpec(lam=lam, device="cpu")).metrics
        base = m["expected_exposure_disparity"] if base is None else base
        if halved is None and m["expected_exposure_disparity"] <= 0.5 * base:
            halved = lam
        print(f"  lambda {lam:g}: expected_exposure_disparity {m['expected_exposure_disparity']:.4f} "
              f"({m['expected_exposure_disparity'] / base:.2f} x lambda {lambdas[0]:g}), expected_exposure_ratio "
              f"{m['expected_exposure_ratio']:.4f}, expected_ndcg_at_10 {m['expected_ndcg_at_10']:.4f}, ee_l "
              f"{m['ee_l']:.4f} | mean-score ranking: exposure_disparity {m['exposure_disparity']:.4f}, "
              f"ndcg_at_10 {m['ndcg_at_10']:.4f}, kendall_tau {m['kendall_tau']:.4f}")
    print(f"  smallest lambda that halves the policy's expected_exposure_disparity against lambda {lambdas[0]:g}: "
          + ("none" if halved is None else f"{halved:g}"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=["law", "trec"], required=True)
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--lambdas", default="0,10,100,1000,10000")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    if args.part == "law":
        law(args.data, args.seeds)
    else:
        trec(args.data, [float(x) for x in args.lambdas.split(",")])


if __name__ == "__main__":
    main()
