"""A multinomial FA*IR serving policy (``fair:alpha=0.1,k=8,p=1=0.3,2=0.15``): the spec round-trips,
a logged model serves re-ranked lists whose top k pass the multinomial ranked group fairness test
(checked by an explicit loop over prefixes), a request may change the shares where allowed, and
a bad share list is a one-line 400."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr import DELTR
from fairltr.fair import multinomial_mtable, parse_policy, policy_from_params

SHARES = {1: 0.3, 2: 0.15}


@pytest.fixture(scope="module")
def three_category_ranker():
    """An unfair DELTR (gamma 0) on lists with categories 0 (non-protected), 1 and 2."""
    from fairltr.synthetic import make_biased_rankings

    train, test = make_biased_rankings(20, 12, 0.45, seed=5)
    rng = np.random.default_rng(1)
    for df in (train, test):
        prot = df["protected"].to_numpy() >= 1
        df.loc[prot, "protected"] = np.where(rng.random(prot.sum()) < 0.35, 2, 1)
    return DELTR(gamma=0.0, max_iter=30).fit(train), test


def _assert_multinomial_prefixes(out: pd.DataFrame, groups: np.ndarray, k: int, shares: dict, alpha: float) -> int:
    """Every query flagged feasible holds at least m_j(i) of each category j in its top-i prefixes
    (loop); a query flagged infeasible lacks the candidates of some category. Returns the number
    of feasible queries."""
    n_feasible = 0
    for q in pd.unique(out["query_id"]):
        rows = np.flatnonzero(out["query_id"].to_numpy() == q)
        order = rows[np.argsort(out["rank"].to_numpy()[rows], kind="stable")]
        assert sorted(out["rank"].to_numpy()[rows]) == list(range(1, len(rows) + 1))
        kq = min(k, len(rows))
        table = multinomial_mtable(kq, list(shares.values()), alpha)
        flags = out["fair_feasible"].to_numpy()[rows]
        assert flags.all() or not flags.any()
        if not flags[0]:
            assert any((groups[rows] == c).sum() < table[-1, j] for j, c in enumerate(shares)), q
            continue
        n_feasible += 1
        top = groups[order][:kq]
        for i in range(kq):
            for j, c in enumerate(shares):
                assert (top[: i + 1] == c).sum() >= table[i, j], (q, i, c)
    return n_feasible


def test_multinomial_policy_spec_round_trips():
    from fairltr.errors import ConfigError

    p = parse_policy("fair:alpha=0.1,k=8,p=1=0.3,2=0.15")
    assert (p.method, p.alpha, p.k, p.multinomial) == ("fair", 0.1, 8, True)
    assert p.describe() == "fair:alpha=0.1,adjust=true,k=8,p=1=0.3,2=0.15"
    assert parse_policy(p.describe()) == parse_policy(p.describe())  # stable
    assert parse_policy(p.describe()).describe() == p.describe()
    assert policy_from_params(p, {"p": "1=0.2,2=0.2"}).multinomial_spec() == "1=0.2,2=0.2"
    assert not policy_from_params(p, {"p": 0.3}).multinomial  # back to binomial FA*IR
    for bad, needle in [("fair:p=1=0.6,2=0.5", "sum to 1.1"), ("fair:p=1=1.5", "open interval"),
                        ("detconstsort:p=1=0.2", "takes target")]:
        with pytest.raises(ConfigError, match=needle):
            parse_policy(bad)


def test_logged_multinomial_policy_serves_fair_lists(mlflow_tracking, three_category_ranker):
    import mlflow
    from mlflow.exceptions import MlflowException

    from fairltr.tracking import log_ranker_model

    model, test = three_category_ranker
    mlflow.set_experiment("test-serving-multinomial")
    with mlflow.start_run():
        info = log_ranker_model(model, input_example=test.head(6), serve_rerank="fair:alpha=0.1,k=8,p=1=0.3,2=0.15",
                                serve_overrides="p")
    loaded = mlflow.pyfunc.load_model(info.model_uri)
    shuffled = test.sample(frac=1.0, random_state=2)
    groups = shuffled["protected"].to_numpy()
    out = loaded.predict(shuffled)
    assert out.index.equals(shuffled.index)
    assert _assert_multinomial_prefixes(out, groups, 8, SHARES, 0.1) > 0
    plain = model.rank(shuffled)
    assert not out.sort_values(["query_id", "rank"])["score"].reset_index(drop=True).equals(
        plain.sort_values(["query_id", "rank"])["score"].reset_index(drop=True))  # the policy did something
    stricter = loaded.predict(shuffled, params={"p": "1=0.4,2=0.25"})
    assert _assert_multinomial_prefixes(stricter, groups, 8, {1: 0.4, 2: 0.25}, 0.1) > 0
    without_2 = shuffled[shuffled["protected"] != 2]  # a request lacking a category the policy names
    assert not loaded.predict(without_2)["fair_feasible"].any()
    with pytest.raises(MlflowException) as err:
        loaded.predict(shuffled, params={"p": "1=0.7,2=0.7"})
    assert err.value.error_code == "INVALID_PARAMETER_VALUE" and "sum to 1.4" in err.value.message
    assert "\n" not in err.value.message
