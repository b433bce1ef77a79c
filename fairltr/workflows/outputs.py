"""All-or-nothing output folders: a job writes its files into a staging folder beside the
output folder and moves them into place only when every file is written. A job that fails
(or is interrupted) leaves the previous files untouched and no partial set behind; files a
previous run of the job wrote but this run does not produce are removed, so a new model never
sits beside stale metrics."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Iterable

from fairltr.errors import ConfigError

__all__ = ["OutputSet", "check_output_dir", "check_output_file"]


def check_output_dir(path: str | Path) -> Path:
    """Fail before any work when ``path`` cannot become a writable folder (it is a file, lies
    under a file, or its nearest existing parent is not writable)."""
    p = Path(path)
    probe = p
    while not probe.exists():
        if probe.parent == probe:
            break
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        where = "is a file" if probe == p else f"lies under the file {probe}"
        raise ConfigError(f"output folder {p} {where}")
    if not os.access(probe, os.W_OK | os.X_OK):
        raise ConfigError(f"output folder {p}: {probe} is not writable")
    return p


def check_output_file(path: str | Path, suffixes: Iterable[str] | None = None) -> Path:
    """Fail before any work when ``path`` cannot be written as a file (a folder, under a file,
    not writable, or a suffix outside ``suffixes``)."""
    from fairltr.files import check_writable

    p = Path(path)
    if suffixes is not None:
        allowed = tuple(s.lower() for s in suffixes)
        if p.suffix.lower() not in allowed:
            raise ConfigError(f"cannot write {p}: unsupported file type {p.suffix or '(none)'!r}; use one of {list(allowed)}")
    return check_writable(p)


class OutputSet:
    """Stage files for ``out_dir``; :meth:`commit` moves them in. ``managed`` lists every file
    name the job can produce: those this run does not produce are deleted at commit.

    Use as a context manager: an exception inside the block discards the staging folder.
    """

    def __init__(self, out_dir: str | Path, managed: Iterable[str] = ()) -> None:
        self.out_dir = check_output_dir(out_dir)
        self.managed = set(managed)
        self._staging: Path | None = None
        self._written: dict[str, Path] = {}

    def __enter__(self) -> "OutputSet":
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self._staging = Path(tempfile.mkdtemp(prefix=".fairltr-staging-", dir=self.out_dir))
        return self

    def __exit__(self, exc_type, exc, tb) -> None:
        if self._staging is not None:
            shutil.rmtree(self._staging, ignore_errors=True)
            self._staging = None

    def path(self, name: str) -> Path:
        """Where to write the file ``name`` now (inside the staging folder)."""
        if self._staging is None:
            raise RuntimeError("OutputSet must be used as a context manager")
        if Path(name).name != name:
            raise ConfigError(f"output file name {name!r} must not contain a folder")
        self._written[name] = self._staging / name
        return self._written[name]

    def final(self, name: str) -> Path:
        """Where ``name`` will be after :meth:`commit`."""
        return self.out_dir / name

    def commit(self) -> dict[str, Path]:
        """Move every staged file into ``out_dir`` (``os.replace``: atomic per file, same file
        system) and remove managed files this run did not produce. Returns {name: final path}."""
        missing = [n for n, p in self._written.items() if not p.exists()]
        if missing:
            raise RuntimeError(f"staged output(s) {missing} were never written")
        out: dict[str, Path] = {}
        for name, staged in self._written.items():
            target = self.out_dir / name
            os.replace(staged, target)
            out[name] = target
        for name in self.managed - set(self._written):
            stale = self.out_dir / name
            if stale.is_file():
                stale.unlink()
        return out
