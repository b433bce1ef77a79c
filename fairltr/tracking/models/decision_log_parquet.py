"""A decision log kept as a folder of Parquet shards (:mod:`fairltr.tracking.models.decision_log`).

Layout: ``<root>/date=YYYY-MM-DD/<time ns>-<pid>-<random>.parquet``, one shard per served request
(the UTC date of the request; ``<pid>-<random>`` keeps the names of several server workers
apart). A shard is written as a hidden temporary file beside its final name (``.<hex>.tmp.<name>``),
fsynced, renamed into place with ``os.replace`` (atomic) and the folder fsynced
(:func:`fairltr.files.atomic_write_bytes`) before ``append`` returns. So a visible ``.parquet``
shard is always complete; a writer killed mid-write leaves only a hidden temporary file, which
:func:`read_parquet_log` skips and reports. Nothing is ever rewritten: the log is append-only.
"""

from __future__ import annotations

import io
import os
import secrets
import time
from pathlib import Path

import pandas as pd

from fairltr.errors import ConfigError, DataError

__all__ = ["ParquetDecisionLog", "read_parquet_log", "SCHEMA"]


def _schema():
    import pyarrow as pa

    return pa.schema([
        ("request_id", pa.string()), ("time", pa.timestamp("us", tz="UTC")), ("model_name", pa.string()),
        ("model_version", pa.string()), ("model_digest", pa.string()), ("policy", pa.string()),
        ("policy_method", pa.string()), ("policy_p", pa.float64()), ("policy_alpha", pa.float64()),
        ("policy_adjust", pa.bool_()), ("policy_k", pa.int64()), ("policy_target", pa.string()),
        ("query_id", pa.string()), ("item_id", pa.string()), ("row", pa.int64()), ("score", pa.float64()),
        ("rank", pa.int64()), ("fair_feasible", pa.bool_()), ("groups", pa.string()),
    ])


SCHEMA = _schema()


class ParquetDecisionLog:
    """Append-only Parquet shards under ``root`` (module docstring). Creating it checks that the
    folder can be created and written (a probe file written, fsynced and removed)."""

    def __init__(self, root: str | os.PathLike) -> None:
        self.root = Path(root)
        self.uri = str(self.root)
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

    def append(self, records: pd.DataFrame) -> None:
        """Write ``records`` (one request) as one new shard, durable on return."""
        import pyarrow as pa
        import pyarrow.parquet as pq

        from fairltr.files import atomic_write_bytes

        table = _table(records)
        buf = io.BytesIO()
        pq.write_table(table, buf, compression="zstd")
        stamp = records["time"].iloc[0] if len(records) else pd.Timestamp.now(tz="UTC")
        folder = self.root / f"date={stamp.strftime('%Y-%m-%d')}"
        name = f"{time.time_ns()}-{os.getpid()}-{secrets.token_hex(6)}.parquet"
        if not folder.is_dir():
            folder.mkdir(parents=True, exist_ok=True)  # several workers may race here: exist_ok
            _fsync_folder(self.root)  # the new date folder's entry is durable too
        atomic_write_bytes(folder / name, buf.getvalue())

    def read(self) -> pd.DataFrame:
        return read_parquet_log(self.root)[0]


def _table(records: pd.DataFrame):
    """``records`` as an Arrow table of :data:`SCHEMA` (the time column through naive UTC values)."""
    import pyarrow as pa

    arrays = []
    for field in SCHEMA:
        col = records[field.name]
        if field.name == "time":
            naive = pd.DatetimeIndex(col).tz_convert("UTC").tz_localize(None).as_unit("us").to_numpy()
            arrays.append(pa.array(naive, type=pa.timestamp("us")).cast(field.type))
        else:
            arrays.append(pa.array(col, type=field.type, from_pandas=True))
    return pa.Table.from_arrays(arrays, schema=SCHEMA)


def read_parquet_log(root: str | os.PathLike) -> tuple[pd.DataFrame, list[str]]:
    """(every complete shard's records, the unfinished temporary shards skipped). A visible shard
    that does not read is a :class:`DataError` naming it (it was fsynced complete: the disk lost
    it), never silently left out."""
    import pyarrow.dataset as ds

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
        table = ds.dataset(shards, format="parquet", schema=SCHEMA).to_table()
    except Exception:
        for shard in shards:  # name the shard that does not read
            try:
                ds.dataset([shard], format="parquet", schema=SCHEMA).to_table()
            except Exception as exc:
                raise DataError(f"decision log shard {shard} does not read: {' '.join(str(exc).split())[:200]}") from None
        raise
    frame = table.to_pandas()
    frame["policy_k"] = frame["policy_k"].astype("Int64")
    return frame, unfinished


def _fsync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
