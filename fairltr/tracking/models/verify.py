"""Content digests of logged fairltr models, and opening a model from the store without running
any code that the artifact store holds.

Digest (tag ``fairltr.digest``, value ``sha256:<hex>``): SHA-256 over the lines
``<relative POSIX path> NUL <sha256 hex of the file's bytes> LF`` of EVERY regular file of the
logged model's folder, sorted by path: ``MLmodel``, the model code (``ranker_code.py`` /
``retriever_code.py``), the weights (``artifacts/deltr.safetensors``) or the retriever package
(towers, ``index.safetensors``, ``index.json``, ``retriever.json``), the staged ``code/fairltr``
package, requirements, input examples and any bytecode MLflow left there. A file added, removed,
renamed or changed changes the digest; a symbolic link or other non-regular file is refused.
One file is left out: the top-level ``registered_model_meta`` (model name and version), which
MLflow's own download client writes into the folder when a ``models:/NAME/V`` URI is downloaded,
so it is not content of the logged model (it is data MLflow reads for tracing, never code).

Recorded (:func:`record_digest`, called by ``log_ranker_model`` / ``log_retriever_model``): the
logged folder is downloaded back from the artifact store, the files fairltr uploaded (weights,
package, model code, staged package) are compared byte for byte with the local originals — so
the short window between upload and digest cannot smuggle in other weights or code — and the
digest is written to the TRACKING store, as a tag on the logged model and on the registered model
version. Whoever can write only the artifact store cannot forge it.

Verified (:func:`fetch_verified`): the model is downloaded into a fresh folder and its digest
recomputed and compared with every digest the tracking store holds for it (the version's tag,
the logged model's tag) BEFORE anything from the folder is read beyond bytes. Then
:func:`load_verified` builds the model with fairltr's own code in this process — the weights by
:meth:`fairltr.DELTR.load` (every field validated; a LambdaMART model by
:meth:`fairltr.gbdt.LambdaMART.load`, which also checks LightGBM's text file), a retriever by its package reader
(safetensors + JSON, towers with ``local_files_only``) — and wraps it in an in-process
``PyFuncModel`` with the logged signature, so ``mlflow.models.evaluate`` and the fair_ranking /
fair_retrieval evaluators run on it as on a loaded model. ``ranker_code.py``, ``retriever_code.py``
and ``code/`` from the store are never imported.

Models logged before digests existed have no tag: they are refused (:class:`ModelRejected`)
unless ``allow_unverified=True``, which still loads them only with fairltr's loaders. Both model
forms load here: the loader-module form (its files named in the MLmodel config,
:mod:`fairltr.tracking.models.loader_form`) and the models-from-code form of earlier releases
(MLflow's ``artifacts`` map). Where MLflow itself loads a model, the same digest check runs in
:mod:`fairltr.tracking.models.verified_loader`.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fairltr.tracking.models.digests import (
    DIGEST_TAG, ModelRejected, download_artifacts, folder_digest, record_digest,
)

__all__ = ["DIGEST_TAG", "ModelRejected", "VerifiedModel", "folder_digest", "record_digest", "expected_digests",
           "fetch_verified", "load_verified", "open_verified", "open_verified_ranker", "in_process_pyfunc", "resolve_registry_uri",
           "model_meta"]

_download = download_artifacts  # the name before digests.py


# --------------------------------------------------------------------------- fetch + verify
_REGISTRY = re.compile(r"^models:/(?P<name>[^/@]+)(?:/(?P<version>[^/]+)|@(?P<alias>[^/]+))/?$")
_LOGGED = re.compile(r"^models:/(?P<id>m-[0-9a-f]+)/?$")


def resolve_registry_uri(model_uri: str, client: Any = None) -> tuple[str, str] | None:
    """``(name, version)`` of ``models:/NAME/V`` or ``models:/NAME@ALIAS`` (alias resolved now),
    None for other URIs (``models:/m-<id>``, ``runs:/...``, paths)."""
    import mlflow

    m = _REGISTRY.match(model_uri)
    if m is None or _LOGGED.match(model_uri):
        return None
    client = client or mlflow.MlflowClient()
    if m["alias"] is not None:
        mv = client.get_model_version_by_alias(m["name"], m["alias"])
        return m["name"], str(mv.version)
    if m["version"] == "latest":
        versions = client.search_model_versions(f"name='{m['name']}'")
        if not versions:
            raise ModelRejected(f"registered model {m['name']!r} has no versions")
        return m["name"], str(max(int(v.version) for v in versions))
    return m["name"], str(m["version"])


def _model_id_of_version(mv: Any) -> str | None:
    model_id = getattr(mv, "model_id", None)
    if model_id:
        return str(model_id)
    found = _LOGGED.match(str(getattr(mv, "source", "") or ""))
    return found["id"] if found else None


def _logged_model_digest(client: Any, model_id: str) -> str | None:
    from mlflow.exceptions import MlflowException

    try:
        return (client.get_logged_model(model_id).tags or {}).get(DIGEST_TAG)
    except MlflowException:
        return None


def expected_digests(model_uri: str, client: Any = None) -> tuple[dict[str, str], str | None, tuple[str, str] | None]:
    """The digests the TRACKING store holds for ``model_uri`` ({source: digest}), the logged
    model id when known, and (name, version) for a registry URI."""
    import mlflow

    client = client or mlflow.MlflowClient()
    found: dict[str, str] = {}
    model_id = None
    registry = resolve_registry_uri(model_uri, client)
    if registry is not None:
        mv = client.get_model_version(*registry)
        if (mv.tags or {}).get(DIGEST_TAG):
            found[f"version {registry[1]} tag"] = mv.tags[DIGEST_TAG]
        model_id = _model_id_of_version(mv)
    else:
        logged = _LOGGED.match(model_uri)
        model_id = logged["id"] if logged else None
    if model_id:
        d = _logged_model_digest(client, model_id)
        if d:
            found[f"logged model {model_id} tag"] = d
    return found, model_id, registry


@dataclass
class VerifiedModel:
    """A model folder downloaded from the store and checked against its digest."""

    uri: str
    path: Path
    kind: str
    digest: str
    verified: bool
    model_id: str | None = None
    name: str | None = None
    version: str | None = None
    meta: Any = None
    notes: list[str] = field(default_factory=list)

    @property
    def label(self) -> str:
        return f"{self.name} v{self.version}" if self.name else self.uri


def _kind_of(meta: Any, label: str) -> str:
    pyfunc = (meta.flavors or {}).get("python_function") or {}
    kind = (pyfunc.get("config") or {}).get("kind")
    if kind is None:
        code = str(pyfunc.get("model_code_path") or "")
        kind = "retriever" if code.endswith("retriever_code.py") else "ranker" if code.endswith("ranker_code.py") else None
    if kind not in ("ranker", "retriever"):
        raise ModelRejected(f"{label} is not a fairltr ranker or retriever (MLmodel kind {kind!r})")
    return kind


def model_meta(model_uri: str) -> Any:
    """The MLmodel metadata of ``model_uri`` (``models:/NAME/3``, ``models:/NAME@champion``,
    ``runs:/...``), for what a command reads before it opens the model (its recorded group
    attributes): only that file is downloaded, nothing is verified, loaded or run. None when it
    cannot be read (opening the model later names the problem)."""
    from mlflow.models import get_model_info

    try:
        return get_model_info(model_uri)
    except Exception:  # an unknown version, a folder without MLmodel: reported when the model is opened
        return None


def fetch_verified(model_uri: str, dst: str | os.PathLike, *, allow_unverified: bool = False,
                   client: Any = None) -> VerifiedModel:
    """Download ``model_uri`` into the empty folder ``dst`` and check it against the tracking
    store's digest(s). Raises :class:`ModelRejected` (one line) on a mismatch, a missing digest
    (unless ``allow_unverified``), or a folder that is not a fairltr model. Nothing is executed."""
    import mlflow
    from mlflow.exceptions import MlflowException
    from mlflow.models import Model

    client = client or mlflow.MlflowClient()
    expected, model_id, registry = expected_digests(model_uri, client)
    label = f"{registry[0]} v{registry[1]}" if registry else model_uri
    source = f"models:/{registry[0]}/{registry[1]}" if registry else model_uri
    try:
        folder = download_artifacts(source, Path(dst))
    except MlflowException as exc:
        raise ModelRejected(f"{label}: the model files cannot be downloaded ({exc.message[:200]})") from None
    if folder.is_file() or not (folder / "MLmodel").is_file():
        raise ModelRejected(f"{label}: the model folder has no MLmodel file")
    digest = folder_digest(folder)
    notes: list[str] = []
    if not expected:
        if not model_id:  # runs:/ URIs and the like: the MLmodel names the logged model
            try:
                model_id = Model.load(str(folder / "MLmodel")).model_id
            except Exception:
                model_id = None
            d = _logged_model_digest(client, model_id) if model_id else None
            if d:
                expected[f"logged model {model_id} tag"] = d
    if not expected:
        if not allow_unverified:
            raise ModelRejected(f"{label} has no recorded digest ({DIGEST_TAG}; logged before fairltr recorded "
                                "digests?): its files cannot be verified (--allow-unverified loads it anyway, "
                                "with fairltr's loaders only)")
        notes.append(f"{label} has no recorded digest: loaded unverified (--allow-unverified)")
    for where, want in expected.items():
        if want != digest:
            raise ModelRejected(f"{label} does not match its recorded digest ({where}: {want[:19]}..., "
                                f"files: {digest[:19]}...): the model files were changed after logging")
    try:
        meta = Model.load(str(folder / "MLmodel"))
    except Exception as exc:
        raise ModelRejected(f"{label}: MLmodel cannot be read ({type(exc).__name__}: {str(exc)[:200]})") from None
    kind = _kind_of(meta, label)
    return VerifiedModel(model_uri, folder, kind, digest, bool(expected), model_id or getattr(meta, "model_id", None),
                         registry[0] if registry else None, registry[1] if registry else None, meta, notes)


# --------------------------------------------------------------------------- load in process
class _InProcessModel:
    """The ``model_impl`` of an in-process PyFuncModel: calls a PythonModel without a context."""

    def __init__(self, python_model: Any) -> None:
        self.python_model = python_model

    def predict(self, model_input: Any, params: dict[str, Any] | None = None) -> Any:
        return self.python_model.predict(None, model_input, params=params)


def in_process_pyfunc(python_model: Any, meta: Any, model_id: str | None = None):
    """A ``PyFuncModel`` over a PythonModel instance built in this process, with the logged
    metadata ``meta`` (signature, input example): MLflow's schema enforcement applies, and
    ``unwrap_python_model()`` returns ``python_model``."""
    from mlflow.pyfunc import PyFuncModel

    return PyFuncModel(model_meta=meta, model_impl=_InProcessModel(python_model), model_id=model_id)


def _artifact(vm: VerifiedModel, key: str) -> Path:
    pyfunc = (vm.meta.flavors or {}).get("python_function") or {}
    entry = (pyfunc.get("artifacts") or {}).get(key) or {}
    rel = entry.get("path")
    if not rel:
        raise ModelRejected(f"{vm.label}: MLmodel names no {key!r} artifact")
    path = (vm.path / rel).resolve()
    if vm.path.resolve() not in path.parents:
        raise ModelRejected(f"{vm.label}: artifact {key!r} path {rel!r} leaves the model folder")
    return path


def load_verified(vm: VerifiedModel):
    """The model of a verified folder as an in-process ``PyFuncModel`` (see the module
    docstring); :class:`ModelRejected` with the loader's one-line reason when it does not load."""
    pyfunc = (vm.meta.flavors or {}).get("python_function") or {}
    config = dict(pyfunc.get("config") or {})
    try:
        if vm.kind == "ranker" and config.get("weights"):  # the loader-module form: files named in the config
            from fairltr.tracking.models.ranker_model import ranker_from_config

            python_model = ranker_from_config(vm.path, config)
        elif vm.kind == "ranker":  # models from code: MLflow's artifacts map
            from fairltr.tracking.models.ranker_model import FairltrRanker, load_ranker_artifacts

            artifacts = (pyfunc.get("artifacts") or {})
            booster = _artifact(vm, "booster") if "booster" in artifacts else None
            python_model = FairltrRanker.from_model(load_ranker_artifacts(_artifact(vm, "weights"), booster),
                                                    config.get("query"), policy=config.get("serve_rerank"),
                                                    group=config.get("group"), input_types=config.get("input_types"),
                                                    overrides=config.get("serve_overrides"))
        elif config.get("package"):  # a loader-form retriever: the package folder named in the config
            from fairltr.tracking.models.retriever_model import retriever_from_config

            python_model = retriever_from_config(vm.path, config)
        else:
            from fairltr.tracking.models.retriever_model import FairltrRetriever

            python_model = FairltrRetriever(_artifact(vm, "package"), device=config.get("device"),
                                            batch_size=config.get("batch_size", 128))
    except ModelRejected:
        raise
    except Exception as exc:  # a corrupt model must never crash promotion: any loader error rejects it
        text = " ".join(str(exc).split())[:300]
        raise ModelRejected(f"{vm.label} does not load: {type(exc).__name__}: {text}") from None
    return in_process_pyfunc(python_model, vm.meta, vm.model_id)


def open_verified(model_uri: str, dst: str | os.PathLike, *, allow_unverified: bool = False, client: Any = None):
    """:func:`fetch_verified` then :func:`load_verified`: ``(VerifiedModel, PyFuncModel)``."""
    vm = fetch_verified(model_uri, dst, allow_unverified=allow_unverified, client=client)
    return vm, load_verified(vm)


def open_verified_ranker(model_uri: str, dst: str | os.PathLike, command: str, *, allow_unverified: bool = False):
    """:func:`open_verified` of a ranker: a retriever is refused in one line naming ``command``
    (``"fairltr audit"``, ``"fairltr monitor"``)."""
    from fairltr.errors import ConfigError

    vm, pyfunc = open_verified(model_uri, dst, allow_unverified=allow_unverified)
    if vm.kind != "ranker":
        raise ConfigError(f"{model_uri} is a {vm.kind}; {command} audits rankers")
    return vm, pyfunc
