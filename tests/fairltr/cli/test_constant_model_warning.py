"""Issue 29 item 7: a model whose test scores are all equal gets a warning from ``evaluate`` (and
``evaluate-model``, through the same helper); a model with distinct scores gets none."""

from __future__ import annotations

import numpy as np
import pandas as pd
from click.testing import CliRunner

from fairltr.cli import cli
from fairltr.deltr import DELTR
from fairltr.gates import constant_model_warning


def _files(tmp_path):
    rng = np.random.default_rng(0)
    n = 120
    df = pd.DataFrame({"query_id": np.repeat(np.arange(6), 20), "candidate_id": np.arange(n),
                       "protected": rng.integers(0, 2, n), "x1": rng.normal(size=n), "judgment": rng.integers(0, 3, n)})
    df = df.sort_values(["query_id", "judgment"], ascending=[True, False])  # sorted by judgment, as many files are
    df.to_csv(tmp_path / "d.csv", index=False)
    model = DELTR(gamma=0.0, max_iter=3).fit(df, features=["x1"], item="candidate_id")
    model.save(tmp_path / "fitted.json")
    model.weights_ = np.zeros_like(model.weights_)
    model.save(tmp_path / "constant.json")
    return tmp_path / "d.csv"


def _evaluate(model, data):
    res = CliRunner().invoke(cli, ["evaluate", "--model", str(model), "--data", str(data), "--item", "candidate_id"])
    assert res.exit_code == 0 and "Traceback" not in res.output, res.output
    return res.output


def test_a_constant_model_is_warned_about_and_a_fitted_one_is_not(tmp_path):
    data = _files(tmp_path)
    warned = [ln for ln in _evaluate(tmp_path / "constant.json", data).splitlines() if ln.startswith("Warning:")]
    assert len(warned) == 1 and "constant model" in warned[0], warned
    assert "Warning:" not in _evaluate(tmp_path / "fitted.json", data)


def test_the_warning_needs_every_query_tied():
    assert constant_model_warning({"tied_score_share": 1.0}) is not None
    assert constant_model_warning({"tied_score_share": 0.5}) is None
    assert constant_model_warning({"tied_score_share": float("nan")}) is None
    assert constant_model_warning({}) is None
