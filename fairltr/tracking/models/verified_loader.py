"""fairltr's load-time entry for MLflow (``loader_module: fairltr.tracking.models.verified_loader``
in a model's MLmodel): the digest is checked before any weight is read or any code of the model
folder is imported, by code that is NOT in the model folder.

Why a loader module: a "models from code" pyfunc (``python_model: ranker_code.py`` plus
``code: code``) makes MLflow prepend the folder's ``code/`` to ``sys.path`` and execute
``ranker_code.py`` — both from the artifact store — before any ``load_context`` can check
anything. A model logged by :func:`log_loader_model` instead names this module as its
``loader_module`` and has NO ``code`` entry, so MLflow imports this module from the installed
fairltr and calls :func:`_load_pyfunc`, which

1. finds the model folder and computes its digest (:func:`~fairltr.tracking.models.digests.folder_digest`,
   every file, the staged package and wheel included) and compares it with every digest the
   TRACKING store holds for it (the registered version named by MLflow's ``registered_model_meta``
   and the logged model named by MLmodel's ``model_id``), refusing a mismatch, a model without a
   recorded digest and a model whose store cannot be asked (``FAIRLTR_ALLOW_UNVERIFIED=true``
   serves those last two anyway, saying so);
2. only then reads the weights with fairltr's validating loaders, with the settings of the verified
   MLmodel (a load-time override of a recorded setting, :data:`GOVERNED_KEYS`, is refused) (the model folder's staged code
   is never imported), opens the decision log (:mod:`~fairltr.tracking.models.decision_log`) and,
   inside ``mlflow models serve``, installs the request guard (:mod:`~fairltr.tracking.models.request_guard`).

Inside the scoring server a refusal is one line on stderr (``fairltr: refusing to serve ...``)
and the worker exits with uvicorn's start-up failure status (the server stops). In-process
(``mlflow.pyfunc.load_model``) it is a :class:`~fairltr.tracking.models.digests.ModelRejected`.

What this cannot cover: MLmodel itself is read by MLflow before any fairltr code runs, so a
writer of the artifact store who rewrites MLmodel (another ``loader_module``, a ``code`` entry)
bypasses it; and under a non-local env manager MLflow builds the environment from the folder's
``requirements.txt`` (which installs the staged wheel) before anything is checked. Both are caught
by verifying BEFORE MLflow sees the folder: :func:`fairltr.tracking.models.serving.served_model`
(and ``fairltr promote`` / ``evaluate-model`` / ``monitor``, which never run stored code).
"""

from __future__ import annotations

import contextlib
import os
import sys
from contextvars import ContextVar
from pathlib import Path
from typing import Any, Iterator, Mapping

from fairltr.errors import ConfigError, DataError
from fairltr.tracking.models.digests import DIGEST_TAG, ModelRejected, folder_digest

__all__ = ["LOADER_MODULE", "LOADER_FORMAT", "ALLOW_UNVERIFIED_ENV", "GOVERNED_KEYS", "in_scoring_server",
           "check_at_load", "LoadCheck", "logging_model"]

LOADER_MODULE = "fairltr.tracking.models.verified_loader"
LOADER_FORMAT = 2  # model_config["format"]; the models-from-code form had none
ALLOW_UNVERIFIED_ENV = "FAIRLTR_ALLOW_UNVERIFIED"
_SERVER_MODEL_PATH = "__pyfunc_model_path__"  # set by mlflow.pyfunc.scoring_server.get_cmd for its app
_LOGGING: ContextVar[bool] = ContextVar("fairltr_logging_model", default=False)
_STARTUP_FAILURE = 3  # uvicorn.config.STARTUP_FAILURE: the supervisor stops instead of restarting


@contextlib.contextmanager
def logging_model() -> Iterator[None]:
    """While fairltr logs a model in this thread, MLflow's input-example check loads the folder
    just written, whose digest is not recorded yet: it is loaded unverified and logs no decisions."""
    token = _LOGGING.set(True)
    try:
        yield
    finally:
        _LOGGING.reset(token)


def in_scoring_server() -> bool:
    """Whether this process is MLflow's scoring server app (``mlflow models serve``)."""
    return bool(os.environ.get(_SERVER_MODEL_PATH)) and "mlflow.pyfunc.scoring_server" in sys.modules


def _say(line: str) -> None:
    sys.stderr.write(" ".join(str(line).split()) + "\n")
    sys.stderr.flush()


def _model_root(data_path: str | os.PathLike) -> Path:
    """The folder holding MLmodel: ``data_path`` itself (no ``data`` entry) or an ancestor."""
    p = Path(data_path).resolve()
    for candidate in (p, *p.parents[:2]):
        if (candidate / "MLmodel").is_file():
            return candidate
    raise ModelRejected(f"{data_path}: no MLmodel file in or above it")


class LoadCheck:
    """What the load-time check found: the folder's digest, whether the tracking store vouched
    for it, the registered name and version ("" when not served from the registry)."""

    def __init__(self, digest: str, verified: bool, name: str = "", version: str = "", note: str = "") -> None:
        self.digest, self.verified, self.name, self.version, self.note = digest, verified, name, version, note


def _registered_meta(root: Path) -> tuple[str, str]:
    meta = root / "registered_model_meta"  # written by MLflow's client when it downloads models:/NAME/V
    if not meta.is_file():
        return "", ""
    from mlflow.utils.yaml_utils import read_yaml

    data = read_yaml(str(root), "registered_model_meta") or {}
    name, version = data.get("model_name"), data.get("model_version")
    return (str(name), str(version)) if name and version not in (None, "") else ("", "")


def _tracking_uri_set() -> bool:
    if os.environ.get("MLFLOW_TRACKING_URI"):
        return True
    import mlflow

    return bool(mlflow.is_tracking_uri_set())


def _allow_unverified() -> bool:
    return os.environ.get(ALLOW_UNVERIFIED_ENV, "").strip().lower() in ("1", "true", "yes")


def check_at_load(root: Path) -> LoadCheck:
    """Step 1 of the module docstring for the folder ``root``."""
    from mlflow.models import Model

    name, version = _registered_meta(root)
    digest = folder_digest(root)
    label = f"{name} v{version}" if name else str(root)
    if _LOGGING.get():
        return LoadCheck(digest, False, name, version, "being logged")
    model_id = getattr(Model.load(str(root / "MLmodel")), "model_id", None)
    if not _tracking_uri_set():
        reason = f"{label}: no tracking store is configured (MLFLOW_TRACKING_URI) to verify its digest against"
        return _unverified(reason, digest, name, version)
    from fairltr.tracking.models.verify import expected_digests

    uri = f"models:/{name}/{version}" if name else f"models:/{model_id}" if model_id else None
    try:
        expected = expected_digests(uri)[0] if uri else {}
    except Exception as exc:
        text = " ".join(str(getattr(exc, "message", exc)).split())[:200]
        return _unverified(f"{label}: the tracking store cannot be asked for its digest ({text})", digest, name, version)
    if not expected:
        return _unverified(f"{label} has no recorded digest ({DIGEST_TAG})", digest, name, version)
    for where, want in expected.items():
        if want != digest:
            raise ModelRejected(f"{label} does not match its recorded digest ({where}: {want[:19]}..., files: "
                                f"{digest[:19]}...): the model files were changed after logging")
    return LoadCheck(digest, True, name, version)


def _unverified(reason: str, digest: str, name: str, version: str) -> LoadCheck:
    if not _allow_unverified():
        raise ModelRejected(f"{reason}; {ALLOW_UNVERIFIED_ENV}=true serves it unverified")
    return LoadCheck(digest, False, name, version, f"{reason}: loaded unverified ({ALLOW_UNVERIFIED_ENV})")


def _load_pyfunc(data_path: str, model_config: Mapping[str, Any] | None = None):
    """MLflow's entry (module docstring): the verified model as a pyfunc ``model_impl``."""
    served = in_scoring_server()
    try:
        root = _model_root(data_path)
        return _load(root, dict(model_config or {}), served)
    except (ModelRejected, ConfigError, DataError) as exc:
        if served:
            _say(f"fairltr: refusing to serve {os.environ.get(_SERVER_MODEL_PATH)}: {exc}")
            raise SystemExit(_STARTUP_FAILURE) from None
        raise ModelRejected(" ".join(str(exc).split())) from None


GOVERNED_KEYS = ("format", "kind", "query", "group", "groups", "item", "input_types", "serve_rerank",
                 "serve_overrides", "decision_log", "weights", "booster", "files", "model", "package")
"""Model-config keys recorded with the model (inside its digest) that no load-time override may
change: MLflow merges ``load_model(model_config=...)``, ``MLFLOW_PYFUNC_INFERENCE_CONFIG`` and the
scoring server's ``SERVING_MODEL_CONFIG`` into the config it passes to the loader."""


def _effective_config(root: Path, given: Mapping[str, Any], label: str) -> dict:
    """The verified MLmodel's own config, with the load-time overrides of keys outside
    :data:`GOVERNED_KEYS` (a retriever's ``device``, ``batch_size``); an override of a governed key
    is refused."""
    from mlflow.models import Model

    recorded = dict((Model.load(str(root / "MLmodel")).flavors.get("python_function") or {}).get("config") or {})
    changed = sorted(k for k, v in given.items() if k in GOVERNED_KEYS and v != recorded.get(k))
    if changed:
        raise ModelRejected(f"{label}: model config {changed} cannot be overridden where the model loads "
                            "(load_model(model_config=...), MLFLOW_PYFUNC_INFERENCE_CONFIG, SERVING_MODEL_CONFIG): "
                            "it is recorded with the model, inside its digest")
    return {**recorded, **{k: v for k, v in given.items() if k not in GOVERNED_KEYS}}


def _load(root: Path, given: dict, served: bool):
    from fairltr.tracking.models.verify import _InProcessModel

    check = check_at_load(root)
    config = _effective_config(root, given, f"{check.name} v{check.version}" if check.name else str(root))
    if check.note and check.note != "being logged":
        _say(f"fairltr: {check.note}")
    kind = config.get("kind", "ranker")
    if kind == "ranker":
        from fairltr.tracking.models.ranker_model import ranker_from_config

        python_model = ranker_from_config(root, config)
        known = ("rerank", "p", "alpha", "adjust", "k", "target")
        allowed = python_model.overrides_text
    elif kind == "retriever":
        from fairltr.tracking.models.retriever_model import retriever_from_config

        python_model = retriever_from_config(root, config)
        known, allowed = ("k",), "k"
    else:
        raise ModelRejected(f"{root}: MLmodel kind {kind!r} is not a fairltr ranker or retriever")
    if kind == "ranker" and check.note != "being logged":
        _attach_serving(python_model, check, config)
    if served:
        from fairltr.tracking.models.request_guard import install_request_guard

        _say(f"fairltr: serving {check.name + ' v' + check.version if check.name else root} "
             f"({'verified' if check.verified else 'NOT verified'} {check.digest[:19]}...); "
             + install_request_guard(known, allowed))
    return _InProcessModel(python_model)


def _attach_serving(python_model: Any, check: LoadCheck, config: dict) -> None:
    """Provenance columns and the decision log (step 2 of the module docstring)."""
    from fairltr.tracking.models.decision_log import DecisionContext, open_decision_log, resolve_decision_log

    ctx = DecisionContext(model_name=check.name, model_version=check.version, model_digest=check.digest,
                          query=python_model.query, item=config.get("item") or None,
                          groups=tuple(config.get("groups") or ([python_model.group] if python_model.group else [])))
    uri, source = resolve_decision_log(config.get("decision_log"))
    log = open_decision_log(uri) if uri else None
    python_model.attach(ctx, log)
    if log is not None:
        _say(f"fairltr: decision log {log.uri} ({source})")
