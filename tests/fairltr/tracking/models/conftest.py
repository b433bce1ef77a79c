"""Fixtures of the model-format tests: a ranker logged in the models-from-code form that fairltr
used before the verifying loader (``ranker_code.py`` + ``code/`` + MLflow's ``artifacts``), so the
old loading path stays tested once new models are logged in the loader-module form."""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))  # rest_helpers


def _log_models_from_code(model, input_example, name: str = "model", serve_rerank: str | None = None):
    """What ``log_ranker_model`` logged before the loader-module form (its MLmodel: ``python_model``
    = ranker_code.py, ``code: code``, artifacts ``weights``; no ``serve_overrides``), digest recorded."""
    import mlflow
    from mlflow.models import infer_signature

    from fairltr.fair.policy import parse_policy
    from fairltr.tracking.models.digests import record_digest
    from fairltr.tracking.models.pyfunc import (MODEL_CODE, FairltrRanker, _serving_signature, ranker_pip_requirements,
                                                stage_package)
    from fairltr.tracking.models.signature_types import training_types

    policy = parse_policy(serve_rerank)
    keep = [c for c in [model.query_, *model.feature_names_] if c in input_example.columns]
    example = input_example[keep].head(5).reset_index(drop=True)
    with tempfile.TemporaryDirectory() as tmp:
        weights = model.save(Path(tmp) / "deltr.safetensors")
        code = stage_package(Path(tmp) / "code")
        info = mlflow.pyfunc.log_model(
            name=name, python_model=str(MODEL_CODE), artifacts={"weights": str(weights)}, code_paths=[str(code)],
            pip_requirements=ranker_pip_requirements(),
            signature=_serving_signature(infer_signature(example, FairltrRanker.from_model(model, policy=policy).predict(
                None, example)), (model.columns_.group,), list(example.columns)),  # declares the six params
            input_example=example,
            model_config={"query": model.query_, "kind": "ranker", "group": model.columns_.group,
                          "serve_rerank": policy.describe(), "input_types": training_types(example)})
        record_digest(info, {"artifact:weights": weights, "ranker_code.py": MODEL_CODE, "code/fairltr": code})
    return info


@pytest.fixture
def log_models_from_code():
    """``log(model, input_example, name="model", serve_rerank=None) -> ModelInfo`` in the old form."""
    return _log_models_from_code
