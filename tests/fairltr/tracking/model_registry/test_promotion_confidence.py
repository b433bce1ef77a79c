"""``promote --confidence``: every gate on the conservative end of its bootstrap interval, on a
real MLflow server with real registered models (docs/spec.md section 3b).

The table is built so the two candidates differ only in how far their verdict can be trusted:
32 queries x 21 candidates, race a / b / c with 7 each. ``x2`` puts exactly 2 of each race in
every query's top 6 (impact ratio 1 in every query: interval [1, 1]); ``x1`` puts 3/2/1 of a/b/c
in 13 queries, 1/2/3 in 8 and 2/2/2 in 11, so the pooled impact ratio at 6 is 59/69 = 0.855
(passes four-fifths) while the queries disagree enough that its 95% interval reaches below 0.8.
"""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.tracking.model_registry import decision_record

PATTERNS = [(3, 2, 1)] * 13 + [(1, 2, 3)] * 8 + [(2, 2, 2)] * 11  # top-6 counts of a, b, c under x1


def borderline_table(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    races = np.array(["a"] * 7 + ["b"] * 7 + ["c"] * 7)
    for q, counts in enumerate(PATTERNS):
        x1, x2 = rng.uniform(0, 1, 21), rng.uniform(0, 1, 21)
        for g, n in zip("abc", counts):
            idx = np.flatnonzero(races == g)
            x1[rng.permutation(idx)[:n]] += 2.0  # these n are in the top 6 under x1
            x2[rng.permutation(idx)[:2]] += 2.0  # 2 of each race in the top 6 under x2
        for i in range(21):
            rows.append({"query_id": q, "race": races[i], "protected": int(races[i] != "a"), "x1": x1[i],
                         "x2": x2[i], "judgment": int(x1[i] > 2) + int(x2[i] > 2)})
    return pd.DataFrame(rows)


def test_the_table_is_what_the_docstring_says():
    """Independent check of the premise with a pandas groupby (no fairltr code)."""
    df = borderline_table()
    for feature, expected in (("x1", 59 / 69), ("x2", 1.0)):
        rank = df.groupby("query_id")[feature].rank(ascending=False, method="first")
        rates = (rank <= 6).groupby(df["race"]).mean()
        assert rates.min() / rates.max() == pytest.approx(expected)


@pytest.fixture(scope="module")
def candidates(mlflow_server, tmp_path_factory):
    """v1 ranks by x1 (borderline), v2 by x2 (clear), both real DELTR models logged and registered."""
    import mlflow

    from fairltr import DELTR
    from fairltr.columns import RankingColumns
    from fairltr.tracking import log_deltr_run

    df = borderline_table()
    path = tmp_path_factory.mktemp("confidence") / "borderline.csv"
    df.to_csv(path, index=False)
    name = f"confident-{uuid.uuid4().hex[:8]}"
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", mlflow_server.uri)
        mlflow.set_tracking_uri(mlflow_server.uri)
        for feature in ("x1", "x2"):
            model = DELTR(gamma=0.0, max_iter=60, columns=RankingColumns(group="protected")).fit(df, features=[feature])
            assert model.predict(df).shape == (len(df),)
            run_id = log_deltr_run(model, train_df=df, test_df=df, experiment="test-promotion-confidence")
            mlflow.register_model(mlflow.MlflowClient().get_run(run_id).data.tags["fairltr.model_uri"], name)
    return name, path


def _promote(*args):
    intervals = ["--n-boot", "500"] if "--confidence" in args else []  # no interval is drawn without --confidence
    return CliRunner().invoke(cli, ["promote", *args, *intervals])


def _alias(name, alias="champion"):
    import mlflow

    from fairltr.tracking.model_registry import current_champion

    return current_champion(mlflow.MlflowClient(), name, alias)


def _record(name, version):
    import mlflow

    return decision_record(mlflow.MlflowClient().get_model_version(name, version).tags)


def test_confidence_rejects_a_point_pass_whose_interval_does_not_and_accepts_a_clear_pass(mlflow_tracking, candidates):
    name, data = candidates
    common = ["--model", name, "--data", str(data), "--group", "race", "--gate", "four_fifths@6"]
    # without --confidence the borderline version passes on its point estimate (today's behaviour)
    pointwise = _promote(*common, "--version", "1", "--alias", "pointwise")
    assert pointwise.exit_code == 0, pointwise.output
    value = _record(name, "1")["values"]["impact_ratio_at_6"]
    assert value == pytest.approx(59 / 69)

    rejected = _promote(*common, "--version", "1", "--confidence", "0.95")
    assert rejected.exit_code == 1, rejected.output
    assert "REJECTED" in rejected.output and "FAIL four_fifths@6 [impact_ratio_at_6>=0.8]" in rejected.output
    assert _alias(name) is None
    rec = _record(name, "1")
    (gate,) = rec["results"]
    low, high = gate["interval"]
    assert gate["value"] == pytest.approx(59 / 69) and gate["value"] >= 0.8 > low and high >= gate["value"]
    assert gate["confidence"] == rec["confidence"] == 0.95 and gate["compared"].startswith("low ")
    assert rec["interval"]["level"] == 0.95 and rec["interval"]["n_boot"] == 500 and rec["interval"]["unit"] == "queries"
    cats = {c["category"]: c for c in gate["categories"]}
    assert set(cats) == {"a", "b", "c"} and cats["c"]["impact_ratio"] == pytest.approx(59 / 69)
    assert all("ci_low" in c and "ci_high" in c for c in cats.values())
    import mlflow

    description = mlflow.MlflowClient().get_model_version(name, "1").description
    assert "REJECTED for @champion" in description and "95% interval" in description

    accepted = _promote(*common, "--version", "2", "--confidence", "0.95")
    assert accepted.exit_code == 0, accepted.output
    assert _alias(name) == "2"
    (gate,) = _record(name, "2")["results"]
    assert gate["passed"] and gate["value"] == pytest.approx(1.0) and gate["interval"] == pytest.approx([1.0, 1.0])


@pytest.mark.slow  # about 15 s: two evaluations with paired bootstrap intervals on a live server
def test_champion_relative_gates_use_the_paired_interval(mlflow_tracking, candidates):
    """Against champion v2 (ratio 1 on every resample), v1's difference is -0.145: inside
    champion-0.3 on the point estimate, but its paired 95% interval reaches below -0.3."""
    name, data = candidates
    common = ["--model", name, "--data", str(data), "--group", "race"]
    if _alias(name) != "2":
        assert _promote(*common, "--version", "2", "--gate", "four_fifths@6").exit_code == 0
    gate = "impact_ratio_at_6>=champion-0.3"
    rejected = _promote(*common, "--version", "1", "--gate", gate, "--confidence", "0.95")
    assert rejected.exit_code == 1, rejected.output
    (result,) = _record(name, "1")["results"]
    d_low, d_high = result["difference_interval"]
    assert result["difference"] == pytest.approx(59 / 69 - 1.0)
    assert d_low < -0.3 <= result["difference"] <= d_high
    assert "(paired)" in rejected.output and "difference low" in result["compared"]
    assert _alias(name) == "2"
    # the same gate on the point estimates passes (and moves the alias): only the interval said no
    pointwise = _promote(*common, "--version", "1", "--gate", gate)
    assert pointwise.exit_code == 0, pointwise.output
    assert _alias(name) == "1"
