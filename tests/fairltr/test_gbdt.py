"""LambdaMART (fairltr.gbdt): the NDCG of fairltr's evaluator equals LightGBM's own evaluation
of the same booster on the same split; integer grades as labels, quantile grades otherwise;
the model file round trip and its rejection of a changed or corrupt LightGBM file."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

lgb = pytest.importorskip("lightgbm", reason="LambdaMART needs the [gbdt] extra (lightgbm)")

from fairltr.errors import ConfigError, DataError, NotFittedError  # noqa: E402
from fairltr.gbdt import GBDTParams, LambdaMART, relevance_grades  # noqa: E402
from fairltr.rankers import load_ranker  # noqa: E402
from fairltr.metrics import evaluate_ranking  # noqa: E402
from fairltr.synthetic import make_biased_rankings  # noqa: E402


def graded(seed: int, queries: int = 12, n: int = 15) -> pd.DataFrame:
    """Queries with integer judgments 0..4 (every query holds a relevant item), queries
    interleaved row by row (LightGBM needs contiguous groups: the model must group them)."""
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(queries):
        x = rng.normal(size=(n, 3))
        grade = np.clip(np.round(1.2 * x[:, 0] + 0.6 * x[:, 1] + rng.normal(0, 0.7, n) + 1.5), 0, 4)
        grade[0] = 4
        for i in range(n):
            rows.append({"query_id": q, "protected": int(rng.random() < 0.3), "x1": x[i, 0], "x2": x[i, 1],
                         "x3": x[i, 2], "judgment": int(grade[i])})
    df = pd.DataFrame(rows)
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # queries not contiguous


def test_ndcg_matches_lightgbm_own_evaluation():
    """LightGBM's ndcg@k (label_gain 2^i - 1 by default, 1/log2(1 + r) discount) of the booster
    on the test split == fairltr's ndcg_at_k on the model's ranking, to 1e-9 (both in float64;
    LightGBM's default gains equal fairltr's 2^rel - 1 on integer judgments)."""
    train, test = graded(1), graded(2)
    params = GBDTParams(n_estimators=25, num_leaves=7, min_data_in_leaf=5)
    model = LambdaMART(params, seed=3).fit(train)
    assert model.label_mode_ == "integer"  # the grades are used as given
    # LightGBM's evaluation of the same settings on the same split, with contiguous groups
    feats = model.feature_names_

    def contiguous(df):  # queries in order of first appearance, rows in input order (as the model groups them)
        first = {q: i for i, q in enumerate(dict.fromkeys(df["query_id"]))}
        out = df.assign(_q=df["query_id"].map(first)).sort_values("_q", kind="stable")
        return out, out.groupby("_q", sort=True).size().to_numpy()

    (tr, gtr), (te, gte) = contiguous(train), contiguous(test)
    evals: dict = {}
    dtrain = lgb.Dataset(tr[feats].to_numpy(float), label=tr["judgment"].to_numpy(), group=gtr, feature_name=feats)
    dtest = lgb.Dataset(te[feats].to_numpy(float), label=te["judgment"].to_numpy(), group=gte, reference=dtrain)
    booster = lgb.train({**model._lgb_params(), "eval_at": [1, 5, 10]}, dtrain, num_boost_round=25,
                        valid_sets=[dtest], valid_names=["test"], callbacks=[lgb.record_evaluation(evals)])
    trees = [b.model_to_string().split("end of trees")[0] for b in (model.booster_, booster)]
    assert trees[0] == trees[1]  # the same trees: the model's grouping of the rows is LightGBM's
    ours = evaluate_ranking(model.rank(test), "score", k=(1, 5, 10))
    # trees give tied scores; both sides break ties by input order within the query (LightGBM's
    # DCG calculator stable-sorts by score, fairltr's rank keeps input order)
    for k in (1, 5, 10):
        assert ours[f"ndcg_at_{k}"] == pytest.approx(evals["test"][f"ndcg@{k}"][-1], abs=1e-9)
    # the comparison can tell gain conventions apart: LightGBM with linear gains evaluates differently
    linear: dict = {}
    lgb.train({**model._lgb_params(), "eval_at": [10], "label_gain": [0, 1, 2, 3, 4]}, dtrain, num_boost_round=25,
              valid_sets=[dtest], valid_names=["test"], callbacks=[lgb.record_evaluation(linear)])
    assert abs(linear["test"]["ndcg@10"][-1] - ours["ndcg_at_10"]) > 1e-4


def test_quantile_grades_for_continuous_judgments():
    y = np.array([-2.0, -1.0, 0.5, 0.5, 3.0, 10.0])
    labels, mode, edges = relevance_grades(y, 3)
    assert mode == "quantile" and len(edges) == 2
    assert np.all(np.diff(labels[np.argsort(y, kind="stable")]) >= 0)  # monotone in the judgment
    assert labels.min() == 0 and labels.max() == 2
    ints, mode, _ = relevance_grades(np.array([0, 3, 1, 30]), 5)
    assert mode == "integer" and ints.tolist() == [0, 3, 1, 30]
    assert relevance_grades(np.array([0, 31]), 5)[1] == "quantile"  # beyond LightGBM's 31 default gains


def test_fits_continuous_judgments_and_colorblind():
    train, test = make_biased_rankings(12, 10, 0.3, bias=1.5, seed=4)
    model = LambdaMART(GBDTParams(n_estimators=10, min_data_in_leaf=3)).fit(train)
    assert model.label_mode_ == "quantile" and "protected" in model.feature_names_
    assert [h["iteration"] for h in model.history] == list(range(1, 11))
    blind = LambdaMART(GBDTParams(n_estimators=10, min_data_in_leaf=3), colorblind=True).fit(train)
    assert "protected" not in blind.feature_names_
    ranked = blind.rank(test)
    assert ranked.groupby("query_id")["rank"].min().eq(1).all()
    with pytest.raises(NotFittedError):
        LambdaMART().predict(test)
    with pytest.raises(DataError, match="missing feature"):
        model.predict(test.drop(columns=["x1"]))


def test_params_are_validated():
    with pytest.raises(ConfigError, match="num_leaves"):
        GBDTParams(num_leaves=1)
    with pytest.raises(ConfigError, match="learning_rate"):
        GBDTParams(learning_rate=0)
    with pytest.raises(ConfigError, match="must be an integer"):
        GBDTParams(n_estimators=2.5)
    assert GBDTParams().with_values({"num_leaves": 7.4, "learning_rate": 0.05}).num_leaves == 7


def test_model_file_round_trip_and_rejections(tmp_path):
    train, test = make_biased_rankings(10, 10, 0.3, seed=5)
    model = LambdaMART(GBDTParams(n_estimators=8, min_data_in_leaf=3), seed=1).fit(train)
    path = model.save(tmp_path / "model.json")
    booster = tmp_path / "model.txt"
    assert booster.is_file() and lgb.Booster(model_file=str(booster)).num_trees() == 8  # LightGBM's own file
    again = load_ranker(path)
    assert isinstance(again, LambdaMART)
    np.testing.assert_array_equal(again.predict(test), model.predict(test))
    assert again.feature_names_ == model.feature_names_ and again.history == model.history
    with pytest.raises(ConfigError, match=".json"):
        model.save(tmp_path / "model.txt")
    # a changed booster file: rejected before LightGBM parses it
    text = booster.read_text()
    booster.write_text(text.replace("learning_rate", "learning_rat", 1))
    with pytest.raises(DataError, match="does not match the SHA-256"):
        LambdaMART.load(path)
    booster.write_text(text[: len(text) // 2])
    with pytest.raises(DataError, match="does not match the SHA-256"):
        LambdaMART.load(path)
    booster.write_text(text)
    # a corrupt booster whose digest was re-recorded: LightGBM's parser rejects it, one line
    state = json.loads(path.read_text())
    import hashlib

    junk = "tree\nversion=v4\nnum_class=oops\n"
    booster.write_text(junk)
    state["booster_sha256"] = hashlib.sha256(junk.encode()).hexdigest()
    path.write_text(json.dumps(state))
    with pytest.raises(DataError, match="LightGBM cannot read the model"):
        LambdaMART.load(path)
    booster.write_text(text)
    state["booster_sha256"] = hashlib.sha256(text.encode()).hexdigest()
    for field, value, message in (("format_version", 9, "format_version"), ("feature_names", ["a"], "feature_names"),
                                  ("params", {"num_leaves": 0}, "params")):
        broken = dict(state, **{field: value})
        path.write_text(json.dumps(broken))
        with pytest.raises(DataError, match=message):
            LambdaMART.load(path)
    path.write_text("{not json")
    with pytest.raises(DataError, match="not a fairltr"):
        load_ranker(path)  # not a LambdaMART file: DELTR's loader names the defect
