"""FA*IR pre- and post-processing baselines and the protected share p*."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import DataError
from fairltr.fair import fair_postprocess, fair_preprocess, is_fair, protected_share, rerank
from fairltr.metrics import evaluate_ranking


def training_table(seed: int = 0) -> pd.DataFrame:
    """Biased training lists: protected candidates sit at the bottom of each list."""
    rng = np.random.default_rng(seed)
    frames = []
    for q, n in enumerate([12, 30, 7, 1]):
        prot = np.zeros(n, dtype=int)
        prot[-max(1, n // 3):] = 1
        frames.append(pd.DataFrame({"query_id": q, "protected": prot, "x1": rng.normal(size=n),
                                    "judgment": np.linspace(3.0, -1.0, n) if n > 1 else [2.0]}))
    return pd.concat(frames, ignore_index=True)


def test_protected_share():
    df = pd.DataFrame({"protected": [0, 1, 2, 0]})
    assert protected_share(df) == 0.5
    with pytest.raises(DataError, match="'grp'"):
        protected_share(df, group="grp")


def test_fair_preprocess_orders_and_encodes_judgments():
    df = training_table()
    out = fair_preprocess(df, p=0.5, alpha=0.1)
    assert list(out.columns) == list(df.columns)  # trains a model as is
    assert len(out) == len(df)
    expected = rerank(df, "judgment", p=0.5, alpha=0.1)
    for qid, got in out.groupby("query_id", sort=False):
        orig = df[df["query_id"] == qid]
        want = expected[expected["query_id"] == qid]
        assert got["x1"].tolist() == want["x1"].tolist()  # rows in the fair order
        j = got["judgment"].to_numpy()
        if len(j) > 1:
            assert np.all(np.diff(j) < 0)  # strictly decreasing with the new rank
            assert j[0] == pytest.approx(orig["judgment"].max()) and j[-1] == pytest.approx(orig["judgment"].min())
            assert np.allclose(np.diff(j), np.diff(j)[0])  # evenly spaced
            assert is_fair(got["protected"].to_numpy(), 0.5, 0.1) == out.attrs["fair_feasible"][qid]
        else:
            assert j.tolist() == orig["judgment"].tolist()
    # the biased lists changed: protected candidates moved up
    assert out.groupby("query_id").head(6)["protected"].sum() > df.groupby("query_id").head(6)["protected"].sum()


def test_fair_preprocess_small_p_changes_nothing():
    df = training_table()
    out = fair_preprocess(df, p=0.01, alpha=0.1)
    pd.testing.assert_frame_equal(out.reset_index(drop=True), df.reset_index(drop=True))


def test_fair_postprocess_scores_follow_the_fair_order():
    df = training_table(1)
    ranked = df.assign(score=-np.arange(len(df), dtype=float))  # protected at the bottom
    out = fair_postprocess(ranked, p=0.5, alpha=0.1)
    assert len(out) == len(df)
    assert {"rank", "fair_feasible", "score_before_fair"} <= set(out.columns)
    for _, got in out.groupby("query_id", sort=False):
        assert got["rank"].tolist() == list(range(1, len(got) + 1))
        assert np.all(np.diff(got["score"].to_numpy()) < 0)
    # evaluating the new scores evaluates the fair order
    m_fair = evaluate_ranking(out, out["score"])
    m_rank = evaluate_ranking(out, -out["rank"].to_numpy(dtype=float))
    assert m_fair["exposure_ratio"] == pytest.approx(m_rank["exposure_ratio"])
    assert m_fair["exposure_ratio"] > evaluate_ranking(ranked, ranked["score"])["exposure_ratio"]


def test_fair_postprocess_named_score_column_and_k():
    df = training_table(2).assign(pred=lambda d: -np.arange(len(d), dtype=float))
    out = fair_postprocess(df, p=0.5, alpha=0.1, score="pred", k=5)
    assert "score" not in out.columns and "pred" in out.columns
    for _, got in out.groupby("query_id", sort=False):
        before = got["score_before_fair"].to_numpy()[5:]
        assert np.all(np.diff(before) <= 0)  # below k: the model's order


def test_baselines_on_the_paper_data(deltr_data):
    """Post-processing the Law race test ranking by LSAT with p+ raises the protected exposure."""
    from fairltr.io import read_deltr_csv

    d = deltr_data / "LawStudents" / "race_black"
    train = read_deltr_csv(d / "LawStudents_Race_train.txt")
    test = read_deltr_csv(d / "LawStudents_Race_test.txt")
    p_plus = protected_share(train) + 0.1
    base = evaluate_ranking(test, test["x1"])["exposure_ratio"]
    post = fair_postprocess(test.assign(score=test["x1"]), p_plus, 0.1)
    assert evaluate_ranking(post, post["score"])["exposure_ratio"] > base
    pre = fair_preprocess(train, p_plus, 0.1)
    top = pre.head(len(pre) // 5)["protected"].mean()
    assert top > train.sort_values("judgment", ascending=False).head(len(pre) // 5)["protected"].mean()
