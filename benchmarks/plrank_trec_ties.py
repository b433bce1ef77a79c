"""Why docs/plrank.md's TREC fold-1 mean-score ndcg_at_10 at lambda 0 fell from 0.8887 to 0.5171:
the held-out queries have 200 candidates but 10 distinct feature rows each, so every linear scorer
ties candidates in blocks, and main's metrics stopped ordering tied scores by input order
(``ties="expected"``: the mean over the ties' random orders). DELTR at gamma 0 and PLRank at
lambda 0 are fitted on TREC fold 1 and evaluated under both tie rules, with the number of
distinct scores per test query and the test scores' standard deviation (a constant PL scorer
would have one distinct score and std 0).

    python benchmarks/plrank_trec_ties.py      # about 10 s
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pareto_comparison import DATA  # noqa: E402


def main() -> None:
    from fairltr import DELTR, PLRank
    from fairltr.io import read_deltr_csv
    from fairltr.metrics import evaluate_ranking

    fold = DATA / "TREC" / "fold_1"
    name = "features_withListNetFormat_withGender_withZscore_candidateAmount-200_{}.csv"
    train, test = read_deltr_csv(fold / name.format("train")), read_deltr_csv(fold / name.format("test"))
    feats = [c for c in test.columns if c not in ("query_id", "judgment")]
    rows = test.groupby("query_id").size().to_numpy()
    distinct_x = np.array([len(g[feats].drop_duplicates()) for _, g in test.groupby("query_id")])
    print(f"TREC fold 1 test: {len(rows)} queries, rows per query {rows.min()}-{rows.max()}, "
          f"distinct feature rows per query {distinct_x.min()}-{distinct_x.max()}")
    for label, model in (("DELTR gamma 0", DELTR(gamma=0.0)), ("PLRank lambda 0", PLRank(lam=0.0, device="cpu"))):
        t0 = time.perf_counter()
        model.fit(train)
        seconds = time.perf_counter() - t0
        s = np.asarray(model.predict(test))
        distinct = test.assign(s=s).groupby("query_id")["s"].nunique().to_numpy()
        print(f"{label}: test score std {s.std():.4f}, |w| {np.linalg.norm(model.weights_):.3f}, distinct scores "
              f"per query {distinct.min()}-{distinct.max()}, fit {seconds:.1f} s")
        for ties in ("expected", "input-order"):
            m = evaluate_ranking(test, s, k=(10,), ties=ties)
            print(f"  ties={ties}: ndcg_at_10 {m['ndcg_at_10']:.4f}, kendall_tau {m['kendall_tau']:.4f}")


if __name__ == "__main__":
    main()
