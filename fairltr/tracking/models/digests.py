"""Content digests of logged fairltr models: computed, and recorded in the tracking store.

Digest (tag ``fairltr.digest``, value ``sha256:<hex>``): SHA-256 over the lines
``<relative POSIX path> NUL <sha256 hex of the file's bytes> LF`` of every regular file of the
logged model's folder, sorted by path, except the top-level ``registered_model_meta`` that
MLflow's download client writes (the full statement is in :mod:`fairltr.tracking.models.verify`).
:func:`record_digest` is what the model loggers (``log_ranker_model``, ``log_retriever_model``)
call; checking a digest on load is :func:`fairltr.tracking.models.verify.fetch_verified`. This module
imports no model class, so the loggers and the verifying loader do not import each other.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

from fairltr.errors import DataError

__all__ = ["DIGEST_TAG", "ModelRejected", "folder_digest", "record_digest", "register_with_digest", "download_artifacts",
           "withdraw_registration"]

DIGEST_TAG = "fairltr.digest"
_PREFIX = "sha256:"
_CHUNK = 1 << 20


class ModelRejected(DataError):
    """A model that does not load, does not match its recorded digest, or has none (one line)."""


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            h.update(block)
    return h.hexdigest()


def folder_digest(root: str | os.PathLike) -> str:
    """``sha256:<hex>`` of every regular file under ``root`` (see the module docstring).
    Raises :class:`ModelRejected` for a symbolic link or another non-regular file."""
    base = Path(root)
    skip = {"registered_model_meta"}
    entries: list[tuple[str, str]] = []
    for dirpath, dirnames, filenames in os.walk(base, followlinks=False):
        here = Path(dirpath)
        for name in sorted(dirnames):
            if (here / name).is_symlink():
                raise ModelRejected(f"model folder holds a symbolic link {(here / name).relative_to(base).as_posix()!r}")
        for name in filenames:
            p = here / name
            rel = p.relative_to(base).as_posix()
            if rel in skip:
                continue
            if p.is_symlink() or not p.is_file():
                raise ModelRejected(f"model folder holds {rel!r}, which is not a regular file")
            entries.append((rel, _file_sha256(p)))
    h = hashlib.sha256()
    for rel, digest in sorted(entries):
        h.update(rel.encode("utf-8") + b"\0" + digest.encode("ascii") + b"\n")
    return _PREFIX + h.hexdigest()


def download_artifacts(uri: str, dst: Path) -> Path:
    """The artifacts of ``uri`` in ``dst`` (no progress bar unless the user asked for one)."""
    import mlflow

    key = "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR"
    previous = os.environ.get(key)
    if previous is None:
        os.environ[key] = "false"
    try:
        return Path(mlflow.artifacts.download_artifacts(artifact_uri=uri, dst_path=str(dst)))
    finally:
        if previous is None:
            os.environ.pop(key, None)


def _same_files(local: Path, logged: Path) -> str | None:
    """None when every file under ``local`` (a file or a folder) has the same bytes at ``logged``;
    else the first relative path that differs."""
    if local.is_file():
        return None if logged.is_file() and _file_sha256(local) == _file_sha256(logged) else logged.name
    for p in sorted(local.rglob("*")):
        if p.is_file():
            q = logged / p.relative_to(local)
            if not q.is_file() or _file_sha256(p) != _file_sha256(q):
                return p.relative_to(local).as_posix()
    return None


def record_digest(info: Any, uploaded: Mapping[str, str | os.PathLike], register: str | None = None,
                  client: Any = None, version_tags: Mapping[str, str] | None = None) -> str:
    """Compute the digest of the model just logged (``info``: MLflow's ``ModelInfo``) and write it
    as tag ``fairltr.digest`` on the logged model; then, when ``register`` is given, register the
    model as a new version of ``register`` WITH that tag in the one call that creates it (so no
    version ever exists without its digest, even when the job is interrupted in between), and
    set ``info.registered_model_version``. ``uploaded`` maps paths inside the model folder (or
    ``artifact:<key>`` for a pyfunc artifact, wherever MLmodel says it lies) to the local files /
    folders that were uploaded there; they must be byte-identical in the store. ``version_tags``:
    more tags the version is created with. Returns the digest. A Ctrl-C waits for the whole of
    it (:func:`fairltr.interrupts.deferred`)."""
    import mlflow
    from mlflow.models import Model

    from fairltr.interrupts import deferred

    client = client or mlflow.MlflowClient()
    # a Ctrl-C waits for this block (a fraction of a second; MAX_DEFER_SECONDS at most): cut, the
    # download's threads would go on writing into the folder being removed, and the registration
    # could be left between its creating call and the version number this function returns
    with deferred(), tempfile.TemporaryDirectory(prefix="fairltr-digest-", ignore_cleanup_errors=True) as tmp:
        folder = download_artifacts(info.model_uri, Path(tmp))
        pyfunc = (Model.load(str(folder / "MLmodel")).flavors or {}).get("python_function") or {}
        for rel, local in uploaded.items():
            if rel.startswith("artifact:"):
                rel = ((pyfunc.get("artifacts") or {}).get(rel[len("artifact:"):]) or {}).get("path") or rel
            bad = _same_files(Path(local), folder / rel)
            if bad is not None:
                raise ModelRejected(f"the logged model {info.model_uri} differs from what was uploaded at {rel} "
                                    f"({bad}); the artifact store changed it during logging")
        digest = folder_digest(folder)
        client.set_logged_model_tags(info.model_id, {DIGEST_TAG: digest})
        if register:
            info.registered_model_version = register_with_digest(info, register, digest, version_tags)
    return digest


def register_with_digest(info: Any, name: str, digest: str, tags: Mapping[str, str] | None = None) -> int:
    """Register the logged model ``info`` as a new version of ``name`` carrying ``fairltr.digest``
    (and ``tags``) from its creation; returns the version number."""
    import mlflow

    from fairltr.tracking.runs.config import registry_prints_follow_log_level

    with registry_prints_follow_log_level():
        mv = mlflow.register_model(info.model_uri, name, tags={**(tags or {}), DIGEST_TAG: digest})
    return int(mv.version)


def withdraw_registration(name: str, run_id: str) -> list[str]:
    """Delete the versions of ``name`` registered from ``run_id``: what a command interrupted
    after it registered leaves behind (its run ends KILLED, and no version from it stays in the
    registry). When that leaves ``name`` without versions and it was created after the run
    started (by this command), the registered model goes too. Best effort (a
    Ctrl-C waits for it, :func:`fairltr.interrupts.deferred`); returns the versions deleted."""
    import mlflow

    from fairltr.interrupts import deferred

    client = mlflow.MlflowClient()
    deleted: list[str] = []
    with deferred():
        try:
            for mv in client.search_model_versions(f"run_id = '{run_id}'"):
                if mv.name == name:
                    client.delete_model_version(name, mv.version)
                    deleted.append(str(mv.version))
            if deleted:
                since_ms = client.get_run(run_id).info.start_time
                model = client.get_registered_model(name)
                if not client.search_model_versions(f"name = '{name}'") and \
                        (model.creation_timestamp or 0) >= since_ms and not model.aliases:
                    client.delete_registered_model(name)
        except Exception:  # the store is gone: the version keeps its digest; the run says KILLED
            pass
    return deleted
