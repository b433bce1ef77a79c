"""PLRank and LambdaMART evaluate and serve their own training file with float features and with
integer categories too (issue 29, item 2; DELTR's cells are in tests/test_cross_product.py, and
test_families_round_trip.py serves integer features with text categories, slow). Each registered
version: ``evaluate-model`` on its training file logs the four-fifths figure an independent pandas
computation gives from the model's own scores, and MLflow's scoring app (what ``mlflow models
serve`` runs, in process here; the real server in the slow set) answers the training rows with
those scores. By default each family is checked with float features and integer categories; the
other combinations, the other file format and the real server are slow."""

from __future__ import annotations

import json
import urllib.request
import uuid

import mlflow
import numpy as np
import pytest
from click.testing import CliRunner

from cross_tables import TOL, cross_table, independent_impact_ratios, ran_ok, same_figures
from fairltr.cli import cli

FAMILIES = {
    "plrank": ["train", "plrank", "--lambda", "0", "--max-iter", "5", "--samples", "4"],
    "lambdamart": ["train", "lambdamart", "--n-estimators", "5"],
}
# (family, group kind, feature type, the file evaluate-model reads): by default one cell per family
# with float features AND integer categories, one on CSV and one on Parquet; the rest is slow
DEFAULT = [("plrank", "multi_int", "float", "train.csv"), ("lambdamart", "multi_int", "float", "train.parquet")]
SLOW = [(f, kind, ftype, data) for f in FAMILIES for kind, ftype in (("multi_int", "int"), ("text", "float"))
        for data in ("train.csv", "train.parquet")]
SLOW += [(f, "multi_int", "float", "train.parquet" if f == "plrank" else "train.csv") for f in FAMILIES]
CELLS = [pytest.param(*c, id="-".join(c)) for c in DEFAULT] + [
    pytest.param(*c, id="-".join(c), marks=pytest.mark.slow) for c in SLOW]
MODELS = [pytest.param(*c[:3], id="-".join(c[:3])) for c in DEFAULT] + [  # the trained versions, once each
    pytest.param(*c[:3], id="-".join(c[:3]), marks=pytest.mark.slow)
    for c in dict.fromkeys(c[:3] for c in SLOW) if c not in {d[:3] for d in DEFAULT}]
GOPTS = ["--group", "race", "--item", "candidate_id"]
INPUTS = ["query_id", "candidate_id", "x1", "x2"]


@pytest.fixture(scope="module")
def registered(mlflow_tracking_module, tmp_path_factory):
    """``cell(family, kind, ftype)``: trains and registers that cell once (only the cells a run
    selects), then returns its folder, training table, version URI, loaded model and own scores."""
    if "lambdamart" in FAMILIES:
        pytest.importorskip("lightgbm", reason="LambdaMART is the [gbdt] extra")
    root = tmp_path_factory.mktemp("families-types")
    tag = uuid.uuid4().hex[:6]
    done: dict = {}

    def cell(family: str, kind: str, ftype: str) -> dict:
        key = (family, kind, ftype)
        if key not in done:
            d = root / "-".join(key)
            d.mkdir(exist_ok=True)  # a retry after a failed training
            train = cross_table(kind, ftype, 10, 70 + len(done), 1).drop(columns="when")
            assert train["race"].dtype.kind == ("i" if kind == "multi_int" else "O")
            assert train["x1"].dtype.kind == ("f" if ftype == "float" else "i")
            train.to_csv(d / "train.csv", index=False)
            train.to_parquet(d / "train.parquet", index=False)
            name = f"types-{'-'.join(key)}-{tag}"
            res = CliRunner().invoke(cli, [*FAMILIES[family], "--train", str(d / "train.csv"), *GOPTS, "--colorblind",
                                           "--features", "x1,x2", "--out", str(d / "out"), "--register", name])
            ran_ok(res, f"train {family} {kind}/{ftype}")
            model = mlflow.pyfunc.load_model(f"models:/{name}/1")
            done[key] = dict(dir=d, train=train, uri=f"models:/{name}/1", model=model,
                             scores=model.predict(train[INPUTS])["score"].to_numpy())
        return done[key]

    return cell


@pytest.mark.parametrize("family, kind, ftype, data", CELLS)
def test_evaluate_model_on_its_training_file(registered, family, kind, ftype, data):
    c = registered(family, kind, ftype)
    where = f"evaluate-model {family} {kind}/{ftype} {data}"
    res = CliRunner().invoke(cli, ["evaluate-model", "--model-uri", c["uri"], "--data", str(c["dir"] / data), *GOPTS])
    ran_ok(res, where)
    run_id = next(line.split()[-1] for line in res.output.splitlines() if line.startswith("MLflow run "))
    want = independent_impact_ratios(c["train"], c["scores"], ["race"])
    same_figures(mlflow.MlflowClient().get_run(run_id).data.metrics, want, where)


def _payload(c: dict) -> dict:
    return {"dataframe_split": {"columns": INPUTS, "data": c["train"][INPUTS].astype(object).values.tolist()}}


@pytest.mark.parametrize("family, kind, ftype", MODELS)
def test_scoring_app_answers_its_training_rows(registered, family, kind, ftype):
    from mlflow.pyfunc import scoring_server
    from starlette.testclient import TestClient

    c = registered(family, kind, ftype)
    resp = TestClient(scoring_server.init(c["model"])).post("/invocations", json=_payload(c))
    assert resp.status_code == 200, resp.text
    served = np.array([p["score"] for p in resp.json()["predictions"]])
    np.testing.assert_allclose(served, c["scores"], rtol=TOL, atol=TOL)


@pytest.mark.slow  # one `mlflow models serve` per cell
@pytest.mark.parametrize("family, kind, ftype", MODELS)
def test_mlflow_models_serve_answers_its_training_rows(registered, family, kind, ftype):
    from fairltr.tracking.models.serving import served_model

    c = registered(family, kind, ftype)
    with served_model(c["uri"]) as url:
        req = urllib.request.Request(f"{url}/invocations", data=json.dumps(_payload(c)).encode(),
                                     headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            served = np.array([p["score"] for p in json.loads(resp.read())["predictions"]])
    np.testing.assert_allclose(served, c["scores"], rtol=TOL, atol=TOL)
