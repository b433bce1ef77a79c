"""The fairltr ranker pyfunc: registry round trip through the @champion alias on a real server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairltr import DELTR
from fairltr.tracking.models.ranks import aligned_ranks


def _brute_ranks(df: pd.DataFrame, scores: np.ndarray, query: str) -> np.ndarray:
    """Per-query rank by a Python loop over queries (independent of the vectorised version)."""
    out = np.zeros(len(df), dtype=int)
    for q in pd.unique(df[query]):
        idx = np.flatnonzero(df[query].to_numpy() == q)
        order = sorted(idx, key=lambda i: (-scores[i], i))
        for r, i in enumerate(order, start=1):
            out[i] = r
    return out


def test_aligned_ranks_matches_brute_force_with_ties_and_interleaved_queries():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"q": rng.choice(["a", "b", "c"], size=200)})
    scores = rng.integers(0, 5, size=200).astype(float)  # many ties
    np.testing.assert_array_equal(aligned_ranks(df, scores, "q"), _brute_ranks(df, scores, "q"))


def test_registry_round_trip_same_scores(mlflow_tracking, tiny_rankings, tmp_path):
    import mlflow

    from fairltr.tracking import log_ranker_model

    train, test = tiny_rankings
    model = DELTR(gamma=10.0, max_iter=25).fit(train)
    name = f"ranker-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-pyfunc")
    with mlflow.start_run():
        info = log_ranker_model(model, input_example=train.head(4), register=name)
    client = mlflow.MlflowClient()
    client.set_registered_model_alias(name, "champion", info.registered_model_version)

    loaded = mlflow.pyfunc.load_model(f"models:/{name}@champion")
    shuffled = test.sample(frac=1.0, random_state=1)  # rows of a query interleaved; index kept
    out = loaded.predict(shuffled)
    from fairltr.tracking.models.pyfunc import PROVENANCE_COLUMNS

    assert list(out.columns) == ["score", "rank", *PROVENANCE_COLUMNS]
    assert set(out["model_name"]) == {name} and set(out["model_version"]) == {str(info.registered_model_version)}
    assert out.index.equals(shuffled.index)
    np.testing.assert_allclose(out["score"].to_numpy(), model.predict(shuffled), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(out["rank"].to_numpy(),
                                  _brute_ranks(shuffled.reset_index(drop=True), model.predict(shuffled), "query_id"))

    # the signature names the query and feature columns; the weights are not a pickle
    sig = loaded.metadata.get_input_schema().input_names()
    assert sig == ["query_id", *model.feature_names_]
    (tmp_path / "model").mkdir()  # the model folder alone: its digest is checked when it loads
    local = Path(mlflow.artifacts.download_artifacts(f"models:/{name}@champion", dst_path=str(tmp_path / "model")))
    files = [p.relative_to(local).as_posix() for p in local.rglob("*") if p.is_file()]
    assert any(f.endswith("deltr.safetensors") for f in files)
    assert not [f for f in files if f.endswith((".pkl", ".pickle", ".cloudpickle"))], files
    reqs = (local / "requirements.txt").read_text().split()
    assert "torch==2.13.0" in reqs and any(r.startswith("mlflow==") for r in reqs)
    assert all("==" in r for r in reqs if not r.startswith("./code/")), reqs  # pins, and the staged wheel
    mlmodel = (local / "MLmodel").read_text()
    assert "loader_module: fairltr.tracking.models.verified_loader" in mlmodel  # fairltr's loader, no pickle
    pyfunc_conf = mlflow.models.Model.load(str(local / "MLmodel")).flavors["python_function"]
    assert "python_model" not in pyfunc_conf and pyfunc_conf.get("code") is None  # nothing of code/ on sys.path
    assert json.loads(json.dumps(out["rank"].tolist()))  # plain ints

    # self-contained: a Python that cannot import the development fairltr loads it from the model's
    # own wheel (what a virtualenv / uv env manager installs from requirements.txt)
    (wheel,) = (local / "code").glob("fairltr-*.whl")
    assert f"./code/{wheel.name}" in reqs
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target",
                    str(tmp_path / "site"), str(wheel)], check=True, timeout=300)
    test.to_csv(tmp_path / "test.csv", index=False)
    site = next(p for p in sys.path if p.endswith("site-packages"))
    script = (
        "import sys; sys.path.append(%r)\n"
        "try:\n    import fairltr; raise SystemExit('fairltr importable without the model')\n"
        "except ImportError: pass\n"
        "sys.path.insert(0, %r)\n"
        "import mlflow.pyfunc, pandas as pd\n"
        "m = mlflow.pyfunc.load_model(%r)\n"
        "import fairltr; assert fairltr.__file__.startswith(%r), fairltr.__file__\n"
        "m.predict(pd.read_csv(%r)).to_csv(%r, index=False)\n"
    ) % (site, str(tmp_path / "site"), str(local), str(tmp_path / "site"), str(tmp_path / "test.csv"),
         str(tmp_path / "out.csv"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-S", "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    standalone = pd.read_csv(tmp_path / "out.csv")
    np.testing.assert_allclose(standalone["score"].to_numpy(), model.predict(test), atol=1e-12)


PRE_SPLIT_RANKER_CODE = """import mlflow.models

from fairltr.tracking.pyfunc import FairltrRanker

mlflow.models.set_model(FairltrRanker())
"""


def test_a_model_logged_before_the_adapter_split_loads_in_process(mlflow_tracking, tiny_rankings, tmp_path,
                                                                  log_models_from_code):
    """A ranker logged before ``fairltr.tracking`` had sub-packages stores a ``ranker_code.py``
    importing ``fairltr.tracking.pyfunc``; MLflow runs it on load, in a process where the current
    fairltr is already imported, so that module must still provide ``FairltrRanker``."""
    import mlflow

    import fairltr.tracking.models.pyfunc  # noqa: F401  (the current fairltr is loaded first)

    train, test = tiny_rankings
    model = DELTR(gamma=10.0, max_iter=25).fit(train)
    mlflow.set_experiment("test-pyfunc-pre-split")
    with mlflow.start_run():
        info = log_models_from_code(model, train.head(4))  # the models-from-code form of those releases
    local = Path(mlflow.artifacts.download_artifacts(info.model_uri, dst_path=str(tmp_path / "model")))
    (code,) = [p for p in local.rglob("ranker_code.py") if "code" not in p.relative_to(local).parts[:-1]]
    assert "fairltr.tracking.models.pyfunc" in code.read_text()
    code.write_text(PRE_SPLIT_RANKER_CODE)  # what models logged by the previous release carry
    loaded = mlflow.pyfunc.load_model(str(local))
    np.testing.assert_allclose(loaded.predict(test)["score"].to_numpy(), model.predict(test), rtol=0, atol=1e-12)


def test_missing_feature_column_is_a_clear_error(tiny_rankings):
    from fairltr.errors import DataError
    from fairltr.tracking.models.pyfunc import predict_frame

    train, _ = tiny_rankings
    model = DELTR(gamma=0.0, max_iter=5).fit(train)
    with pytest.raises(DataError, match="query column 'qid'"):
        predict_frame(model, train, query="qid")
    with pytest.raises(DataError, match="x1"):
        predict_frame(model, train.drop(columns=["x1"]))
