"""``fairltr train lambdamart``: the same outputs as ``train deltr`` (model.json + LightGBM's
model.txt, predictions.csv, metrics.json), ``fairltr evaluate`` reads the model; logged and
registered on a real MLflow server as fairltr's ranker pyfunc with a verified digest: the pyfunc
round trip, verified loading, promotion, and a corrupt booster in the artifact store rejected."""

from __future__ import annotations

import json
import uuid

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

pytest.importorskip("lightgbm", reason="fairltr train lambdamart needs the [gbdt] extra (lightgbm)")

from fairltr.cli import cli  # noqa: E402
from fairltr.gbdt import LambdaMART  # noqa: E402
from fairltr.metrics import evaluate_ranking  # noqa: E402
from fairltr.synthetic import make_biased_rankings  # noqa: E402

TREES = ["--n-estimators", "15", "--min-data-in-leaf", "3"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("data")
    train, test = make_biased_rankings(n_queries=16, n_candidates=12, seed=2)
    train.to_csv(d / "train.csv", index=False)
    test.to_csv(d / "test.csv", index=False)
    return d


def run(*args):
    return CliRunner().invoke(cli, list(args), catch_exceptions=False)


def test_help():
    res = run("train", "--help")
    assert res.exit_code == 0 and "lambdamart" in res.output
    res = run("train", "lambdamart", "--help")
    assert res.exit_code == 0 and "--num-leaves" in res.output and "--register" in res.output


def test_train_writes_model_predictions_metrics_and_evaluate_reads_it(files, tmp_path):
    out = tmp_path / "out"
    res = run("train", "lambdamart", "--train", str(files / "train.csv"), "--test", str(files / "test.csv"),
              "--out", str(out), "--no-track", *TREES)
    assert res.exit_code == 0, res.output
    assert "exposure_ratio" in res.output and "15 trees" in res.output
    assert sorted(p.name for p in out.iterdir()) == ["metrics.json", "model.json", "model.txt", "predictions.csv"]
    model = LambdaMART.load(out / "model.json")
    test = pd.read_csv(files / "test.csv")
    metrics = json.loads((out / "metrics.json").read_text())
    want = evaluate_ranking(test, model.predict(test))
    for key in ("ndcg_at_10", "kendall_tau", "exposure_ratio"):
        assert metrics[key] == pytest.approx(want[key], abs=1e-12)
    evaluated = run("evaluate", "--model", str(out / "model.json"), "--data", str(files / "test.csv"),
                    "--out", str(tmp_path / "m.json"))
    assert evaluated.exit_code == 0, evaluated.output
    assert json.loads((tmp_path / "m.json").read_text())["ndcg_at_10"] == pytest.approx(metrics["ndcg_at_10"])
    # a DELTR run into the same folder leaves no stale LightGBM file behind
    res = run("train", "deltr", "--train", str(files / "train.csv"), "--gamma", "0", "--out", str(out), "--no-track")
    assert res.exit_code == 0 and not (out / "model.txt").exists()


def test_bad_options_are_one_line(files, tmp_path):
    res = CliRunner().invoke(cli, ["train", "lambdamart", "--train", str(files / "train.csv"), "--num-leaves", "1",
                                   "--out", str(tmp_path), "--no-track"])
    assert res.exit_code == 1 and "num_leaves must be >= 2" in res.output and "Traceback" not in res.output


@pytest.fixture
def model_name(mlflow_tracking) -> str:
    return f"lambdamart-{uuid.uuid4().hex[:8]}"


def _stored(server, name: str, version: str):
    import mlflow

    client = mlflow.MlflowClient()
    mv = client.get_model_version(name, version)
    location = client.get_logged_model(mv.source.split("/")[-1]).artifact_location
    folder = server.log_path.parent / "artifacts" / location[len("mlflow-artifacts:/"):]
    assert (folder / "MLmodel").is_file(), folder
    return folder


def test_registered_pyfunc_round_trip_verified_and_promoted(mlflow_server, model_name, files, tmp_path):
    import mlflow

    from fairltr.tracking.models.verify import open_verified

    out = tmp_path / "out"
    res = run("train", "lambdamart", "--train", str(files / "train.csv"), "--test", str(files / "test.csv"),
              "--out", str(out), "--register", model_name, "--experiment", "test-lambdamart", *TREES)
    assert res.exit_code == 0, res.output
    assert "registered as" in res.output
    client = mlflow.MlflowClient()
    mv = client.get_model_version(model_name, "1")
    assert mv.tags["fairltr.digest"].startswith("sha256:")
    run_data = client.get_run(mv.run_id).data
    assert run_data.tags["fairltr.model"] == "LambdaMART" and run_data.params["ranker"] == "lambdamart"
    assert "ndcg_at_10" in run_data.metrics and "train_ndcg_at_10" in run_data.metrics
    folder = _stored(mlflow_server, model_name, "1")
    assert {"lambdamart.json", "lambdamart.txt"} <= {p.name for p in (folder / "artifacts").iterdir()}

    test = pd.read_csv(files / "test.csv")
    local = LambdaMART.load(out / "model.json")
    want = local.predict(test)
    # MLflow's own loading of the pyfunc (models from code) and fairltr's verified in-process loading
    loaded = mlflow.pyfunc.load_model(f"models:/{model_name}/1").predict(test)
    np.testing.assert_allclose(loaded["score"].to_numpy(), want, rtol=0, atol=1e-12)
    vm, pyfunc = open_verified(f"models:/{model_name}/1", tmp_path / "verified")
    assert vm.verified and vm.kind == "ranker"
    np.testing.assert_allclose(pyfunc.predict(test)["score"].to_numpy(), want, rtol=0, atol=1e-12)

    promoted = CliRunner().invoke(cli, ["promote", "--model", model_name, "--version", "1",
                                        "--data", str(files / "test.csv"), "--gate", "ndcg_at_10>=0.1"])
    assert promoted.exit_code == 0, promoted.output


def test_corrupt_booster_in_the_store_is_rejected(mlflow_server, model_name, files, tmp_path):
    import mlflow

    res = run("train", "lambdamart", "--train", str(files / "train.csv"), "--test", str(files / "test.csv"),
              "--out", str(tmp_path / "out"), "--register", model_name, "--experiment", "test-lambdamart", *TREES)
    assert res.exit_code == 0, res.output
    booster = _stored(mlflow_server, model_name, "1") / "artifacts" / "lambdamart.txt"
    text = booster.read_text()
    booster.write_text(text[: len(text) // 2])
    result = CliRunner().invoke(cli, ["promote", "--model", model_name, "--version", "1", "--gate", "exposure_ratio>=0"])
    assert result.exit_code == 1, result.output
    assert "does not match its recorded digest" in result.output and "Traceback" not in result.output
    # without the digests (--allow-unverified) the loader's own SHA-256 check still rejects it
    client = mlflow.MlflowClient()
    mv = client.get_model_version(model_name, "1")
    client.delete_model_version_tag(model_name, "1", "fairltr.digest")
    client.delete_logged_model_tag(mv.source.split("/")[-1], "fairltr.digest")
    loose = CliRunner().invoke(cli, ["promote", "--model", model_name, "--version", "1", "--gate", "exposure_ratio>=0",
                                     "--allow-unverified"])
    assert loose.exit_code == 1 and "does not load" in loose.output and "SHA-256" in loose.output, loose.output
    assert "Traceback" not in loose.output
