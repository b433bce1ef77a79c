"""``rank_with``'s post-processing goes through the declared re-rankers and ranks as the direct
calls did; ``serving_policy_of`` writes the spec strings it wrote by hand before."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.workflows.ranking import FairParams, GeyikParams, MultinomialParams, RankerSpec, rank_with
from fairltr.workflows.sweep import serving_policy_of

COLS = RankingColumns(query="query_id", group="protected", judgment="judgment")


class _Scored:
    """A stand-in model: ``rank`` returns the table with a fixed ``score`` and per-query ``rank``."""

    def __init__(self, scores: np.ndarray) -> None:
        self.scores = scores

    def rank(self, test: pd.DataFrame, query: str) -> pd.DataFrame:
        out = test.assign(score=self.scores)
        out["rank"] = out.groupby(query, sort=False)["score"].rank(ascending=False, method="first").astype("int64")
        return out


@pytest.fixture
def table():
    rng = np.random.default_rng(5)
    n = 60
    df = pd.DataFrame({"query_id": np.repeat(np.arange(5), 12), "protected": rng.integers(0, 3, n),
                       "judgment": rng.integers(0, 3, n).astype(float)})
    return df, _Scored(rng.normal(size=n))


def _encoded(out: pd.DataFrame) -> pd.DataFrame:
    n_q = out.groupby("query_id", sort=False)["rank"].transform("size").to_numpy()
    return out.assign(score=(n_q - out["rank"].to_numpy() + 1).astype("float64"))


def test_fair_post_is_fair_postprocess(table):
    from fairltr.fair import fair_postprocess

    df, model = table
    binary = df.assign(protected=(df["protected"] >= 1).astype(int))
    got = rank_with(model, binary, RankerSpec(fair_post=FairParams(0.6, 0.1)), COLS)
    want = fair_postprocess(model.rank(binary, "query_id"), 0.6, 0.1, columns=COLS)
    pd.testing.assert_frame_equal(got, want)


def test_multinomial_and_geyik_post_are_the_direct_calls(table):
    from fairltr.fair import rerank_geyik, rerank_multinomial

    df, model = table
    got = rank_with(model, df, RankerSpec(multinomial_post=MultinomialParams((("1", 0.3), ("2", 0.3)), k=6)), COLS)
    want = _encoded(rerank_multinomial(model.rank(df, "query_id"), "score", p={"1": 0.3, "2": 0.3}, k=6,
                                       columns=COLS.replace(judgment=None, item=None)))
    pd.testing.assert_frame_equal(got, want)
    spec = RankerSpec(geyik_post=GeyikParams("detcons", ((0, 0.4), (1, 0.3), (2, 0.3)), 8))
    ranked = model.rank(df, "query_id")
    want = _encoded(rerank_geyik(ranked.assign(score_before_geyik=ranked["score"].to_numpy()), "score",
                                 method="detcons", target={0: 0.4, 1: 0.3, 2: 0.3}, k=8, columns=COLS))
    pd.testing.assert_frame_equal(rank_with(model, df, spec, COLS), want)


@pytest.mark.parametrize("spec, text", [
    (RankerSpec(), None),
    (RankerSpec(fair_post=FairParams(0.3123456789, 0.05, False)), "fair:p=0.312346,alpha=0.05,adjust=false"),
    (RankerSpec(multinomial_post=MultinomialParams((("1", 0.2), ("2", 0.1234567)), alpha=0.07, k=10)),
     "fair:alpha=0.07,adjust=true,k=10,p=1=0.2,2=0.123457"),
    (RankerSpec(geyik_post=GeyikParams("detcons", (("A", 0.3333333333), ("B", 0.6666666667)), 5)),
     "detcons:k=5,target=A:0.333333,B:0.666667"),
    (RankerSpec(geyik_post=GeyikParams("detgreedy")), "detgreedy"),
])
def test_serving_policy_of_writes_the_spec_as_before(spec, text):
    assert serving_policy_of(spec) == text
