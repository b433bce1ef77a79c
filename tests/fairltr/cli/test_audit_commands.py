"""The audit at the command line (docs/spec.md section 3b): the issue's command
``fairltr evaluate --model M --data D --group race --group sex --k 10 --ci 0.95 --audit A.csv --out m.json``
on a multi-category table, and ``train deltr --ci`` (intervals on the test metrics)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli


def _table(n_queries: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for q in range(n_queries):
        race = rng.choice(["White", "Black", "Hispanic", "Asian", "Other"], size=20, p=[0.45, 0.3, 0.15, 0.09, 0.01])
        sex = rng.choice(["Male", "Female"], size=20)
        x1 = rng.normal(size=20) - 0.5 * (race == "Black")
        judgment = np.clip(np.round(1.5 + x1 + rng.normal(scale=0.5, size=20)), 0, 3).astype(int)
        rows += [{"query_id": q, "race": race[i], "sex": sex[i], "x1": x1[i], "judgment": judgment[i]} for i in range(20)]
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    d = tmp_path_factory.mktemp("audit-cli")
    _table(30, 1).to_csv(d / "train.csv", index=False)
    _table(32, 2).to_csv(d / "test.csv", index=False)
    res = CliRunner().invoke(cli, ["train", "deltr", "--train", str(d / "train.csv"), "--test", str(d / "test.csv"),
                                   "--group", "race", "--group", "sex", "--colorblind", "--gamma", "0",
                                   "--max-iter", "30", "--ci", "0.9", "--n-boot", "200", "--out", str(d / "m"),
                                   "--no-track"])
    assert res.exit_code == 0, res.output
    return d, res.output


def test_train_reports_test_metrics_with_intervals(trained):
    d, output = trained
    metrics = json.loads((d / "m" / "metrics.json").read_text())
    for key in ("impact_ratio_at_10", "impact_ratio_at_10.race:sex", "exposure_ratio_worst", "ndcg_at_10"):
        assert key in metrics and f"{key}_ci_low" in metrics and f"{key}_ci_high" in metrics, key
    assert metrics["ci_level"] == 0.9 and metrics["ci_n_boot"] == 200 and metrics["ci_unit"] == "queries"
    lines = output.splitlines()
    assert max(len(x) for x in lines) <= 120 and lines[0].split()[:2] == ["model", "impact_ratio_at_10"]
    low, high = metrics["impact_ratio_at_10_ci_low"], metrics["impact_ratio_at_10_ci_high"]
    assert f"{metrics['impact_ratio_at_10']:.4f} [{low:.4f}, {high:.4f}]" in lines[2]


def test_the_issues_evaluate_command(trained):
    d, _ = trained
    res = CliRunner().invoke(cli, ["evaluate", "--model", str(d / "m" / "model.json"), "--data", str(d / "test.csv"),
                                   "--group", "race", "--group", "sex", "--k", "10", "--ci", "0.95",
                                   "--n-boot", "300", "--audit", str(d / "A.csv"), "--out", str(d / "m.json")])
    assert res.exit_code == 0, res.output
    assert "intervals: 95% percentile bootstrap, 300 resamples of queries, seed 0" in res.output
    table = pd.read_csv(d / "A.csv", keep_default_na=False, na_values=[""])
    assert list(table.columns[:12]) == ["attribute", "category", "n_candidates", "n_queries", "selected_at_k",
                                        "selection_rate_at_k", "impact_ratio_at_k", "exposure", "exposure_ratio",
                                        "merit", "exposure_per_merit", "excluded"]
    assert {"impact_ratio_at_k_ci_low", "impact_ratio_at_k_ci_high", "selection_rate_at_k_ci_low"} <= set(table.columns)
    assert set(table["attribute"]) == {"race", "sex", "race:sex"}
    assert "Black|Female" in set(table["category"])
    assert table.loc[(table["attribute"] == "race") & (table["category"] == "Other"), "excluded"].item()
    m = json.loads((d / "m.json").read_text())
    # independent: the worst pooled selection-rate ratio over sex's two categories, by a pandas groupby
    from fairltr import DELTR

    test = pd.read_csv(d / "test.csv")
    scored = test.assign(score=DELTR.load(d / "m" / "model.json").predict(test))
    top = scored.groupby("query_id")["score"].rank(ascending=False, method="first") <= 10
    rates = top.groupby(scored["sex"]).mean()
    assert m["impact_ratio_at_10.sex"] == pytest.approx(rates.min() / rates.max(), abs=1e-9)
    sex = table[table["attribute"] == "sex"].set_index("category")
    assert sex.loc["Female", "selection_rate_at_k"] == pytest.approx(rates["Female"], abs=1e-12)
    assert m["impact_ratio_at_10_ci_low"] <= m["impact_ratio_at_10_ci_high"]
    assert m["ci_level"] == 0.95 and m["ci_n_boot"] == 300 and math.isfinite(m["exposure_ratio_worst"])


def test_audit_errors_are_one_line(trained):
    d, _ = trained
    model, data = str(d / "m" / "model.json"), str(d / "test.csv")
    for extra, msg in ((["--ci", "1.5"], "--ci must be a confidence level"),
                       (["--min-category-share", "2"], "--min-category-share must be in [0, 1)"),
                       (["--group", "race", "--group", "race"], "'race' given twice")):
        res = CliRunner().invoke(cli, ["evaluate", "--model", model, "--data", data, *extra])
        assert res.exit_code in (1, 2) and msg in res.output and "Traceback" not in res.output, res.output


def test_reference_group_reaches_deltr(trained, tmp_path):
    d, _ = trained
    res = CliRunner().invoke(cli, ["train", "deltr", "--train", str(d / "train.csv"), "--group", "race", "--group", "sex",
                                   "--colorblind", "--gamma", "100", "--max-iter", "10", "--reference-group", "White",
                                   "--out", str(tmp_path / "m"), "--no-track"])
    assert res.exit_code == 0, res.output
    from fairltr import DELTR

    assert DELTR.load(tmp_path / "m" / "model.json").reference_group == "White"
