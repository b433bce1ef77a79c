"""The audit of docs/spec.md section 3b against independent computations: a brute-force pandas
groupby, fairlearn's MetricFrame, enumeration for NDKL; exclusions, the binary case, errors."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError, DataError
from fairltr.io import read_table
from fairltr.metrics import AuditConfig, audit_ranking, evaluate_ranking, evaluate_ranking_audit
from fairltr.metrics.audit import TABLE_COLUMNS

NO_CI = dict(ci=0)


def random_table(seed: int, n_queries: int = 40, *, ties: bool = False) -> pd.DataFrame:
    """Ragged queries (1..25 candidates), race in 4 string categories, sex as int 0/1, region as
    int categories 1..3, judgments 0..3."""
    rng = np.random.default_rng(seed)
    sizes = rng.integers(1, 26, n_queries)
    q = np.repeat(rng.permutation(n_queries) * 7 + 3, sizes)  # query ids not 0..Q-1, not sorted
    n = len(q)
    scores = rng.normal(size=n)
    if ties:
        scores = np.round(scores, 1)
    df = pd.DataFrame({
        "qid": q, "race": rng.choice(["White", "Black", "Hispanic", "Asian"], n, p=[.45, .3, .17, .08]),
        "sex": rng.choice([0, 1], n), "region": rng.choice([1, 2, 3], n), "rel": rng.integers(0, 4, n).astype(float),
        "score": scores + 0.3 * rng.integers(0, 4, n),
    })
    return df.sample(frac=1.0, random_state=seed).reset_index(drop=True)  # rows of a query not adjacent


def brute_force(df: pd.DataFrame, attributes: list[str], k: int, share: float) -> pd.DataFrame:
    """The table by pandas groupby: ranks per query, pooled sums per category, ratios to the
    largest non-excluded category of the same attribute."""
    d = df.copy()
    # tied scores are unordered (docs/spec.md section 3): a row of a tie group spanning positions
    # first..first+m-1 is selected with probability (#positions <= k) / m and gets the mean discount
    first = d.groupby("qid")["score"].rank(method="min", ascending=False).astype(int)
    size = d.groupby(["qid", "score"])["score"].transform("size").astype(int)
    d["sel"] = [sum(p <= k for p in range(f, f + m)) / m for f, m in zip(first, size)]
    d["v"] = [np.mean([1.0 / np.log(1.0 + p) for p in range(f, f + m)]) for f, m in zip(first, size)]
    frames = []
    keys = [(a, [a]) for a in attributes]
    if len(attributes) > 1:
        keys.append((":".join(attributes), attributes))
    for name, cols in keys:
        d["cat"] = d[cols].astype(str).agg("|".join, axis=1)
        g = d.groupby("cat")
        t = pd.DataFrame({"n_candidates": g.size(), "n_queries": g["qid"].nunique(), "selected_at_k": g["sel"].sum(),
                          "selection_rate_at_k": g["sel"].mean(), "exposure": g["v"].mean(), "merit": g["rel"].mean()})
        t["exposure_per_merit"] = t["exposure"] / t["merit"]
        t["excluded"] = t["n_candidates"] / len(d) < share
        kept = t[~t["excluded"]]
        t["impact_ratio_at_k"] = t["selection_rate_at_k"] / kept["selection_rate_at_k"].max()
        t["exposure_ratio"] = t["exposure"] / kept["exposure"].max()
        t["dt_ratio"] = t["exposure_per_merit"] / kept["exposure_per_merit"].max()
        t.insert(0, "attribute", name)
        frames.append(t.reset_index().rename(columns={"cat": "category"}))
    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("seed, attributes, k, ties", [
    (0, ["race"], 5, False), (1, ["race", "sex"], 3, False), (2, ["sex", "race", "region"], 10, True),
    (3, ["region"], 1, True),
])
def test_table_and_worst_cases_equal_a_pandas_groupby(seed, attributes, k, ties):
    df = random_table(seed, ties=ties)
    c = RankingColumns(query="qid", group=tuple(attributes), judgment="rel")
    res = audit_ranking(df, "score", columns=c, config=AuditConfig(k=k, min_category_share=0.1, **NO_CI))
    want = brute_force(df, attributes, k, 0.1)
    assert list(res.table.columns) == list(TABLE_COLUMNS)
    got = res.table.set_index(["attribute", "category"]).sort_index()
    want = want.set_index(["attribute", "category"]).sort_index()
    assert list(got.index) == list(want.index)
    for col in ("n_candidates", "n_queries"):
        np.testing.assert_array_equal(got[col].to_numpy(), want[col].to_numpy().astype(int), err_msg=col)
    for col in ("selected_at_k", "selection_rate_at_k", "impact_ratio_at_k", "exposure", "exposure_ratio", "merit",
                "exposure_per_merit"):
        np.testing.assert_allclose(got[col].to_numpy(), want[col].to_numpy(), rtol=1e-12, err_msg=col)
    np.testing.assert_array_equal(got["excluded"].to_numpy(), want["excluded"].to_numpy())
    kept = want[~want["excluded"]]
    per_attr = kept.groupby(level="attribute")
    for name in want.index.get_level_values("attribute").unique():
        if name not in set(kept.index.get_level_values("attribute")):  # every category excluded: undefined
            assert math.isnan(res.metrics[f"impact_ratio_at_{k}.{name}"])
            continue
        assert res.metrics[f"impact_ratio_at_{k}.{name}"] == pytest.approx(per_attr["impact_ratio_at_k"].min()[name],
                                                                           rel=1e-12)
        assert res.metrics[f"exposure_ratio_worst.{name}"] == pytest.approx(per_attr["exposure_ratio"].min()[name],
                                                                            rel=1e-12)
        assert res.metrics[f"disparate_treatment_ratio.{name}"] == pytest.approx(per_attr["dt_ratio"].min()[name],
                                                                                 rel=1e-12)
    assert res.metrics[f"impact_ratio_at_{k}"] == pytest.approx(kept["impact_ratio_at_k"].min(), rel=1e-12)
    assert res.metrics["exposure_ratio_worst"] == pytest.approx(kept["exposure_ratio"].min(), rel=1e-12)
    assert res.metrics["disparate_treatment_ratio"] == pytest.approx(kept["dt_ratio"].min(), rel=1e-12)
    if len(attributes) > 1:  # the intersection is named in the order given
        assert ":".join(attributes) in set(res.table["attribute"])
    assert res.interval is None


def test_impact_ratios_equal_fairlearn_metricframe():
    fl = pytest.importorskip("fairlearn.metrics", reason="fairlearn is in the test extra")
    df = random_table(5, n_queries=60)
    k = 4
    c = RankingColumns(query="qid", group=("race", "sex"), judgment="rel")
    res = audit_ranking(df, "score", columns=c, config=AuditConfig(k=k, min_category_share=0.0, **NO_CI))
    rank = df.groupby("qid")["score"].rank(method="first", ascending=False)
    top_k = (rank <= k).astype(int).to_numpy()
    for name, features in (("race", df["race"]), ("sex", df["sex"]), ("race:sex", df[["race", "sex"]])):
        frame = fl.MetricFrame(metrics=fl.selection_rate, y_true=top_k, y_pred=top_k, sensitive_features=features)
        by_group = frame.by_group
        to_max = by_group / by_group.max()  # ratio(method="to_max"): each group's rate over the largest
        assert frame.ratio(method="between_groups") == pytest.approx(res.metrics[f"impact_ratio_at_{k}.{name}"],
                                                                     rel=1e-12)
        rows = res.table[res.table["attribute"] == name].set_index("category")
        for group, value in to_max.items():
            label = "|".join(str(g) for g in group) if isinstance(group, tuple) else str(group)
            assert rows.loc[label, "impact_ratio_at_k"] == pytest.approx(value, rel=1e-12)
            assert rows.loc[label, "selection_rate_at_k"] == pytest.approx(by_group[group], rel=1e-12)


def _ndkl_by_enumeration(categories: list[str], k: int) -> float:
    """Geyik et al.'s NDKL of one ranked list (categories in rank order), by plain loops."""
    pool = {c: categories.count(c) / len(categories) for c in set(categories)}
    total = z = 0.0
    for i in range(1, min(k, len(categories)) + 1):
        prefix = categories[:i]
        kl = sum((prefix.count(c) / i) * math.log((prefix.count(c) / i) / pool[c]) for c in set(prefix))
        total += kl / math.log2(i + 1)
        z += 1 / math.log2(i + 1)
    return total / z


def test_ndkl_equals_enumeration_on_tiny_lists():
    lists = [["a", "a", "b"], ["b", "a"], ["a"], ["a", "b", "c", "a", "c", "b"], ["c", "c", "c", "a"],
             ["a", "b", "a", "b", "a", "b", "a", "b"]]
    rows = []
    for q, cats in enumerate(lists):
        for pos, cat in enumerate(cats):
            rows.append({"query_id": q, "g": cat, "judgment": 1.0, "score": -pos})  # ranked in list order
    df = pd.DataFrame(rows)
    for k in (1, 2, 3, 5):
        res = audit_ranking(df, "score", columns=RankingColumns(group="g"), config=AuditConfig(k=k, **NO_CI))
        want = np.mean([_ndkl_by_enumeration(cats, k) for cats in lists])
        assert res.metrics[f"ndkl_at_{k}"] == pytest.approx(want, rel=1e-12, abs=1e-15)
    mirror = pd.DataFrame({"query_id": [0] * 4, "g": ["a", "b", "a", "b"], "judgment": 1.0, "score": [4, 3, 2, 1]})
    res = audit_ranking(mirror, "score", columns=RankingColumns(group="g"), config=AuditConfig(k=1, **NO_CI))
    assert res.metrics["ndkl_at_1"] == pytest.approx(math.log(2))  # top 1 all "a" against a 50/50 pool


def test_one_binary_column_keeps_todays_numbers_and_its_impact_ratio_is_two_sided():
    df = random_table(7).rename(columns={"qid": "query_id", "sex": "protected", "rel": "judgment"})
    base = evaluate_ranking(df, "score")
    audited = evaluate_ranking(df, "score", audit=AuditConfig(k=10, **NO_CI))
    assert {key: audited[key] for key in base} == pytest.approx(base, nan_ok=True)
    rank = df.groupby("query_id")["score"].rank(method="first", ascending=False)
    rates = (rank <= 10).groupby(df["protected"]).mean()
    r = rates[1] / rates[0]
    assert audited["impact_ratio_at_10"] == pytest.approx(min(r, 1 / r), rel=1e-12)
    assert audited["impact_ratio_at_10.protected"] == audited["impact_ratio_at_10"]


def test_small_categories_are_reported_excluded_and_left_out_of_worst_cases():
    rng = np.random.default_rng(3)
    n = 1000
    group = np.where(np.arange(n) < 10, "tiny", rng.choice(["x", "y"], n))
    df = pd.DataFrame({"query_id": np.arange(n) // 20, "g": group, "judgment": 1.0,
                       "score": np.where(group == "tiny", -10.0, rng.normal(size=n))})  # tiny: never selected
    c = RankingColumns(group="g")
    res = audit_ranking(df, "score", columns=c, config=AuditConfig(k=5, **NO_CI))
    rows = res.table.set_index("category")
    assert bool(rows.loc["tiny", "excluded"]) and rows.loc["tiny", "n_candidates"] == 10
    assert rows.loc["tiny", "impact_ratio_at_k"] == 0.0  # reported, not merged into another category
    assert res.metrics["impact_ratio_at_5"] == pytest.approx(rows.loc[["x", "y"], "impact_ratio_at_k"].min())
    kept = audit_ranking(df, "score", columns=c, config=AuditConfig(k=5, min_category_share=0.0, **NO_CI))
    assert kept.metrics["impact_ratio_at_5"] == 0.0


def test_evaluate_ranking_audit_returns_the_table_and_the_same_keys(tmp_path):
    df = random_table(9)
    c = RankingColumns(query="qid", group=("race", "sex"), judgment="rel")
    metrics, result = evaluate_ranking_audit(df, "score", columns=c, k=(5,), audit=AuditConfig(k=5, **NO_CI))
    assert set(result.metrics) <= set(metrics) and "ndcg_at_5" in metrics
    assert metrics == evaluate_ranking(df, "score", columns=c, k=(5,), audit=AuditConfig(k=5, **NO_CI))
    assert "ci_level" not in metrics and result.interval is None
    from fairltr.metrics import evaluate_with_table

    with_table, per_query = evaluate_with_table(df, "score", columns=c, k=(5,), audit=AuditConfig(k=5, **NO_CI))
    assert with_table == metrics and len(per_query) == df["qid"].nunique()


def test_string_and_integer_categories_read_from_a_file(tmp_path):
    path = tmp_path / "t.csv"
    random_table(11).to_csv(path, index=False)
    c = RankingColumns(query="qid", group=("race", "region"), judgment="rel")
    df = read_table(path, columns=c)
    res = audit_ranking(df, "score", columns=c, config=AuditConfig(k=3, **NO_CI))
    assert set(res.table[res.table.attribute == "region"]["category"]) == {"1", "2", "3"}
    assert set(res.table[res.table.attribute == "race"]["category"]) == {"White", "Black", "Hispanic", "Asian"}


def test_bad_input_is_a_one_line_error_naming_the_place(tmp_path):
    df = random_table(12)
    df.loc[5, "race"] = None
    path = tmp_path / "bad.csv"
    df.to_csv(path, index=False)
    c = RankingColumns(query="qid", group=("sex", "race"), judgment="rel")
    with pytest.raises(DataError, match=r"bad.csv:7: missing group category in column 'race' \(query \d+\)") as e:
        read_table(path, columns=c)
    assert "\n" not in str(e.value)
    good = random_table(12)
    with pytest.raises(DataError, match="missing column"):
        audit_ranking(good, "score", columns=c.replace(group=("sex", "nope")))
    neg = audit_ranking(good.assign(rel=good["rel"] - 1), "score", columns=c, config=AuditConfig(**NO_CI))
    pos = audit_ranking(good, "score", columns=c, config=AuditConfig(**NO_CI))
    assert neg.table["merit"].isna().all() and neg.table["exposure_per_merit"].isna().all()
    assert math.isnan(neg.metrics["disparate_treatment_ratio"])  # merit (a mean judgment) needs judgments >= 0
    assert neg.metrics["impact_ratio_at_10"] == pos.metrics["impact_ratio_at_10"]  # the rest is computed
    with pytest.raises(DataError, match="scores must be finite"):
        audit_ranking(good, np.full(len(good), np.nan), columns=c)
    for bad in (dict(k=0), dict(ci=1.0), dict(ci=-0.1), dict(min_category_share=1.0), dict(unit="rows"),
                dict(method="basic"), dict(n_boot=5), dict(unit="candidates", method="BCa")):
        with pytest.raises(ConfigError):
            AuditConfig(**bad)
