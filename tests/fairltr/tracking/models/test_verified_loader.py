"""fairltr's load-time loader (MLmodel ``loader_module``) in process: the digest checked against
the tracking store before the weights are read, recorded settings that no load-time override may
change, no silent load without a store or a digest, and models of the earlier form still loading."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from fairltr import DELTR
from fairltr.tracking.models.digests import ModelRejected


@pytest.fixture(scope="module")
def logged(mlflow_tracking_module, tmp_path_factory):
    """A registered FA*IR-policy ranker and a local download of it: (name, folder, test table)."""
    import mlflow

    from fairltr.synthetic import make_biased_rankings
    from fairltr.tracking import log_ranker_model

    train, test = make_biased_rankings(12, 8, 0.35, seed=2)
    model = DELTR(gamma=0.0, max_iter=10).fit(train)
    name = f"loader-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-verified-loader")
    with mlflow.start_run():
        log_ranker_model(model, input_example=test.head(4), register=name, serve_rerank="fair:p=0.5,alpha=0.1")
    dst = tmp_path_factory.mktemp("loader") / "model"
    dst.mkdir()
    folder = Path(mlflow.artifacts.download_artifacts(f"models:/{name}/1", dst_path=str(dst)))
    return name, folder, test


def test_recorded_settings_cannot_be_overridden_where_the_model_loads(logged, monkeypatch):
    import mlflow

    name, folder, test = logged
    with pytest.raises(ModelRejected, match=r"model config \['serve_rerank'\] cannot be overridden"):
        mlflow.pyfunc.load_model(f"models:/{name}/1", model_config={"serve_rerank": "none"})
    monkeypatch.setenv("MLFLOW_PYFUNC_INFERENCE_CONFIG", json.dumps({"serve_overrides": "all", "decision_log": "/x"}))
    with pytest.raises(ModelRejected, match=r"\['decision_log', 'serve_overrides'\]"):
        mlflow.pyfunc.load_model(str(folder))
    monkeypatch.delenv("MLFLOW_PYFUNC_INFERENCE_CONFIG")
    out = mlflow.pyfunc.load_model(str(folder)).predict(test)  # the same values: no override, loads
    assert set(out["policy"]) == {"fair:p=0.5,alpha=0.1,adjust=true"} and set(out["model_version"]) == {"1"}


def test_a_changed_file_is_refused_before_the_weights_are_read(logged, tmp_path):
    import shutil

    import mlflow

    name, folder, _ = logged
    copy = tmp_path / "copy"
    shutil.copytree(folder, copy)
    weights = copy / "artifacts" / "deltr.safetensors"
    weights.write_bytes(weights.read_bytes()[:-40])  # would not even load
    with pytest.raises(ModelRejected, match=f"{name} v1 does not match its recorded digest"):
        mlflow.pyfunc.load_model(str(copy))
    (copy / "code" / "fairltr" / "extra.py").write_text("x = 1\n")  # an added file counts too
    shutil.copyfile(folder / "artifacts" / "deltr.safetensors", weights)
    with pytest.raises(ModelRejected, match="does not match its recorded digest"):
        mlflow.pyfunc.load_model(str(copy))


def _load_in_subprocess(folder: Path, env: dict) -> subprocess.CompletedProcess:
    script = "import mlflow.pyfunc, sys; mlflow.pyfunc.load_model(sys.argv[1]); print('LOADED')"
    return subprocess.run([sys.executable, "-c", script, str(folder)], env=env, capture_output=True, text=True,
                          timeout=180)


def test_no_store_or_no_digest_refuses_unless_allowed(logged, mlflow_server):
    import mlflow

    name, folder, _ = logged
    base = {k: v for k, v in os.environ.items() if k not in ("MLFLOW_TRACKING_URI", "FAIRLTR_ALLOW_UNVERIFIED")}
    refused = _load_in_subprocess(folder, base)
    assert refused.returncode != 0 and "no tracking store is configured" in refused.stderr, refused.stderr[-1500:]
    allowed = _load_in_subprocess(folder, {**base, "FAIRLTR_ALLOW_UNVERIFIED": "true"})
    assert "LOADED" in allowed.stdout, allowed.stderr[-1500:]
    assert "loaded unverified (FAIRLTR_ALLOW_UNVERIFIED)" in allowed.stderr
    # a version whose digest tags were removed from the tracking store
    client = mlflow.MlflowClient()
    mv = client.get_model_version(name, "1")
    digest = mv.tags["fairltr.digest"]
    client.delete_model_version_tag(name, "1", "fairltr.digest")
    client.delete_logged_model_tag(mv.source.split("/")[-1], "fairltr.digest")
    try:
        stripped = _load_in_subprocess(folder, {**base, "MLFLOW_TRACKING_URI": mlflow_server.uri})
        assert stripped.returncode != 0 and "has no recorded digest" in stripped.stderr, stripped.stderr[-1500:]
    finally:
        client.set_model_version_tag(name, "1", "fairltr.digest", digest)
        client.set_logged_model_tags(mv.source.split("/")[-1], {"fairltr.digest": digest})


def test_a_model_of_the_earlier_form_loads_and_says_it_was_not_verified(mlflow_tracking_module, log_models_from_code,
                                                                       capfd):
    import mlflow

    from fairltr.synthetic import make_biased_rankings

    train, test = make_biased_rankings(8, 6, 0.35, seed=4)
    model = DELTR(gamma=0.0, max_iter=5).fit(train)
    with mlflow.start_run():
        info = log_models_from_code(model, test.head(4), serve_rerank="fair:p=0.5,alpha=0.1")
    capfd.readouterr()
    loaded = mlflow.pyfunc.load_model(info.model_uri)
    assert "logged before load-time verification" in capfd.readouterr().err
    out = loaded.predict(test)
    assert list(out.columns) == ["query_id", "score", "rank", "fair_feasible"]  # as it served before: no provenance
    # its recorded policy holds too (no serve_overrides recorded: the default, none)
    with pytest.raises(Exception, match="allowed overrides: none"):
        loaded.predict(test, params={"rerank": "none"})
