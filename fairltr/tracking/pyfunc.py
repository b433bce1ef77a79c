"""The "fairltr ranker" MLflow pyfunc: a DELTR model behind ``mlflow.pyfunc``.

* weights: the model's own ``.safetensors`` file written by :meth:`fairltr.DELTR.save`, logged as
  a model artifact (no pickle of weights or of the model object);
* code: "models from code" — the model is defined by ``ranker_code.py`` (which calls
  ``mlflow.models.set_model``), and the ``fairltr`` package is shipped under ``code/`` because it
  is not on PyPI; third-party requirements are pinned explicitly (no 19 s inference);
* integrity: the SHA-256 digest of the logged model folder is recorded in the tracking store
  (tag ``fairltr.digest`` on the logged model and the registered version,
  :mod:`fairltr.tracking.verify`); promotion and ``fairltr evaluate-model`` check it and build
  the ranker with :meth:`FairltrRanker.from_model` in their own process, never running the
  stored ``ranker_code.py``;
* contract: input = DataFrame with the query-id column and the model's feature columns (extra
  columns are ignored); output = DataFrame ``score`` (float) and ``rank`` (1-based, per query,
  by decreasing score, ties in input order), same index and row order as the input.
"""

from __future__ import annotations

import importlib.metadata as md
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import mlflow.pyfunc

from fairltr.deltr import DELTR
from fairltr.errors import DataError
from fairltr.tracking.config import registry_prints_follow_log_level
from fairltr.tracking.ranks import aligned_ranks

__all__ = ["FairltrRanker", "log_ranker_model", "ranker_pip_requirements", "predict_frame", "stage_package", "MODEL_CODE"]

MODEL_CODE = Path(__file__).with_name("ranker_code.py")
WEIGHTS_FILE = "deltr.safetensors"
_REQUIREMENTS = ("torch", "numpy", "pandas", "scipy", "safetensors", "mlflow")


def predict_frame(model: DELTR, df: pd.DataFrame, query: str | None = None) -> pd.DataFrame:
    """``score`` and per-query ``rank`` of every row of ``df``, aligned with its rows."""
    q = query or model.query_
    if q not in df.columns:
        raise DataError(f"query column {q!r} not in the input; columns: {list(df.columns)}")
    scores = model.predict(df)
    return pd.DataFrame({"score": scores.astype(np.float64), "rank": aligned_ranks(df, scores, q)}, index=df.index)


class FairltrRanker(mlflow.pyfunc.PythonModel):
    """Scores and per-query ranks of a DELTR model loaded from its safetensors artifact.

    ``model_config={"query": "<column>"}`` overrides the query-id column name seen at training.
    """

    @classmethod
    def from_model(cls, model: DELTR, query: str | None = None) -> "FairltrRanker":
        """The pyfunc of an already loaded model (in-process use; no MLflow context)."""
        self = cls()
        self.model = model
        self.query = query or model.query_
        return self

    def load_context(self, context) -> None:
        self.model = DELTR.load(context.artifacts["weights"])
        config = getattr(context, "model_config", None) or {}
        self.query = config.get("query") or self.model.query_

    def predict(self, context, model_input: pd.DataFrame, params: dict[str, Any] | None = None) -> pd.DataFrame:
        if not isinstance(model_input, pd.DataFrame):
            model_input = pd.DataFrame(model_input)
        return predict_frame(self.model, model_input, self.query)


def ranker_pip_requirements() -> list[str]:
    """Exact pins of the ranker's runtime dependencies, read from the installed versions."""
    return [f"{name}=={md.version(name).split('+')[0]}" for name in _REQUIREMENTS]


def stage_package(dest: Path) -> Path:
    """Copy the importable ``fairltr`` package (no bytecode) to ``dest/fairltr`` (a model's ``code/``)."""
    import fairltr

    src = Path(fairltr.__file__).resolve().parent
    out = dest / "fairltr"
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.db"))
    return out


def _default_example(model: DELTR, n: int = 3) -> pd.DataFrame:
    cols = {model.query_: np.zeros(n, dtype=np.int64)}
    cols.update({f: np.zeros(n, dtype=np.float64) for f in model.feature_names_})
    return pd.DataFrame(cols)


def log_ranker_model(
    model: DELTR,
    name: str = "model",
    input_example: pd.DataFrame | None = None,
    register: str | None = None,
    **log_kwargs: Any,
):
    """Log ``model`` as a pyfunc (in the active run, if any) and optionally register it as a
    new version of ``register``. Returns MLflow's ``ModelInfo`` (``model_uri``,
    ``registered_model_version``...). The folder's digest is recorded on the logged model and
    the version (tag ``fairltr.digest``, :func:`fairltr.tracking.verify.record_digest`)."""
    from mlflow.models import infer_signature

    from fairltr.tracking.verify import record_digest

    model.check_fitted()
    if input_example is None:
        input_example = _default_example(model)
    else:
        keep = [c for c in [model.query_, *model.feature_names_] if c in input_example.columns]
        input_example = input_example[keep].head(5).reset_index(drop=True)
    # features as double so that int or float inputs both pass MLflow's schema enforcement
    input_example = input_example.astype({f: np.float64 for f in model.feature_names_})
    with tempfile.TemporaryDirectory(prefix="fairltr-model-") as tmp:
        tmp_path = Path(tmp)
        weights = model.save(tmp_path / WEIGHTS_FILE)
        with warnings.catch_warnings():  # the int query id / rank columns trigger a "missing values" hint
            warnings.simplefilter("ignore", UserWarning)
            signature = infer_signature(input_example, predict_frame(model, input_example))
        code = stage_package(tmp_path / "code")
        with registry_prints_follow_log_level():
            info = mlflow.pyfunc.log_model(
                name=name,
                python_model=str(MODEL_CODE),
                artifacts={"weights": str(weights)},
                code_paths=[str(code)],
                pip_requirements=ranker_pip_requirements(),
                signature=signature,
                input_example=input_example,
                registered_model_name=register or None,
                model_config={"query": model.query_, "kind": "ranker"},
                **log_kwargs,
            )
        record_digest(info, {"artifact:weights": weights, "ranker_code.py": MODEL_CODE, "code/fairltr": code},
                      register=register or None)
    return info
