"""A decision log kept as a folder of Parquet shards (:mod:`fairltr.tracking.models.decision_log`).

Layout: ``<root>/date=YYYY-MM-DD/<time ns>-<pid>-<random>.parquet``, one shard per served request
(the UTC date of the request; ``<pid>-<random>`` keeps the names of several server workers
apart). A shard is written as a hidden temporary file beside its final name (``.<hex>.tmp.<name>``),
fsynced, renamed into place (atomic) and the folder fsynced before ``append`` returns. So a visible ``.parquet``
shard is always complete; a writer killed mid-write leaves only a hidden temporary file, which
:func:`read_parquet_log` skips and reports. Nothing is ever rewritten: the log is append-only.

Durability (``FAIRLTR_DECISION_LOG_SYNC`` where the model is served): ``full`` (the default) syncs
the shard's data and the folder before ``append`` returns, so an acknowledged request survives a
power cut or an OS crash too; ``process`` skips both syncs: the rename is still atomic and the
kernel keeps what was written, so a killed server (SIGKILL included) still loses at most the request
in flight, but an OS crash or power cut may lose the last seconds of shards (never leave a torn one
visible: a rename reaches the disk after the data it names on ext4's default ``data=ordered``,
XFS and btrfs; other file systems: keep ``full``). ``benchmarks/bench_serving.py --decision-log``
prints the cost of each.
"""

from __future__ import annotations

import io
import os
import secrets
import time
from pathlib import Path

import pandas as pd

from fairltr.errors import ConfigError, DataError
from fairltr.files import _fsync_file as _fsync_folder  # open read-only + fsync: a folder's entries too

__all__ = ["ParquetDecisionLog", "read_parquet_log", "SYNC_ENV", "SYNC_MODES"]

SYNC_ENV = "FAIRLTR_DECISION_LOG_SYNC"
SYNC_MODES = ("full", "process")


class ParquetDecisionLog:
    """Append-only Parquet shards under ``root`` (module docstring). Creating it checks that the
    folder can be created and written (a probe file written, fsynced and removed)."""

    def __init__(self, root: str | os.PathLike, sync: str = "full") -> None:
        if sync not in SYNC_MODES:
            raise ConfigError(f"{SYNC_ENV} must be one of {list(SYNC_MODES)}, got {sync!r}")
        self.sync = sync == "full"
        self.root = Path(root)
        self.uri = str(self.root)
        self._folder: Path | None = None  # the date folder last written (created and made durable)
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            probe = self.root / f".probe-{os.getpid()}-{secrets.token_hex(4)}"
            with open(probe, "wb") as fh:
                fh.write(b"ok")
                fh.flush()
                os.fsync(fh.fileno())
            probe.unlink()
        except OSError as exc:
            raise ConfigError(f"decision log {self.uri} cannot be written: {exc.strerror or exc}") from None

    def append(self, records) -> None:
        """Write ``records`` (one request's Arrow table) as one new shard, durable on return: the
        bytes to a hidden temporary file, ``fdatasync``, rename to the shard's name, ``fsync`` of
        the folder (so the rename survives a power cut too)."""
        import pyarrow.parquet as pq

        buf = io.BytesIO()
        # snappy, no statistics, no dictionaries: a small shard costs about 0.2 ms to encode (zstd 1 ms)
        pq.write_table(records, buf, compression="snappy", use_dictionary=False, write_statistics=False)
        stamp = records.column("time")[0].as_py() if records.num_rows else pd.Timestamp.now(tz="UTC")
        folder = self.root / f"date={stamp.strftime('%Y-%m-%d')}"
        if folder != self._folder:
            folder.mkdir(parents=True, exist_ok=True)  # several workers may race here: exist_ok
            _fsync_folder(self.root)  # the new date folder's entry is durable too
            self._folder = folder
        name = f"{time.time_ns()}-{os.getpid()}-{secrets.token_hex(6)}.parquet"
        tmp = folder / f".{secrets.token_hex(4)}.tmp.{name}"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileNotFoundError:  # the date folder was removed since: create it again
            self._folder = None
            return self.append(records)
        try:
            data = memoryview(buf.getbuffer())
            while data:
                data = data[os.write(fd, data):]
            if self.sync:
                os.fdatasync(fd)
        except BaseException:
            os.close(fd)
            tmp.unlink(missing_ok=True)
            raise
        os.close(fd)
        os.rename(tmp, folder / name)  # atomic: readers see the whole shard or nothing
        if self.sync:
            _fsync_folder(folder)

    def read(self) -> pd.DataFrame:
        return read_parquet_log(self.root)[0]


def read_parquet_log(root: str | os.PathLike) -> tuple[pd.DataFrame, list[str]]:
    """(every complete shard's records, the unfinished temporary shards skipped). A visible shard
    that does not read is a :class:`DataError` naming it (it was fsynced complete: the disk lost
    it), never silently left out."""
    import pyarrow.dataset as ds

    from fairltr.tracking.models.decision_log_schema import record_schema

    schema = record_schema()
    base = Path(root)
    if not base.is_dir():
        raise DataError(f"decision log {base}: no such folder")
    shards, unfinished = [], []
    for path in sorted(base.rglob("*")):
        if not path.is_file():
            continue
        if path.name.startswith("."):
            if ".tmp." in path.name:
                unfinished.append(str(path.relative_to(base)))
            continue
        if path.suffix == ".parquet":
            shards.append(str(path))
    if not shards:
        raise DataError(f"decision log {base} holds no records yet")
    try:
        table = ds.dataset(shards, format="parquet", schema=schema).to_table()
    except Exception:
        for shard in shards:  # name the shard that does not read
            try:
                ds.dataset([shard], format="parquet", schema=schema).to_table()
            except Exception as exc:
                raise DataError(f"decision log shard {shard} does not read: {' '.join(str(exc).split())[:200]}") from None
        raise
    frame = table.to_pandas()
    frame["policy_k"] = frame["policy_k"].astype("Int64")
    return frame, unfinished
