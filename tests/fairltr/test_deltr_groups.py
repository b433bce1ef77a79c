"""DELTR with a multi-category group attribute (docs/audit.md, "Training with several categories"):
the hinge compares every category with the reference category, which moves toward parity as
gamma grows."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

from fairltr import DELTR
from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError
from fairltr.losses.exposure import group_exposure
from fairltr.metrics import AuditConfig, audit_ranking

COLUMNS = RankingColumns(group="race")


def three_category_table(seed: int = 1, n_queries: int = 60, n: int = 12) -> pd.DataFrame:
    """Race A / B / C with A's candidates scoring higher on x1; B and C indicators are features
    (the group is a feature of DELTR's standard ranker; a string column itself is not)."""
    rng = np.random.default_rng(seed)
    rows = n_queries * n
    race = rng.choice(np.array(["A", "B", "C"]), rows, p=[0.5, 0.3, 0.2])
    x1 = rng.normal(size=rows) + pd.Series(race).map({"A": 1.0, "B": 0.0, "C": -0.7}).to_numpy()
    y = np.clip(np.round(x1 + rng.normal(scale=0.5, size=rows) + 1), 0, 4)
    return pd.DataFrame({"query_id": np.repeat(np.arange(n_queries), n), "race": race, "x1": x1,
                         "is_B": (race == "B") * 1.0, "is_C": (race == "C") * 1.0, "judgment": y})


def _softmax_exposure(model: DELTR, df: pd.DataFrame) -> np.ndarray:
    """Mean over queries of the expected exposure per category (A, B, C): the quantity DELTR trains."""
    order = {"A": 0, "B": 1, "C": 2}
    s = torch.as_tensor(model.predict(df)).reshape(60, 12)
    g = torch.tensor(df["race"].map(order).to_numpy()).reshape(60, 12)
    means, counts = group_exposure(s, g, torch.ones_like(s, dtype=torch.bool), n_groups=3)
    return ((means * (counts > 0)).sum(0) / (counts > 0).sum(0)).numpy()


def test_exposure_of_every_category_moves_toward_the_reference_as_gamma_grows():
    df = three_category_table()
    worst_expected, worst_ranked = [], []
    for gamma in (0.0, 30.0, 1e4):
        model = DELTR(gamma, columns=COLUMNS, reference_group="A").fit(df)
        assert model.feature_names_ == ["x1", "is_B", "is_C"]
        e = _softmax_exposure(model, df)
        worst_expected.append(min(e[1], e[2]) / e[0])  # the hinge's view: each category vs the reference
        table = audit_ranking(df, model.predict(df), columns=COLUMNS, config=AuditConfig(k=3, ci=0)).table
        exp = table.set_index("category")["exposure"]
        worst_ranked.append(min(exp["B"], exp["C"]) / exp["A"])
    assert worst_expected[0] < 0.9 and worst_expected[0] < worst_expected[1] < worst_expected[2]
    # the hinge is asymmetric and per query: at large gamma every category gets at least the
    # reference's exposure in (nearly) every query, so on average it gets at least as much
    assert worst_expected[2] >= 0.98
    assert worst_ranked[0] < 0.7 and worst_ranked[1] > worst_ranked[0] + 0.2  # and in the ranked exposure


def test_reference_rules_and_the_model_file(tmp_path):
    df = three_category_table(n_queries=20)
    default = DELTR(100.0, columns=COLUMNS, max_iter=5).fit(df)  # A, the most frequent, is the reference
    declared = DELTR(100.0, columns=COLUMNS, max_iter=5, reference_group="A").fit(df)
    np.testing.assert_allclose(default.weights_, declared.weights_, rtol=1e-12)
    other = DELTR(100.0, columns=COLUMNS, max_iter=5, reference_group="C").fit(df)
    assert not np.allclose(other.weights_, default.weights_)
    assert "reference_group" not in default.effective_params()
    path = declared.save(tmp_path / "m.json")
    assert json.loads(path.read_text())["params"]["reference_group"] == "A"
    loaded = DELTR.load(path)
    assert loaded.reference_group == "A" and np.allclose(loaded.predict(df), declared.predict(df))
    with pytest.raises(ConfigError, match="reference category 'Z' does not occur"):
        DELTR(1.0, columns=COLUMNS, reference_group="Z").fit(df)
    with pytest.raises(ConfigError, match="reference_group must be"):
        DELTR(1.0, columns=COLUMNS, reference_group=1.5).fit(df)


def test_colorblind_drops_every_group_attribute():
    df = three_category_table(n_queries=10).assign(sex=lambda d: np.arange(len(d)) % 2)
    model = DELTR(0.0, columns=RankingColumns(group=("race", "sex")), colorblind=True, max_iter=3).fit(df)
    assert model.feature_names_ == ["x1", "is_B", "is_C"]
