"""``fairltr audit``: an NYC Local Law 144 bias audit summary of a scored table or of a model.

The ranking is the table's ``score_column`` (higher first) or ``rank_column`` (1 first), or the
scores of ``model_uri`` (verified loading, :mod:`fairltr.tracking.models.verify`, as promotion
loads it). The audit is :func:`fairltr.metrics.audit_ranking`; a Parquet table without a model is
streamed in record batches (:func:`fairltr.metrics.stream_audit`: per-query statistics only, plus
one float64 score per row for the exact median of the whole sample with ``method="scoring"``).
Writes ``bias_audit.json`` (:func:`fairltr.metrics.ll144.summary_tables` per attribute and the
intersection), ``bias_audit.csv`` (its rows flat) and ``bias_audit.html``, all at once. With
``model_uri`` and tracking on, the three files go to one MLflow run and the model version is tagged
with the summary's sha256 (``fairltr.bias_audit.sha256``) and the run id.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError, DataError
from fairltr.workflows.outputs import OutputSet

__all__ = ["BiasAuditConfig", "BiasAuditResult", "bias_audit", "BIAS_AUDIT_FILES", "SHA_TAG", "RUN_TAG"]

BIAS_AUDIT_FILES = ("bias_audit.json", "bias_audit.csv", "bias_audit.html")
SHA_TAG = "fairltr.bias_audit.sha256"
RUN_TAG = "fairltr.bias_audit.run_id"
_NO_JUDGMENT = "__fairltr_no_judgment__"


@dataclass(frozen=True)
class BiasAuditConfig:
    """What to audit (module docstring). ``method``: ``"selection@k"`` (``k``) or ``"scoring"``
    (``median``: ``"whole"`` sample or ``"per-query"``); ``unknown_values``: group values counted as
    unknown (``""``: an empty cell); ``exclusion_reason``: the auditor's reason for leaving categories
    under ``min_category_share`` out of the impact ratios (None: they stay in, flagged)."""

    data: Path
    columns: RankingColumns
    method: str = "selection@k"
    k: int = 10
    median: str = "whole"
    score_column: str | None = None
    rank_column: str | None = None
    model_uri: str | None = None
    allow_unverified: bool = False
    unknown_values: tuple[str, ...] = ()
    exclusion_reason: str | None = None
    min_category_share: float = 0.02
    time_column: str | None = None
    ci: float = 0.95
    n_boot: int = 2000
    seed: int = 0
    out_dir: Path = Path("outputs/bias_audit")
    experiment: str = "fairltr-bias-audit"
    track: bool = True

    def __post_init__(self) -> None:
        from fairltr.metrics.ll144 import check_method

        check_method(self.method, self.median, self.k)
        given = [x for x in (self.score_column, self.rank_column, self.model_uri) if x]
        if len(given) != 1:
            raise ConfigError("give the ranking as one of --score-column, --rank-column or --model-uri")
        if not self.columns.groups:
            raise ConfigError("an audit needs at least one group attribute: --group sex --group race")
        if self.exclusion_reason is not None and not self.exclusion_reason.strip():
            raise ConfigError("--exclude-small-categories needs the reason as text")

    def audit_config(self):
        from fairltr.metrics.audit_jobs import make_audit_config
        from fairltr.metrics.ll144 import audit_scoring

        return make_audit_config(k=self.k, ci=self.ci, min_category_share=self.min_category_share, n_boot=self.n_boot,
                                 seed=self.seed, scoring=audit_scoring(self.method, self.median),
                                 unknown_values=self.unknown_values, exclude_small=self.exclusion_reason is not None,
                                 exclusion_reason=self.exclusion_reason)


@dataclass
class BiasAuditResult:
    summary: dict
    files: dict[str, Path]
    sha256: str
    run_id: str | None = None
    below: list[str] = field(default_factory=list)
    undefined: list[str] = field(default_factory=list)


def _is_parquet(path: Path) -> bool:
    return path.suffix.lower() in (".parquet", ".pq")


def _read_table(cfg: BiasAuditConfig, needed: list[str]) -> pd.DataFrame:
    """The whole table (CSV: empty cells missing, every group column as text)."""
    if _is_parquet(cfg.data):
        df = pd.read_parquet(cfg.data)
    else:
        try:
            df = pd.read_csv(cfg.data, dtype={g: str for g in cfg.columns.groups}, keep_default_na=False,
                             na_values=[""])
        except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as exc:
            raise DataError(f"{cfg.data}: cannot read as CSV: {' '.join(str(exc).split())[:200]}") from None
    _check_columns(cfg, list(df.columns), needed)
    return df


def _check_columns(cfg: BiasAuditConfig, present: list[str], needed: list[str]) -> None:
    for col in needed:
        if col not in present:
            raise DataError(f"{cfg.data}: column {col!r} not found; columns: {present}")


def _needed(cfg: BiasAuditConfig) -> list[str]:
    c = cfg.columns
    return [c.query, *c.groups, *([c.judgment] if c.judgment else []), *([cfg.time_column] if cfg.time_column else []),
            *([cfg.score_column or cfg.rank_column] if not cfg.model_uri else [])]


def _period(cfg: BiasAuditConfig, values: pd.Series | None, where: str) -> tuple[str | None, str | None]:
    if values is None:
        return None, None
    times = pd.to_datetime(values, utc=True, errors="coerce", format="ISO8601")
    bad = times.isna() & values.notna()
    if bad.any() or times.isna().all():
        row = int(np.flatnonzero(bad.to_numpy() | times.isna().to_numpy())[0])
        raise DataError(f"{where}: column {cfg.time_column!r} row {row} holds {values.iloc[row]!r}, not an "
                        "ISO 8601 date or time")
    return times.min().isoformat(), times.max().isoformat()


def _stream_period(cfg: BiasAuditConfig) -> tuple[str | None, str | None]:
    """Period of a Parquet table read one column at a time, in batches."""
    if not cfg.time_column:
        return None, None
    import pyarrow.parquet as pq

    lows, highs = [], []
    for batch in pq.ParquetFile(cfg.data).iter_batches(columns=[cfg.time_column], batch_size=1 << 18):
        start, end = _period(cfg, batch.column(0).to_pandas(), str(cfg.data))
        lows.append(start)
        highs.append(end)
    return (min(lows), max(highs)) if lows else (None, None)


def _numbers(cfg: BiasAuditConfig, df: pd.DataFrame, column: str, what: str) -> np.ndarray:
    """``df[column]`` as finite float64, or a one-line error naming the first bad row (0-based)."""
    values = pd.to_numeric(df[column], errors="coerce").to_numpy(dtype=np.float64)
    if not np.isfinite(values).all():
        row = int(np.flatnonzero(~np.isfinite(values))[0])
        raise DataError(f"{cfg.data}: column {column!r} row {row} holds {df[column].iloc[row]!r}, not {what}")
    return values


def _model_input(model: Any, df: pd.DataFrame) -> pd.DataFrame:
    """The columns of ``df`` the model's signature declares (all of ``df`` without a signature):
    the audit's other columns (groups, time, unknown markers) would make MLflow warn on stderr."""
    schema = model.metadata.get_input_schema() if getattr(model, "metadata", None) is not None else None
    names = [n for n in (schema.input_names() if schema is not None else []) if n in df.columns]
    return df[names] if names else df


def _audit(cfg: BiasAuditConfig, model: Any) -> tuple[Any, int, tuple[str | None, str | None]]:
    """(AuditResult, n_individuals, period)."""
    from fairltr.metrics import audit_ranking
    from fairltr.metrics.audit_stream import stream_audit

    audit = cfg.audit_config()
    if _is_parquet(cfg.data) and model is None:
        import pyarrow.parquet as pq

        try:
            meta = pq.ParquetFile(cfg.data)
        except Exception as exc:
            raise DataError(f"{cfg.data}: cannot read as Parquet: {' '.join(str(exc).split())[:200]}") from None
        _check_columns(cfg, list(meta.schema_arrow.names), _needed(cfg))
        res = stream_audit(cfg.data, columns=cfg.columns, config=audit, score_column=cfg.score_column,
                           rank_column=cfg.rank_column)
        return res, int(meta.metadata.num_rows), _stream_period(cfg)
    df = _read_table(cfg, _needed(cfg))
    if df.empty:
        raise DataError(f"{cfg.data}: the table has no rows")
    period = _period(cfg, df[cfg.time_column] if cfg.time_column else None, str(cfg.data))
    columns = cfg.columns
    if not columns.judgment:
        df[_NO_JUDGMENT] = 0.0
        columns = columns.replace(judgment=_NO_JUDGMENT)
    if model is not None:
        scores = model.predict(_model_input(model, df))["score"].to_numpy(dtype=np.float64)
    elif cfg.score_column:
        scores = _numbers(cfg, df, cfg.score_column, "a finite score")
    else:
        scores = -_numbers(cfg, df, cfg.rank_column, "a rank")
    return audit_ranking(df, scores, columns=columns, config=audit), len(df), period


def _summary(cfg: BiasAuditConfig, res: Any, n: int, period: tuple, vm: Any, first_used: str | None) -> dict:
    from importlib.metadata import version

    from fairltr.metrics.ll144 import sha256_file, summary_tables

    attributes = summary_tables(res.table, res.unknown_counts, method=cfg.method, n_individuals=n,
                                min_category_share=cfg.min_category_share, exclusion_reason=cfg.exclusion_reason)
    return {
        "audit_date": datetime.now(timezone.utc).date().isoformat(),
        "data_source": {"path": str(cfg.data), "sha256": sha256_file(cfg.data)},
        "period_start": period[0], "period_end": period[1],
        "model": {"name": vm.name, "version": str(vm.version), "digest": vm.digest} if vm is not None else None,
        "first_used": first_used, "method": cfg.method, "k": cfg.k if cfg.method == "selection@k" else None,
        "median": cfg.median if cfg.method == "scoring" else None, "n_individuals": int(n),
        "min_category_share": cfg.min_category_share, "exclusion_reason": cfg.exclusion_reason,
        "unknown_values": list(cfg.unknown_values), "interval": res.interval,
        "attributes": attributes, "fairltr_version": version("fairltr"),
    }


def _open_model(cfg: BiasAuditConfig, dst: Path):
    if not cfg.model_uri:
        return None, None
    from fairltr.tracking.models.verify import open_verified_ranker

    vm, pyfunc = open_verified_ranker(cfg.model_uri, dst, "fairltr audit", allow_unverified=cfg.allow_unverified)
    return vm, pyfunc


def bias_audit(cfg: BiasAuditConfig) -> BiasAuditResult:
    """Audit, write the three files at once, and (with a model and tracking) log and tag."""
    from fairltr.metrics.ll144 import categories_below, sha256_of, summary_bytes, summary_frame
    from fairltr.metrics.ll144_html import summary_html

    if not cfg.data.is_file():
        raise DataError(f"data file not found: {cfg.data}")
    out = OutputSet(cfg.out_dir, managed=BIAS_AUDIT_FILES)
    with tempfile.TemporaryDirectory(prefix="fairltr-audit-") as tmp:
        vm, model = _open_model(cfg, Path(tmp) / "model")
        res, n, period = _audit(cfg, model)
    first_used = None
    if vm is not None and vm.name:
        from fairltr.tracking.model_registry.first_used import first_used_time

        first_used = first_used_time(vm.name, str(vm.version))
    summary = _summary(cfg, res, n, period, vm, first_used)
    data = summary_bytes(summary)
    with out:
        out.path("bias_audit.json").write_bytes(data)
        summary_frame(summary["attributes"], cfg.method, summary["median"]).to_csv(out.path("bias_audit.csv"),
                                                                                   index=False)
        out.path("bias_audit.html").write_text(summary_html(summary), encoding="utf-8")
        files = out.commit()
    result = BiasAuditResult(summary=json.loads(data), files=files, sha256=sha256_of(data),
                             below=categories_below(summary["attributes"]),
                             undefined=[a for a, b in summary["attributes"].items() if b["worst_impact_ratio"] is None])
    if vm is not None and vm.name and cfg.track:
        from fairltr.tracking.job_logging.bias_audit import log_bias_audit

        result.run_id = log_bias_audit(cfg.experiment, summary, files, vm.name, str(vm.version), result.sha256,
                                       sha_tag=SHA_TAG, run_tag=RUN_TAG)
    return result
