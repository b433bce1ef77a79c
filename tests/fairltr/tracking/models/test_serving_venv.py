"""Verified at load under MLflow's default env manager (``virtualenv``: pyenv + venv + pip from the
model's requirements.txt, which installs the model's staged fairltr wheel): a registered version
serves, verified; a version whose weights and staged code were changed refuses with one line and
none of its code runs; ``served_model(env_manager="virtualenv")`` refuses it before MLflow builds
anything. The first run builds the environment (about 70 s here; MLflow caches it by requirement
lines, which name the wheel's content hash)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import uuid

import pandas as pd
import pytest

from fairltr import DELTR
from rest_helpers import kill_group, post, serve_directly, stored

pytestmark = pytest.mark.slow  # builds (or reuses) a virtualenv: 70 s the first time, about 20 s after


@pytest.fixture(scope="module")
def registered(mlflow_tracking_module):
    import mlflow

    from fairltr.synthetic import make_biased_rankings
    from fairltr.tracking import log_ranker_model

    if shutil.which("pyenv") is None:
        pytest.skip("MLflow's virtualenv env manager needs pyenv on PATH")
    train, test = make_biased_rankings(12, 8, 0.35, seed=7)
    model = DELTR(gamma=0.0, max_iter=10).fit(train)
    name = f"venv-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-serving-venv")
    with mlflow.start_run():
        for _ in range(2):  # versions 1 and 2: the same files, one to tamper with
            log_ranker_model(model, input_example=test.head(4), register=name, serve_rerank="fair:p=0.5,alpha=0.1")
    return name, test


def test_the_default_env_manager_serves_a_verified_version_and_refuses_a_changed_one(registered, mlflow_server,
                                                                                     tmp_path):
    from fairltr.tracking.models.digests import ModelRejected
    from fairltr.tracking.models.serving import served_model

    name, test = registered
    cols = ["query_id", "protected", "x1", "x2", "x3", "x4"]
    body = {"dataframe_split": json.loads(test[cols].to_json(orient="split", index=False))}
    env = {k: v for k, v in os.environ.items() if k != "FAIRLTR_DECISION_LOG"}
    proc, url = serve_directly(f"models:/{name}/1", tmp_path / "ok.log", env=env, env_manager=None, timeout_s=900)
    try:
        assert url is not None, (tmp_path / "ok.log").read_text()[-3000:]
        code, out = post(url, body)
        assert code == 200, out
        served = pd.DataFrame(out["predictions"])
        assert set(served["model_version"]) == {"1"} and set(served["policy"]) == {"fair:p=0.5,alpha=0.1,adjust=true"}
        assert post(url, {**body, "params": {"rerank": "none"}})[0] == 400
    finally:
        kill_group(proc, signal.SIGTERM)
    log = (tmp_path / "ok.log").read_text()
    assert f"fairltr: serving {name} v1 (verified" in log
    assert "Installing collected packages" in log or "virtualenv" in log.lower()  # MLflow built or reused an env

    folder = stored(mlflow_server, name, "2")
    marker = tmp_path / "pwned"
    for rel in ("ranker_code.py", "code/fairltr/__init__.py"):
        with open(folder / rel, "a") as fh:
            fh.write(f"\nopen({str(marker)!r}, 'w').write('ran')\n")
    weights = folder / "artifacts" / "deltr.safetensors"
    weights.write_bytes(weights.read_bytes()[:-8] + b"\0" * 8)
    proc, url = serve_directly(f"models:/{name}/2", tmp_path / "bad.log", env=env, env_manager=None, timeout_s=900)
    kill_group(proc)
    assert url is None, "a changed version answered /ping"
    lines = [x for x in (tmp_path / "bad.log").read_text().splitlines() if x.startswith("fairltr: refusing")]
    assert len(lines) == 1 and "does not match its recorded digest" in lines[0], (tmp_path / "bad.log").read_text()[-3000:]
    with pytest.raises(ModelRejected, match="does not match its recorded digest"):
        with served_model(f"models:/{name}/2", env_manager="virtualenv", start_timeout_s=900):
            pytest.fail("served")
    assert not marker.exists()
