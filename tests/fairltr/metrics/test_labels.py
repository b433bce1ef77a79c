"""Escaped names: no two audit rows or metric keys can share a name (issue 29: a '|' inside a category
gave two race x sex cells one label; a group column named 'race:sex' clashed with the intersection)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.metrics import AuditConfig, audit_ranking, is_metric_key
from fairltr.metrics.availability import uncomputed_reason
from fairltr.metrics.labels import attribute_key, category_label, intersection_name, split_category_label


@pytest.mark.parametrize("name", ["race", "race:sex", "a.b", "x/y", "r,e", "a|b", "naïve", "two words", "a.x3a.b"])
def test_attribute_keys_are_one_to_one_and_legal_mlflow_keys(name):
    import re

    key = attribute_key(name)
    assert re.fullmatch(r"[/\w.\- :]*", key) and ":" not in key and "/" not in key and "," not in key
    names = ["race", "race:sex", "a.b", "x/y", "r,e", "a|b", "naïve", "two words", "a.x3a.b", "a:b", "a.x3a.b:"]
    keys = [attribute_key(n) for n in names]
    assert len(set(keys)) == len(names)  # one-to-one over names that look alike
    assert intersection_name(["race", "sex"]) == "race:sex" != attribute_key("race:sex")


def test_category_labels_round_trip():
    for parts in (["A|B", "C"], ["A", "B|C"], ["a\\", "|b"], ["", ""], ["x,y", "z:w"]):
        assert split_category_label(category_label(parts)) == parts
    assert category_label(["A|B", "C"]) != category_label(["A", "B|C"])


def test_audit_rows_and_keys_never_collide():
    rng = np.random.default_rng(0)
    n = 400
    df = pd.DataFrame({"qid": np.repeat(np.arange(20), 20),
                       "race": rng.choice(["A|B", "A"], n), "sex": rng.choice(["C", "B|C"], n),
                       "race:sex": rng.choice(["p", "q"], n), "r,e": rng.choice(["u", "v"], n),
                       "rel": rng.integers(0, 3, n).astype(float), "score": rng.normal(size=n)})
    c = RankingColumns(query="qid", group=("race", "sex", "race:sex", "r,e"), judgment="rel")
    res = audit_ranking(df, "score", columns=c, config=AuditConfig(k=5, min_category_share=0.0, ci=0))
    t = res.table
    assert not t.duplicated(["attribute", "category"]).any()
    attributes = list(dict.fromkeys(t["attribute"]))
    assert attributes[:4] == ["race", "sex", "race.x3a.sex", "r.x2c.e"]
    inter = t[t["attribute"] == attributes[4]]
    assert len(inter) == len(df.groupby(["race", "sex", "race:sex", "r,e"]).size())  # every observed cell, once
    # each intersection label decodes to the row's own categories
    for label in inter["category"]:
        parts = split_category_label(label)
        assert len(parts) == 4 and ((df["race"] == parts[0]) & (df["sex"] == parts[1])).any()
    keys = [k for k in res.metrics if k.startswith("impact_ratio_at_5.")]
    assert len(keys) == len(set(keys)) == 5 and all(is_metric_key(k) for k in keys)
    assert "impact_ratio_at_5.race.x3a.sex" in res.metrics and "impact_ratio_at_5.race:sex:race.x3a.sex:r.x2c.e" in \
        res.metrics
    # a gate naming the escaped attribute is computable; the unescaped name is not an attribute here
    assert uncomputed_reason("impact_ratio_at_5.race.x3a.sex", evaluator="ranker", groups=c.groups) is None
    assert uncomputed_reason("impact_ratio_at_5.gender", evaluator="ranker", groups=c.groups) is not None
