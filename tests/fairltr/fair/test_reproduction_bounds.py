"""The DELTR paper's FA*IR findings on its own splits (issue bounds): post-processing with p+ lifts
exposure_ratio above standard LTR; pre-processing with p+ overshoots on Law race and reaches
>= 0.98 on TREC."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr import DELTR
from fairltr.fair import fair_postprocess, fair_preprocess, protected_share
from fairltr.io import read_deltr_csv
from fairltr.metrics import evaluate_ranking

TREC_STEM = "features_withListNetFormat_withGender_withZscore_candidateAmount-200"


def ratio(frames: list[pd.DataFrame]) -> float:
    """Exposures averaged over folds, then their ratio (the paper's convention)."""
    ms = [evaluate_ranking(f, f["score"], k=(10,)) for f in frames]
    return float(np.mean([m["exposure_protected"] for m in ms]) / np.mean([m["exposure_nonprotected"] for m in ms]))


def baselines(folds: list[tuple[pd.DataFrame, pd.DataFrame]]) -> dict[str, float]:
    p_plus = protected_share(pd.concat([tr for tr, _ in folds])) + 0.1
    base = [DELTR(0).fit(tr).rank(te) for tr, te in folds]
    post = [fair_postprocess(r, p_plus, alpha=0.1) for r in base]
    pre = [DELTR(0).fit(fair_preprocess(tr, p_plus, 0.1)).rank(te) for tr, te in folds]
    return {"gamma0": ratio(base), "post": ratio(post), "pre": ratio(pre)}


def test_law_race(deltr_data):
    d = deltr_data / "LawStudents" / "race_black"
    r = baselines([(read_deltr_csv(d / "LawStudents_Race_train.txt"), read_deltr_csv(d / "LawStudents_Race_test.txt"))])
    assert r["gamma0"] == pytest.approx(0.846, abs=0.02)  # paper 0.846
    assert r["post"] > r["gamma0"] + 0.1  # paper 1.121; measured 1.098
    assert r["pre"] > 1.05  # paper 1.741; measured 1.588


def test_trec(deltr_data):
    folds = [(read_deltr_csv(deltr_data / "TREC" / f"fold_{i}" / f"{TREC_STEM}_train.csv"),
              read_deltr_csv(deltr_data / "TREC" / f"fold_{i}" / f"{TREC_STEM}_test.csv")) for i in range(1, 7)]
    r = baselines(folds)
    assert r["post"] > r["gamma0"]  # paper 0.759 -> 1.008; measured 0.786 -> 0.952
    assert r["pre"] >= 0.98  # paper 1.004; measured 2.043
