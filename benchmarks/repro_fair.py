"""The DELTR paper's FA*IR baselines on its own splits: exposure_ratio of standard LTR (gamma=0),
FA*IR post-processing of its ranking and FA*IR pre-processing of the training lists, each with
p* (protected share of the training data), p+ = p* + 0.1 and p- = p* - 0.1 (skipped when <= 0).

    python benchmarks/repro_fair.py [--data ../shared/data/deltr-experiments] [--alpha 0.1]

TREC: exposures averaged over the 6 folds, ratio of the averages (the paper's convention).
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

from fairltr.fair import protected_share
from fairltr.io import read_deltr_csv
from fairltr.workflows import FairParams, RankerSpec, train_and_evaluate

PAPER = {  # exposure_ratio = exposure-prot-pred / exposure-nprot-pred from paper-results/
    "law-race": {"gamma=0": 0.846, "post p*": 0.965, "post p+": 1.121, "pre p*": 0.888, "pre p+": 1.741,
                 "pre p-": 0.853},
    "law-gender": {"gamma=0": 0.897, "post p*": 0.979, "post p+": 1.036, "post p-": 0.931, "pre p*": 0.944,
                   "pre p+": 1.203, "pre p-": 0.904},
    "trec": {"gamma=0": 0.759, "post p*": 0.854, "post p+": 1.008, "post p-": 0.759, "pre p*": 0.937,
             "pre p+": 1.004, "pre p-": 0.937},
}


def splits(root: Path, name: str) -> list[tuple[Path, Path]]:
    if name == "law-race":
        d = root / "LawStudents" / "race_black"
        return [(d / "LawStudents_Race_train.txt", d / "LawStudents_Race_test.txt")]
    if name == "law-gender":
        d = root / "LawStudents" / "gender"
        return [(d / "LawStudents_Gender_train.txt", d / "LawStudents_Gender_test.txt")]
    stem = "features_withListNetFormat_withGender_withZscore_candidateAmount-200"
    return [(root / "TREC" / f"fold_{i}" / f"{stem}_train.csv", root / "TREC" / f"fold_{i}" / f"{stem}_test.csv")
            for i in range(1, 7)]


def ratio_of_means(metrics: list[dict[str, float]]) -> float:
    """exposure_ratio of the fold-averaged group exposures (the paper's convention)."""
    return float(np.mean([m["exposure_protected"] for m in metrics]) / np.mean([m["exposure_nonprotected"] for m in metrics]))


def run(root: Path, name: str, alpha: float, adjust: bool = True) -> dict[str, float]:
    folds = [(read_deltr_csv(a), read_deltr_csv(b)) for a, b in splits(root, name)]
    p_star = protected_share(__import__("pandas").concat([tr for tr, _ in folds]))
    ps = {"p*": p_star, "p+": p_star + 0.1, "p-": p_star - 0.1}
    standard = RankerSpec(gamma=0.0)
    base = [train_and_evaluate(tr, te, standard) for tr, te in folds]
    rows = {"gamma=0": ratio_of_means([o.metrics for o in base])}
    for label, p in ps.items():
        if p <= 0:
            continue
        fair = FairParams(p, alpha, adjust)
        post = [train_and_evaluate(tr, te, standard.with_(fair_post=fair), model=o.model).metrics
                for (tr, te), o in zip(folds, base)]
        rows[f"post {label}"] = ratio_of_means(post)
        pre = [train_and_evaluate(tr, te, standard.with_(fair_pre=fair)).metrics for tr, te in folds]
        rows[f"pre {label}"] = ratio_of_means(pre)
    rows["p*"] = p_star
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared/data/deltr-experiments")
    ap.add_argument("--alpha", type=float, default=0.1)
    ap.add_argument("--datasets", nargs="+", default=["law-race", "trec"],
                    choices=["law-race", "law-gender", "trec"])
    ap.add_argument("--no-adjust", action="store_true", help="FA*IR tables without the alpha adjustment")
    args = ap.parse_args()
    torch.set_num_threads(1)
    for name in args.datasets:
        t = time.perf_counter()
        rows = run(args.data, name, args.alpha, adjust=not args.no_adjust)
        print(f"== {name} (p* = {rows.pop('p*'):.4f}, alpha = {args.alpha}, "
              f"{'unadjusted' if args.no_adjust else 'adjusted'} tables, {time.perf_counter() - t:.1f} s)")
        for setting, value in rows.items():
            paper = PAPER.get(name, {}).get(setting)
            print(f"  {setting:10s} exposure_ratio {value:.3f}" + (f"   paper {paper:.3f}" if paper else ""))


if __name__ == "__main__":
    main()
