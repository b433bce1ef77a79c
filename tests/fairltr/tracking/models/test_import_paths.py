"""The model modules split to break their import circles (issue 33, item 6) keep every name at the
path it had: a logged model names ``fairltr.tracking.models.pyfunc.FairltrRanker`` (``ranker_code.py``),
``fairltr.tracking.models.retriever.FairltrRetriever`` (``retriever_code.py``) and the loader module
``fairltr.tracking.models.verified_loader``; callers import the loggers from ``pyfunc`` /
``retriever_pyfunc``. The loaders import the model classes, never the loggers."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parents[4] / "fairltr" / "tracking" / "models"

BEFORE = {  # each module's __all__ before the split
    "pyfunc": ["FairltrRanker", "log_ranker_model", "ranker_pip_requirements", "predict_frame", "stage_package",
               "load_ranker_artifacts", "ranker_from_config", "MODEL_CODE", "PROVENANCE_COLUMNS", "SAMPLE_COLUMNS"],
    "retriever_pyfunc": ["FairltrRetriever", "log_retriever_model", "retriever_pip_requirements", "retriever_signature",
                         "model_kind", "check_k", "retriever_from_config", "MODEL_CODE", "DEFAULT_K", "KIND_TAG"],
    "decision_log": ["COLUMNS", "ENV_VAR", "DecisionLog", "DecisionContext", "decision_records", "record_schema",
                     "open_decision_log", "read_decision_log", "check_recordable_uri", "resolve_decision_log",
                     "is_postgres_uri"],
}
MOVED = {  # name -> (old module, new home): the same object under both paths
    "FairltrRanker": ("pyfunc", "ranker_model"), "ranker_from_config": ("pyfunc", "ranker_model"),
    "load_ranker_artifacts": ("pyfunc", "ranker_model"), "predict_frame": ("pyfunc", "ranker_model"),
    "PROVENANCE_COLUMNS": ("pyfunc", "ranker_model"), "stage_package": ("pyfunc", "loader_form"),
    "FairltrRetriever": ("retriever", "retriever_model"), "retriever_from_config": ("retriever_pyfunc", "retriever_model"),
    "check_k": ("retriever", "retriever_model"), "record_schema": ("decision_log", "decision_log_schema"),
}


def _module(name: str):
    return importlib.import_module(f"fairltr.tracking.models.{name}")


@pytest.mark.parametrize("module", sorted(BEFORE))
def test_every_name_keeps_its_path(module):
    mod = _module(module)
    assert [n for n in BEFORE[module] if not hasattr(mod, n)] == []


@pytest.mark.parametrize("name", sorted(MOVED))
def test_a_moved_name_is_the_same_object_at_both_paths(name):
    old, new = MOVED[name]
    assert getattr(_module(old), name) is getattr(_module(new), name)


def _imports(path: Path) -> set[str]:
    return {n.module for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
            if isinstance(n, ast.ImportFrom) and n.module}


@pytest.mark.parametrize("loader", ["verified_loader", "verify", "ranker_model", "retriever_model"])
def test_loaders_and_model_classes_never_import_the_loggers(loader):
    loggers = {f"fairltr.tracking.models.{m}" for m in ("pyfunc", "retriever_pyfunc", "retriever", "loader_form")}
    assert _imports(MODELS / f"{loader}.py") & loggers == set()
