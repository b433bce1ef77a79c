"""Readers for ranking files: the DELTR paper's CSVs, LETOR/SVMlight, CSV/Parquet with names.

Every reader returns a ranking table (see :mod:`fairltr.data`) and raises
:class:`~fairltr.errors.DataError` naming the file, line, column or query of a problem.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

import numpy as np
import pandas as pd

from fairltr.data import validate_ranking_frame
from fairltr.errors import DataError

__all__ = ["read_deltr_csv", "read_letor", "read_table", "read_ranking", "write_table"]

PathLike = str | os.PathLike


def _check_file(path: PathLike) -> Path:
    p = Path(path)
    if not p.exists():
        raise DataError(f"file not found: {p}")
    if p.is_dir():
        raise DataError(f"expected a file, got a directory: {p}")
    if p.stat().st_size == 0:
        raise DataError(f"empty file: {p}")
    return p


def read_deltr_csv(path: PathLike, *, feature_prefix: str = "x") -> pd.DataFrame:
    """The DELTR paper's header-less CSV: ``query_id, protected, x1..xk, judgment``.

    Returns columns ``query_id`` (int), ``protected`` (int), ``x1..xk`` (float), ``judgment`` (float).
    """
    p = _check_file(path)
    try:
        raw = pd.read_csv(p, header=None)
    except pd.errors.EmptyDataError:
        raise DataError(f"empty file: {p}") from None
    except pd.errors.ParserError as exc:
        raise DataError(f"cannot parse {p} as CSV: {exc}") from None
    if raw.shape[1] < 3:
        raise DataError(
            f"{p}: expected at least 3 columns (query_id, protected, [features...], judgment), got {raw.shape[1]}"
        )
    k = raw.shape[1] - 3
    names = ["query_id", "protected", *[f"{feature_prefix}{i}" for i in range(1, k + 1)], "judgment"]
    raw.columns = names
    validate_ranking_frame(
        raw, query="query_id", columns=names[2:], group="protected", source=str(p)
    )
    q = raw["query_id"].to_numpy(dtype=np.float64)
    if np.all(q == np.round(q)):
        raw["query_id"] = q.astype(np.int64)
    raw["protected"] = raw["protected"].to_numpy(dtype=np.float64).astype(np.int64)
    return raw


def read_letor(path: PathLike, *, group_feature: int | None = None) -> pd.DataFrame:
    """LETOR / SVMlight: ``<label> qid:<id> <fid>:<value> ... [# comment]``.

    Columns: ``query_id``, ``judgment``, ``f<fid>`` per feature id (missing ids = 0). With
    ``group_feature=j``, feature ``j`` becomes the integer ``protected`` column.
    """
    p = _check_file(path)
    labels: list[float] = []
    qids: list[str] = []
    rows: list[dict[int, float]] = []
    with open(p, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, start=1):
            line = line.split("#", 1)[0].strip()
            if not line:
                continue
            parts = line.split()
            try:
                label = float(parts[0])
            except ValueError:
                raise DataError(f"{p}:{lineno}: label {parts[0]!r} is not a number") from None
            if not np.isfinite(label):
                raise DataError(f"{p}:{lineno}: label {parts[0]!r} is not finite")
            if len(parts) < 2 or not parts[1].startswith("qid:"):
                raise DataError(f"{p}:{lineno}: second field must be 'qid:<id>', got {parts[1:2]}")
            feats: dict[int, float] = {}
            for tok in parts[2:]:
                fid, sep, val = tok.partition(":")
                if not sep:
                    raise DataError(f"{p}:{lineno}: feature {tok!r} is not '<id>:<value>'")
                try:
                    fid_i, val_f = int(fid), float(val)
                except ValueError:
                    raise DataError(f"{p}:{lineno}: feature {tok!r} is not '<int>:<number>'") from None
                if not np.isfinite(val_f):
                    raise DataError(f"{p}:{lineno}: non-finite value in {tok!r}")
                if fid_i in feats:
                    raise DataError(f"{p}:{lineno}: feature id {fid_i} given twice")
                feats[fid_i] = val_f
            labels.append(label)
            qids.append(parts[1][4:])
            rows.append(feats)
    if not rows:
        raise DataError(f"empty file: {p} (no data lines)")
    fids = sorted({f for r in rows for f in r})
    mat = np.zeros((len(rows), len(fids)))
    col = {f: i for i, f in enumerate(fids)}
    for i, r in enumerate(rows):
        for f, v in r.items():
            mat[i, col[f]] = v
    df = pd.DataFrame(mat, columns=[f"f{f}" for f in fids])
    df.insert(0, "query_id", qids)
    df["judgment"] = labels
    if group_feature is not None:
        name = f"f{group_feature}"
        if name not in df.columns:
            raise DataError(f"{p}: group feature {group_feature} does not occur; feature ids: {fids}")
        df = df.rename(columns={name: "protected"})
        validate_ranking_frame(df, query="query_id", columns=[], group="protected", source=str(p))
        df["protected"] = df["protected"].astype(np.int64)
    return df


def read_table(
    path: PathLike,
    *,
    query: str = "query_id",
    group: str | None = "protected",
    judgment: str | None = "judgment",
    features: Sequence[str] | None = None,
    item: str | None = None,
) -> pd.DataFrame:
    """CSV (with header) or Parquet with named columns, validated for ranking use."""
    p = _check_file(path)
    try:
        if p.suffix.lower() in (".parquet", ".pq"):
            df = pd.read_parquet(p)
        else:
            df = pd.read_csv(p)
    except pd.errors.EmptyDataError:
        raise DataError(f"empty file: {p}") from None
    except (pd.errors.ParserError, ValueError, OSError) as exc:
        raise DataError(f"cannot read {p}: {exc}") from None
    cols = list(features or []) + ([judgment] if judgment else [])
    validate_ranking_frame(df, query=query, columns=cols, group=group, item=item, source=str(p))
    return df


def read_ranking(path: PathLike, fmt: str = "auto", **kw) -> pd.DataFrame:
    """Dispatch on ``fmt`` in {auto, deltr, letor, csv, parquet}.

    ``auto``: ``.parquet`` -> parquet; ``.svm/.letor/.txt`` whose first line has ``qid:`` -> LETOR;
    a CSV whose first line parses as numbers -> DELTR layout; else a CSV with a header.
    """
    p = _check_file(path)
    if fmt == "auto":
        if p.suffix.lower() in (".parquet", ".pq"):
            fmt = "parquet"
        else:
            with open(p, encoding="utf-8", errors="replace") as fh:
                first = fh.readline()
            if "qid:" in first:
                fmt = "letor"
            else:
                try:
                    [float(x) for x in first.strip().split(",")]
                    fmt = "deltr"
                except ValueError:
                    fmt = "csv"
    if fmt == "deltr":
        return read_deltr_csv(p)
    if fmt == "letor":
        return read_letor(p, **{k: v for k, v in kw.items() if k == "group_feature"})
    if fmt in ("csv", "parquet"):
        return read_table(p, **{k: v for k, v in kw.items() if k != "group_feature"})
    raise DataError(f"unknown format {fmt!r}; use auto, deltr, letor, csv or parquet")


def write_table(df: pd.DataFrame, path: PathLike) -> Path:
    """Write CSV or Parquet by suffix, creating parent folders."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.suffix.lower() in (".parquet", ".pq"):
        df.to_parquet(p, index=False)
    else:
        df.to_csv(p, index=False)
    return p
