"""Every ranker family evaluates and serves the very file it was trained on (issue 29): DELTR,
PLRank and LambdaMART trained on a CSV with integer features and text categories, then
``evaluate-model`` on that CSV and on the same table as Parquet, and ``mlflow models serve``
answering it with the model's own scores."""

from __future__ import annotations

import json
import urllib.request
import uuid

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from fairltr.cli import cli

FAMILIES = {
    "deltr": ["train", "deltr", "--gamma", "0", "--max-iter", "20"],
    "plrank": ["train", "plrank", "--lambda", "0", "--max-iter", "20", "--samples", "8"],
    "lambdamart": ["train", "lambdamart", "--n-estimators", "10"],
}


def _table(seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 24 * 10
    df = pd.DataFrame({"query_id": np.repeat(np.arange(1, 25), 10), "candidate_id": np.arange(n),
                       "race": rng.choice(["White", "Black", "Asian American"], n), "x1": rng.integers(0, 30, n),
                       "x2": rng.integers(0, 5, n)})
    df["judgment"] = np.clip((df["x1"] // 10) + rng.integers(0, 2, n), 0, 3)
    return df


@pytest.fixture(scope="module")
def registered(mlflow_tracking_module, tmp_path_factory):
    pytest.importorskip("lightgbm", reason="LambdaMART is the [gbdt] extra")
    d = tmp_path_factory.mktemp("families")
    train = _table(1)
    train.to_csv(d / "train.csv", index=False)
    train.to_parquet(d / "train.parquet", index=False)
    tag = uuid.uuid4().hex[:6]
    out = {}
    for family, args in FAMILIES.items():
        name = f"family-{family}-{tag}"
        res = CliRunner().invoke(cli, [*args, "--train", str(d / "train.csv"), "--group", "race", "--colorblind",
                                       "--item", "candidate_id", "--out", str(d / family), "--register", name])
        assert res.exit_code == 0, f"{family}: {res.output}"
        out[family] = name
    return d, out


@pytest.mark.slow  # three trainings, six evaluations, three `mlflow models serve` servers (about 90 s)
@pytest.mark.parametrize("family", list(FAMILIES))
def test_each_family_evaluates_and_serves_its_training_file(registered, family):
    import mlflow

    from fairltr.tracking.models.serving import served_model

    d, names = registered
    uri = f"models:/{names[family]}/1"
    for data in ("train.csv", "train.parquet"):
        res = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", uri, "--data", str(d / data), "--group",
                                       "race", "--item", "candidate_id"])
        assert res.exit_code == 0 and "Traceback" not in res.output, f"{family} {data}: {res.output}"
        assert "impact_ratio_at_10" in res.output
    train = pd.read_csv(d / "train.csv")
    own = mlflow.pyfunc.load_model(uri).predict(train)["score"].to_numpy()
    cols = ["query_id", "candidate_id", "x1", "x2"]
    with served_model(uri) as url:
        body = json.dumps({"dataframe_split": {"columns": cols, "data": train[cols].values.tolist()}}).encode()
        req = urllib.request.Request(f"{url}/invocations", data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            served = np.array([p["score"] for p in json.loads(resp.read())["predictions"]])
    np.testing.assert_allclose(served, own, rtol=1e-12)
