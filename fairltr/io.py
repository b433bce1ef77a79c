"""Readers for ranking files: the DELTR paper's CSVs, LETOR/SVMlight, CSV/Parquet with names.

Every reader returns a ranking table (see :mod:`fairltr.data`) whose ``attrs`` record the
file and the 1-based line of every row, and raises :class:`~fairltr.errors.DataError` naming
the file, line, column, query and value of a problem; later errors on the frame (feature
selection, training, scoring) name the same file and line.
"""

from __future__ import annotations

import bz2
import csv
import gzip
import io
import lzma
import os
import re
from pathlib import Path
from typing import BinaryIO, Sequence

import numpy as np
import pandas as pd

from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.data import ORIGIN_KEY, check_table, select_features, set_origin
from fairltr.errors import ConfigError, DataError, one_line
from fairltr.files import atomic_path, check_writable

__all__ = ["read_deltr_csv", "read_letor", "read_table", "read_ranking", "write_table", "table_format",
           "LAYOUT_COLUMNS"]

PathLike = str | os.PathLike

LAYOUT_COLUMNS = RankingColumns(query="query_id", group="protected", judgment="judgment")
"""The fixed column names of the header-less layouts: the DELTR paper's CSV and LETOR/SVMlight
(whose group column exists only with ``group_feature``)."""


def _check_file(path: PathLike) -> Path:
    p = Path(path)
    if not p.exists():
        raise DataError(f"file not found: {p}")
    if p.is_dir():
        raise DataError(f"expected a file, got a directory: {p}")
    if p.stat().st_size == 0:
        raise DataError(f"empty file: {p}")
    return p


# Compressed CSVs pandas infers from the suffix; the line bookkeeping reads them the same way.
_DECOMPRESS = {".gz": gzip.open, ".bz2": bz2.open, ".xz": lzma.open}
_OPAQUE = (".zip", ".zst", ".tar")  # pandas reads these; their lines are not counted


def _open_raw(p: Path) -> BinaryIO | None:
    """The file's (decompressed) bytes, or None for archive formats."""
    suffix = p.suffix.lower()
    if suffix in _OPAQUE:
        return None
    opener = _DECOMPRESS.get(suffix)
    return opener(p, "rb") if opener else open(p, "rb")


def _line_of_offset(data: bytes, offset: int) -> int:
    """1-based line of byte ``offset`` (lines end in \\n, \\r\\n or, in old Mac files, \\r)."""
    if b"\n" in data:
        return data.count(b"\n", 0, offset) + 1
    return data.count(b"\r", 0, offset) + 1


def _encoding_error(p: Path) -> DataError:
    """DataError naming the 1-based line and the value of the first byte that is not UTF-8."""
    fh = _open_raw(p)
    if fh is None:
        return DataError(f"{p}: not valid UTF-8; the file must be UTF-8 encoded")
    with fh:
        data = fh.read()
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = _line_of_offset(data, exc.start)
        return DataError(f"{p}:{line}: byte 0x{data[exc.start]:02x} is not valid UTF-8; "
                         "the file must be UTF-8 encoded (re-save it as UTF-8)")
    return DataError(f"{p}: not valid UTF-8; the file must be UTF-8 encoded")


def _content_lines(fh: BinaryIO) -> int:
    """Number of lines up to the last non-blank byte (trailing blank lines are not counted)."""
    total = trailing = 0
    seen = False
    for chunk in iter(lambda: fh.read(1 << 20), b""):
        total += chunk.count(b"\n")
        body = chunk.rstrip(b" \t\r\n\x0b\x0c")
        if body:
            seen = True
            trailing = chunk.count(b"\n", len(body))
        else:
            trailing += chunk.count(b"\n")
    return total - trailing + 1 if seen else 0


def _csv_row_lines(p: Path, n_rows: int, header: bool) -> int | np.ndarray | None:
    """The 1-based line of every data row pandas read from ``p`` (defaults of ``read_csv``:
    blank and whitespace-only lines skipped, quoted fields may span lines).

    Fast path: when the file has exactly one line per record, row r is line r + 1 + header.
    Otherwise the non-blank lines are found with numpy (no quote character in the file) or the
    records re-scanned with :mod:`csv` (same quoting rules). None when that cannot be
    established (archives, counts that disagree with pandas)."""
    fh = _open_raw(p)
    if fh is None:
        return None
    with fh:
        if _content_lines(fh) == n_rows + int(header):
            return 1 + int(header)
    fh = _open_raw(p)
    with fh:
        data = fh.read()
    if b'"' not in data:
        starts = _nonblank_lines(data)
    else:
        starts = []
        reader = csv.reader(io.StringIO(data.decode("utf-8-sig"), newline=""))
        end = 0
        try:
            for rec in reader:
                begin, end = end + 1, reader.line_num
                if rec and not (len(rec) == 1 and not rec[0].strip()):
                    starts.append(begin)
        except csv.Error:
            return None
        starts = np.asarray(starts, dtype=np.int64)
    starts = starts[int(header):]
    return starts if len(starts) == n_rows else None


def _nonblank_lines(data: bytes) -> np.ndarray:
    """1-based numbers of the lines holding something other than whitespace. Vectorised: only
    lines that start with whitespace are inspected one by one."""
    arr = np.frombuffer(data, dtype=np.uint8)
    sep = ord("\n") if b"\n" in data else ord("\r")
    begins = np.concatenate([[0], np.flatnonzero(arr == sep) + 1])
    begins = begins[begins < len(arr)]
    ends = np.append(begins[1:], len(arr))
    keep = np.ones(len(begins), dtype=bool)
    maybe = np.flatnonzero(np.isin(arr[begins], np.frombuffer(b" \t\r\n\x0b\x0c", dtype=np.uint8)))
    for i in maybe.tolist():
        keep[i] = bool(data[begins[i]:ends[i]].strip())
    return np.flatnonzero(keep).astype(np.int64) + 1


_FIELDS = re.compile(r"Expected (\d+) fields in line (\d+), saw (\d+)")
_EOF_IN_STRING = re.compile(r"EOF inside string starting at row (\d+)")


def _na_kwargs(na_values: Sequence[str] | None) -> dict:
    """pandas' missing-value markers: its defaults (None), or exactly ``na_values`` (``[""]``:
    only empty cells are missing, so a category written ``NA`` stays a category)."""
    return {} if na_values is None else {"keep_default_na": False, "na_values": list(na_values)}


def _read_csv(p: Path, header: bool, na_values: Sequence[str] | None = None) -> pd.DataFrame:
    """pandas.read_csv with every failure turned into a one-line DataError naming the file
    (and the line where pandas or the codec says it is)."""
    try:
        df = pd.read_csv(p, header=0 if header else None, **_na_kwargs(na_values))
    except pd.errors.EmptyDataError:
        raise DataError(f"empty file: {p}") from None
    except UnicodeDecodeError:
        raise _encoding_error(p) from None
    except pd.errors.ParserError as exc:
        m = _FIELDS.search(str(exc))
        if m:
            expected, line, saw = m.groups()
            raise DataError(f"{p}:{line}: cannot parse as CSV: {saw} fields where the "
                            f"{'header' if header else 'first line'} has {expected}") from None
        m = _EOF_IN_STRING.search(str(exc))
        if m:  # pandas counts lines from 0
            raise DataError(f"{p}:{int(m.group(1)) + 1}: cannot parse as CSV: a quoted field starting on this "
                            f"line is never closed (unterminated quote)") from None
        raise DataError(f"{p}: cannot parse as CSV: {one_line(exc)}") from None
    except Exception as exc:  # OSError, ValueError, codec errors of compressed files ...
        raise DataError(f"{p}: cannot read as CSV: {one_line(exc)}") from None
    set_origin(df, p, _csv_row_lines(p, len(df), header))
    return df


def _check_header(p: Path, df: pd.DataFrame) -> None:
    """pandas renames a repeated header name ``x`` to ``x.1``: make that an error instead."""
    suspects = [c for c in df.columns if isinstance(c, str) and re.fullmatch(r".+\.\d+", c)
                and c.rsplit(".", 1)[0] in df.columns]
    if not suspects:
        return
    fh = _open_raw(p)
    if fh is None:
        return
    with fh:
        first = fh.readline().decode("utf-8-sig", errors="replace")
    names = next(csv.reader([first]), [])
    dup = [n for n in dict.fromkeys(names) if names.count(n) > 1]
    if dup:
        raise DataError(f"{p}:1: column name(s) {dup} occur more than once in the header")


def _check_na_categories(p: Path, df: pd.DataFrame, c: RankingColumns) -> None:
    """A group cell that pandas' default markers read as missing although the file holds text
    there (``NA``, ``N/A``, ``null``, ...): refused, naming the line and the option that keeps it."""
    for name in c.groups:
        if name not in df.columns or not df[name].isna().any():
            continue
        raw = pd.read_csv(p, usecols=[name], dtype=str, keep_default_na=False)[name]
        pos = np.flatnonzero(df[name].isna().to_numpy() & (raw.str.strip() != "").to_numpy())
        if len(pos):
            from fairltr.data import locate_row

            text = raw.iloc[int(pos[0])]
            raise DataError(f"{locate_row(df, int(pos[0]))}: group column {name!r} reads {text!r}, which pandas "
                            f"takes for a missing value by default ({len(pos)} such cell(s)); if {text!r} is a "
                            "category, pass --na-values '' (only empty cells are missing), or list the markers "
                            "that mean missing (--na-values 'N/A', repeatable)")


def read_deltr_csv(path: PathLike, *, feature_prefix: str = "x") -> pd.DataFrame:
    """The DELTR paper's header-less CSV: ``query_id, protected, x1..xk, judgment``.

    Returns columns ``query_id`` (int), ``protected`` (int), ``x1..xk`` (float), ``judgment``
    (float) (:data:`LAYOUT_COLUMNS`); ``df.attrs`` records the file and the line of every row (data row r is line r+1
    unless blank lines intervene) for later error messages.
    """
    p = _check_file(path)
    raw = _read_csv(p, header=False)
    if raw.shape[1] < 3:
        raise DataError(
            f"{p}: expected at least 3 columns (query_id, protected, [features...], judgment), got {raw.shape[1]}"
        )
    k = raw.shape[1] - 3
    c = LAYOUT_COLUMNS
    names = [c.query, c.group, *[f"{feature_prefix}{i}" for i in range(1, k + 1)], c.judgment]
    raw.columns = names
    check_table(raw, c, numeric=names[2:-1], source=str(p))
    q = raw[c.query].to_numpy(dtype=np.float64) if pd.api.types.is_numeric_dtype(raw[c.query]) else None
    if q is not None and np.all(q == np.round(q)):
        raw[c.query] = q.astype(np.int64)
    raw[c.group] = raw[c.group].to_numpy(dtype=np.float64).astype(np.int64)
    return raw


def _letor_features(p: Path, lineno: int, tokens: Sequence[str]) -> dict[int, float]:
    """The ``<fid>:<value>`` tokens of one LETOR line as {feature id: finite value}."""
    feats: dict[int, float] = {}
    for tok in tokens:
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
    return feats


def _letor_line(p: Path, lineno: int, parts: Sequence[str]) -> tuple[float, str, dict[int, float]]:
    """(label, query id, features) of one non-blank LETOR line split on whitespace."""
    try:
        label = float(parts[0])
    except ValueError:
        raise DataError(f"{p}:{lineno}: label {parts[0]!r} is not a number") from None
    if not np.isfinite(label):
        raise DataError(f"{p}:{lineno}: label {parts[0]!r} is not finite")
    if len(parts) < 2 or not parts[1].startswith("qid:"):
        raise DataError(f"{p}:{lineno}: second field must be 'qid:<id>', got {list(parts[1:2])}")
    if not parts[1][4:]:
        raise DataError(f"{p}:{lineno}: empty query id in {parts[1]!r}")
    return label, parts[1][4:], _letor_features(p, lineno, parts[2:])


def _letor_frame(labels: list[float], qids: list[str], rows: list[dict[int, float]]) -> tuple[pd.DataFrame, list[int]]:
    """The table of parsed LETOR lines (missing feature ids = 0) and its sorted feature ids."""
    fids = sorted({f for r in rows for f in r})
    mat = np.zeros((len(rows), len(fids)))
    col = {f: i for i, f in enumerate(fids)}
    for i, r in enumerate(rows):
        for f, v in r.items():
            mat[i, col[f]] = v
    c = LAYOUT_COLUMNS
    df = pd.DataFrame(mat, columns=[f"f{f}" for f in fids])
    df.insert(0, c.query, qids)
    df[c.judgment] = labels
    return df, fids


def read_letor(path: PathLike, *, group_feature: int | None = None) -> pd.DataFrame:
    """LETOR / SVMlight: ``<label> qid:<id> <fid>:<value> ... [# comment]``.

    Columns: ``query_id``, ``judgment``, ``f<fid>`` per feature id (missing ids = 0). With
    ``group_feature=j``, feature ``j`` becomes the integer ``protected`` column
    (:data:`LAYOUT_COLUMNS`). ``df.attrs``
    records the file and the line of every row.
    """
    p = _check_file(path)
    labels: list[float] = []
    qids: list[str] = []
    rows: list[dict[int, float]] = []
    linenos: list[int] = []
    try:
        with open(p, encoding="utf-8-sig") as fh:
            for lineno, line in enumerate(fh, start=1):
                line = line.split("#", 1)[0].strip()
                if not line:
                    continue
                label, qid, feats = _letor_line(p, lineno, line.split())
                labels.append(label)
                qids.append(qid)
                rows.append(feats)
                linenos.append(lineno)
    except UnicodeDecodeError:
        raise _encoding_error(p) from None
    if not rows:
        raise DataError(f"empty file: {p} (no data lines)")
    df, fids = _letor_frame(labels, qids, rows)
    set_origin(df, p, linenos)
    if group_feature is not None:
        c = LAYOUT_COLUMNS
        name = f"f{group_feature}"
        if name not in df.columns:
            raise DataError(f"{p}: group feature {group_feature} does not occur; feature ids: {fids}")
        df = df.rename(columns={name: c.group})
        check_table(df, c.replace(judgment=None), source=str(p))
        df[c.group] = df[c.group].astype(np.int64)
    return df


PARQUET_SUFFIXES = (".parquet", ".pq")


def _is_parquet(p: Path) -> bool:
    return p.suffix.lower() in PARQUET_SUFFIXES


def _read_parquet(p: Path) -> pd.DataFrame:
    try:
        df = pd.read_parquet(p)
    except Exception as exc:  # pyarrow's ArrowInvalid / ArrowIOError / schema errors
        raise DataError(f"{p}: cannot read as Parquet: {one_line(exc)}") from None
    return set_origin(df, p, None)


def read_table(
    path: PathLike,
    *,
    columns: RankingColumns | None = None,
    query: str = UNSET,
    group: str | None = UNSET,
    judgment: str | None = UNSET,
    features: Sequence[str] | None = None,
    item: str | None = UNSET,
    na_values: Sequence[str] | None = None,
) -> pd.DataFrame:
    """CSV (with header) or Parquet with named columns, validated for ranking use under the
    column contract ``columns`` (default :data:`~fairltr.columns.DEFAULT_COLUMNS`; the loose name
    keywords override it; ``group=None`` / ``judgment=None``: no such column to check).

    The query, group, judgment and item columns must be distinct; ``features`` (when given)
    must exist and hold finite numbers; a repeated (query, item) pair is an error. Columns
    that are not named are not checked here: feature selection checks them (see
    :func:`fairltr.data.select_features`), with messages naming this file and line through
    the origin recorded in ``df.attrs``. ``na_values``: the CSV cells read as missing (None:
    pandas' defaults, which include ``NA`` and ``N/A``; ``[""]``: empty cells only); a group
    category that pandas' defaults took for missing is refused with that hint.
    """
    c = resolve_columns(columns, query=query, group=group, judgment=judgment, item=item)
    p = _check_file(path)
    if _is_parquet(p):
        df = _read_parquet(p)
    else:
        df = _read_csv(p, header=True, na_values=na_values)
        _check_header(p, df)
        if na_values is None:
            _check_na_categories(p, df, c)
    if features is not None:
        select_features(df, columns=c, features=features)
    check_table(df, c, numeric=list(features or []), source=str(p))
    return df


def read_ranking(
    path: PathLike,
    fmt: str = "auto",
    *,
    columns: RankingColumns | None = None,
    query: str = UNSET,
    group: str | None = UNSET,
    judgment: str | None = UNSET,
    item: str | None = UNSET,
    features: Sequence[str] | None = None,
    group_feature: int | None = None,
    na_values: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Dispatch on ``fmt`` in {auto, deltr, letor, csv, parquet} (``na_values``: see
    :func:`read_table`, csv only).

    ``auto``: ``.parquet`` -> parquet; ``.svm/.letor/.txt`` whose first line has ``qid:`` -> LETOR;
    a CSV whose first line parses as numbers -> DELTR layout; else a CSV with a header.
    ``columns`` (or the loose ``query``, ``group``, ``judgment``, ``item`` keywords) and
    ``features`` apply to csv and parquet, ``group_feature`` to letor. The DELTR and LETOR layouts
    have fixed column names (:data:`LAYOUT_COLUMNS`) and no item column: an item there is a
    :class:`ConfigError`.
    """
    c = resolve_columns(columns, query=query, group=group, judgment=judgment, item=item)
    if fmt not in ("auto", "deltr", "letor", "csv", "parquet"):
        raise DataError(f"unknown format {fmt!r}; use auto, deltr, letor, csv or parquet")
    p = _check_file(path)
    if fmt == "auto":
        if _is_parquet(p):
            fmt = "parquet"
        else:
            with open(p, encoding="utf-8-sig", errors="replace") as fh:
                first = fh.readline()
            if "qid:" in first:
                fmt = "letor"
            else:
                try:
                    [float(x) for x in first.strip().split(",")]
                    fmt = "deltr"
                except ValueError:
                    fmt = "csv"
    if fmt in ("deltr", "letor") and c.item is not None:
        raise ConfigError(f"{p}: the {fmt.upper()} layout has no item column (got item={c.item!r}); "
                          "use a CSV with a header or Parquet for item ids")
    if fmt == "deltr":
        return read_deltr_csv(p)
    if fmt == "letor":
        return read_letor(p, group_feature=group_feature)
    return read_table(p, columns=c, features=features, na_values=na_values)


CSV_SUFFIXES = {".csv": None, ".gz": "gzip", ".bz2": "bz2", ".xz": "xz"}


def table_format(path: PathLike) -> str:
    """``"parquet"`` (``.parquet``, ``.pq``) or ``"csv"`` (``.csv``, ``.csv.gz``, ``.csv.bz2``,
    ``.csv.xz``) by the file's suffix; anything else is a :class:`ConfigError`."""
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] in PARQUET_SUFFIXES:
        return "parquet"
    if suffixes and (suffixes[-1] == ".csv" or (len(suffixes) > 1 and suffixes[-2] == ".csv"
                                                 and suffixes[-1] in CSV_SUFFIXES)):
        return "csv"
    raise ConfigError(f"cannot write {p}: unsupported file type {''.join(p.suffixes[-2:]) or '(none)'!r}; "
                      "use .csv, .csv.gz, .csv.bz2, .csv.xz, .parquet or .pq")


def write_table(df: pd.DataFrame, path: PathLike) -> Path:
    """Write CSV or Parquet chosen by the suffix (see :func:`table_format`), atomically: the
    file is either the complete new table or the previous file (a failure or Ctrl-C midway
    leaves no partial table). Parent folders are created; the origin recorded by a reader is
    not written into Parquet metadata."""
    p = Path(path)
    fmt = table_format(p)
    check_writable(p)
    out = df.copy(deep=False)
    out.attrs = {k: v for k, v in df.attrs.items() if k != ORIGIN_KEY}
    try:
        with atomic_path(p) as tmp:
            if fmt == "parquet":
                out.to_parquet(tmp, index=False)
            else:
                out.to_csv(tmp, index=False, compression=CSV_SUFFIXES[p.suffix.lower()])
    except (ValueError, TypeError) as exc:  # e.g. pyarrow's ArrowInvalid for a column of mixed types
        from fairltr.errors import one_line

        raise DataError(f"cannot write {p} as {fmt}: {one_line(exc)}") from None
    return p
