"""Logging a fairltr model in the loader-module form (:mod:`fairltr.tracking.models.verified_loader`),
and the staged fairltr package (:func:`stage_package`) and wheel such a model carries.

A model folder in this form::

    MLmodel                 python_function: loader_module fairltr.tracking.models.verified_loader,
                            config (the model's settings, file names), NO code entry
    artifacts/...           the model's own files (weights; a retriever's package)
    ranker_code.py          the models-from-code entry of the earlier form (not run; kept so that the
                            folder reads as before)
    code/fairltr/...        the fairltr package as it was when the model was logged (never imported
                            by MLflow: there is no code entry)
    code/fairltr-<v>+g<h>-py3-none-any.whl   the same package as a wheel, listed in requirements.txt
                            as ./code/<wheel>: a non-local env manager (virtualenv, uv) installs it,
                            so the environment it builds has fairltr (not on PyPI) and its loader
    requirements.txt, python_env.yaml, conda.yaml, input_example.json, serving_input_example.json

The wheel is written by :func:`build_wheel` (a zip with ``METADATA``, ``WHEEL`` and ``RECORD``; no
build backend runs), byte-identical for identical sources: fixed timestamps, sorted entries. Its
version carries ``+g<first 12 hex of the package's content hash>``, so MLflow (which names its
cached environments by the requirement lines) builds a new environment for changed fairltr code.
"""

from __future__ import annotations

import base64
import hashlib
import io
import shutil
import zipfile
from pathlib import Path
from typing import Any, Mapping

__all__ = ["build_wheel", "log_loader_model", "stage_package", "wheel_requirement"]

_EPOCH = (1980, 1, 1, 0, 0, 0)


def stage_package(dest: Path) -> Path:
    """Copy the importable ``fairltr`` package (no bytecode) to ``dest/fairltr`` (a model's ``code/``)."""
    import fairltr

    src = Path(fairltr.__file__).resolve().parent
    out = dest / "fairltr"
    shutil.copytree(src, out, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.db"))
    return out


def _tree_hash(package: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(package.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(package).as_posix().encode() + b"\0" + hashlib.sha256(p.read_bytes()).digest())
    return h.hexdigest()


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_wheel(package: Path, dest: Path, version: str) -> Path:
    """A pure-Python wheel of the package folder ``package`` (its name is the import name) in
    ``dest``, version ``<version>+g<content hash>`` (module docstring); returns its path."""
    name = package.name
    full = f"{version.split('+')[0]}+g{_tree_hash(package)[:12]}"
    info = f"{name}-{full}.dist-info"
    files: list[tuple[str, bytes]] = [(f"{name}/{p.relative_to(package).as_posix()}", p.read_bytes())
                                      for p in sorted(package.rglob("*")) if p.is_file()]
    files.append((f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {full}\n".encode()))
    files.append((f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: fairltr\nRoot-Is-Purelib: true\nTag: py3-none-any\n"))
    record = "".join(f"{arc},{_record_hash(data)},{len(data)}\n" for arc, data in files) + f"{info}/RECORD,,\n"
    files.append((f"{info}/RECORD", record.encode()))
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / f"{name}-{full}-py3-none-any.whl"
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for arc, data in files:
            zi = zipfile.ZipInfo(arc, date_time=_EPOCH)
            zi.external_attr = 0o644 << 16
            zi.compress_type = zipfile.ZIP_DEFLATED
            zf.writestr(zi, data)
    out.write_bytes(buf.getvalue())
    return out


def wheel_requirement(wheel: Path) -> str:
    """The requirements.txt line of the staged wheel (relative to the model folder, where MLflow's
    virtualenv / uv environment manager runs pip)."""
    return f"./code/{wheel.name}"


class _FolderFlavor:
    """``Model.log``'s flavor: pyfunc's ``save_model`` in the loader-module form, then the files
    fairltr ships copied into the folder before MLflow uploads it."""

    __name__ = "mlflow.pyfunc"

    def __init__(self, files: Mapping[str, Path]) -> None:
        self.files = dict(files)

    def save_model(self, path: str, mlflow_model: Any, **kwargs: Any) -> None:
        import mlflow.pyfunc

        mlflow.pyfunc.save_model(path=path, mlflow_model=mlflow_model, **kwargs)
        for rel, src in self.files.items():
            target = Path(path) / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if Path(src).is_dir():
                shutil.copytree(src, target, dirs_exist_ok=True)
            else:
                shutil.copyfile(src, target)


def log_loader_model(name: str, files: Mapping[str, Path], model_config: Mapping[str, Any], *,
                     pip_requirements: list[str], **log_kwargs: Any):
    """Log a model whose MLmodel names fairltr's verifying loader (module docstring): ``files``
    maps paths inside the model folder to local files or folders. Returns MLflow's ``ModelInfo``.
    The input-example check MLflow runs while logging loads the folder just written (unverified,
    no decision log: :func:`~fairltr.tracking.models.verified_loader.logging_model`)."""
    from mlflow.models import Model

    from fairltr.tracking.models.verified_loader import LOADER_MODULE, logging_model

    with logging_model():
        return Model.log(artifact_path=None, name=name, flavor=_FolderFlavor(files), flavor_name="pyfunc",
                         loader_module=LOADER_MODULE, data_path=None, code_paths=None,
                         pip_requirements=pip_requirements, model_config=dict(model_config), **log_kwargs)
