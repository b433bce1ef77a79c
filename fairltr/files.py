"""Atomic file writes (and a cross-process file lock): a file is either the complete new version or the previous one, never a
truncated mix (full disk, Ctrl-C, a serialiser that fails midway).

Contract of :func:`atomic_path`: the caller writes a temporary file in the target's folder;
on success it is flushed to disk (fsync) and renamed over the target with ``os.replace``
(atomic on POSIX and Windows); on any exception, KeyboardInterrupt included, the temporary
file is removed and the target is left as it was.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
from pathlib import Path
from typing import Iterator

from fairltr.errors import ConfigError

__all__ = ["atomic_path", "atomic_write_bytes", "atomic_write_text", "check_writable", "file_lock", "state_dir"]


def state_dir() -> Path:
    """fairltr's state folder: ``$FAIRLTR_STATE_DIR``, else ``$XDG_STATE_HOME/fairltr``, else
    ``~/.local/state/fairltr`` (pending run ends, the corpus-embedding cache)."""
    base = os.environ.get("FAIRLTR_STATE_DIR")
    if base:
        return Path(base)
    return Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state") / "fairltr"

PathLike = str | os.PathLike


def check_writable(path: PathLike) -> Path:
    """Fail before any work when ``path`` cannot be written as a file.

    Raises :class:`ConfigError` naming the path when it is a folder, lies under an existing
    file, or its nearest existing folder is not writable (missing folders will be created).
    """
    p = Path(path)
    if p.is_dir():
        raise ConfigError(f"cannot write {p}: it is a folder")
    probe = p.parent
    while not probe.exists() and probe.parent != probe:
        probe = probe.parent
    if probe.exists() and not probe.is_dir():
        raise ConfigError(f"cannot write {p}: {probe} is a file, not a folder")
    if not os.access(probe, os.W_OK | os.X_OK):  # the new file is created in (and renamed within) it
        raise ConfigError(f"cannot write {p}: the folder {probe} is not writable")
    return p


def _create_temp(target: Path) -> Path:
    """A new empty file beside ``target`` whose name ends with the target's name (so writers
    that infer a format or compression from the suffix still see it), created with the
    permissions an ordinary ``open(target, "w")`` would give."""
    for _ in range(100):
        tmp = target.parent / f".{secrets.token_hex(4)}.tmp.{target.name}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:
            continue
        os.close(fd)
        return tmp
    raise FileExistsError(f"cannot create a temporary file beside {target}")


def _fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _fsync_dir(folder: Path) -> None:
    """Persist the rename itself (POSIX); a no-op where folders cannot be opened."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; on a clean exit it replaces ``path`` atomically.

    The parent folders are created. On success the temporary file is fsynced and renamed over
    ``path`` (keeping an existing file's permission bits); on any exception (KeyboardInterrupt
    included) it is removed and ``path`` is untouched. The temporary file exists (empty) when the
    body starts; the body may overwrite or replace it, but must not leave it missing.
    """
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = _create_temp(target)
    try:
        yield tmp
        if not tmp.is_file():
            raise FileNotFoundError(f"atomic write of {target}: the temporary file {tmp} is gone")
        _fsync_file(tmp)
        if target.exists():
            os.chmod(tmp, stat.S_IMODE(target.stat().st_mode))
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise
    _fsync_dir(target.parent)


def atomic_write_bytes(path: PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_path`); returns the path."""
    with atomic_path(path) as tmp:
        with open(tmp, "wb") as fh:
            fh.write(data)
    return Path(path)


def atomic_write_text(path: PathLike, text: str, encoding: str = "utf-8") -> Path:
    """Write ``text`` to ``path`` atomically (see :func:`atomic_path`); returns the path."""
    return atomic_write_bytes(path, text.encode(encoding))


@contextlib.contextmanager
def file_lock(path: PathLike, timeout: float = 120.0) -> Iterator[Path]:
    """An exclusive advisory lock (``fcntl.flock``) on the file ``path`` (created if needed),
    held for the ``with`` block: processes on this machine that take the same lock run the block
    one at a time (e.g. the first use of a fresh SQLite database, whose table creation is not
    safe under concurrency). Raises :class:`ConfigError` after ``timeout`` seconds."""
    import fcntl
    import time

    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(p, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise ConfigError(f"could not lock {p} within {timeout:.0f} s (another process holds it)") from None
                time.sleep(0.05)
        try:
            yield p
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
