"""``fairltr monitor``: audit a table of served rankings over time windows.

Per window (``--window 7d``, ``1mo``, ...) of ``--time-column``: the audit of docs/spec.md
section 3b (pooled selection rates, impact ratios, exposure ratios per category and the
intersection, with bootstrap intervals), the ``--gate`` checks (the promotion grammar,
``--confidence`` included), and the population shift against the training data. Outputs
(all-or-nothing in ``--out``): ``windows.csv`` (one row per window), ``audit_by_window.csv``
(per window and category), ``shift.csv``, ``monitor.json``, ``monitor_over_time.png`` and
``monitor_report.html``; the same in one MLflow run with the worst-case metrics as time series
(step = window index, timestamp = window start); the model version, when ``--model-uri`` names
one, is tagged "monitored through <date>: <verdict>".

With ``decision_log`` (``--decision-log URI``) the traffic is a served model's decision log
(:func:`fairltr.tracking.models.decision_log.read_decision_log`) instead of ``--data``: time column
``time``, served ``rank`` and ``score``, the group columns expanded from the log, and one ranking
per served (request, query) (a query served twice is two rankings).

The table is either scored already (a ``rank`` or score column per row) or raw candidates scored
with ``--model-uri`` (verified loading, :mod:`fairltr.tracking.models.verify`). With ``--model-uri`` AND a
rank or score column, the table's served ranking is audited and the model names the version to
tag and the training profile to compare with (it scores nothing). A Parquet table is read
in record batches and spilled per window, so memory follows the largest window, not the table.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

import numpy as np
import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError, DataError
from fairltr.workflows.options import RankingSource, TrackingOptions
from fairltr.workflows.outputs import OutputSet

__all__ = ["MonitorConfig", "MonitorResult", "monitor", "MONITOR_FILES"]

MONITOR_FILES = ("windows.csv", "audit_by_window.csv", "shift.csv", "monitor.json", "monitor_over_time.png",
                 "monitor_report.html")
_JUDGMENT_FILL = "__fairltr_no_judgment__"
Echo = Callable[[str], None]


@dataclass(frozen=True)
class MonitorConfig:
    """What to monitor and how: the traffic table ``data``, its ``time_column`` and ``window``,
    the column contract (query, group attributes, optional judgment = outcome), where the ranking
    comes from (``model_uri``, else ``score_column``, else ``rank_column``), the audit settings
    (``audit``: k, intervals), ``gates`` with an optional ``confidence``, the training
    ``reference`` table for the shift (default: the profile recorded with the model), ``out_dir``
    and tracking."""

    data: Path | None  # None with decision_log
    time_column: str
    window: str
    columns: RankingColumns
    audit: Any  # fairltr.metrics.AuditConfig
    out_dir: Path = Path("outputs/monitor")
    model_uri: str | None = None
    score_column: str | None = None
    rank_column: str | None = None
    gates: tuple[str, ...] = ()
    confidence: float | None = None
    reference: Path | None = None
    allow_unverified: bool = False
    tracking: TrackingOptions = field(default_factory=lambda: TrackingOptions(experiment="fairltr-monitor"))
    na_values: tuple[str, ...] | None = None  # CSV cells read as missing (None: pandas' defaults)
    duplicates: str = "refuse"  # repeated rows (no item column): fairltr.data.DUPLICATE_POLICIES
    time_format: str | None = None  # strptime format of dates written with numbers only (07/01/2026)
    time_unit: str | None = None  # what numeric timestamps count: fairltr.monitoring.TIME_UNITS
    decision_log: str | None = None  # a served model's decision log (folder or postgresql:// URI) instead of data

    def __post_init__(self) -> None:
        from fairltr.monitoring import parse_window

        _check_source(self)
        if self.score_column and self.rank_column:
            raise ConfigError("give --score-column or --rank-column, not both")
        if self.rank_column is None and self.score_column is None and self.model_uri is None:
            object.__setattr__(self, "rank_column", "rank")  # a table of served ranks
        parse_window(self.window)
        if not self.columns.groups:
            raise ConfigError("monitoring needs at least one group attribute: --group COL (repeatable)")
        if self.confidence is not None:
            if not (isinstance(self.confidence, (int, float)) and 0.0 < float(self.confidence) < 1.0):
                raise ConfigError(f"--confidence must be a level in (0, 1), e.g. 0.95; got {self.confidence!r}")
            if self.audit.ci != self.confidence:  # the gates read intervals at that level
                from dataclasses import replace

                object.__setattr__(self, "audit", replace(self.audit, ci=float(self.confidence)))


@dataclass
class MonitorResult:
    windows: list  # fairltr.monitoring.WindowAudit
    failures: list[dict]
    files: dict[str, Path]
    run_id: str | None = None
    tracking_uri: str | None = None
    version: tuple[str, str] | None = None
    record: dict = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.failures


def _check_source(cfg: MonitorConfig) -> None:
    """``--data`` or ``--decision-log`` (whose columns are fixed: ``time``, ``query_id``, ``rank``)."""
    if cfg.decision_log is None:
        if cfg.data is None:
            raise ConfigError("give --data (a table of served rankings) or --decision-log URI")
        object.__setattr__(cfg, "data", Path(cfg.data))
        return
    if cfg.data is not None:
        raise ConfigError("give --data or --decision-log, not both")
    if cfg.time_column not in (None, "time") or cfg.columns.query != "query_id" or cfg.score_column:
        raise ConfigError("a decision log's columns are fixed: time, query_id, rank (drop --time-column, --query "
                          "and --score-column)")
    object.__setattr__(cfg, "time_column", "time")
    object.__setattr__(cfg, "rank_column", cfg.rank_column or "rank")


def _frames_decision_log(cfg: MonitorConfig, spec) -> Iterator[tuple]:
    """The windows of a decision log: one ranking per (request, query), groups from the log."""
    from fairltr.monitoring import assign_windows
    from fairltr.tracking.models.decision_log import read_decision_log

    df = read_decision_log(cfg.decision_log, groups=cfg.columns.groups)
    missing = [g for g in cfg.columns.groups if df[g].isna().all()]
    if missing:
        raise DataError(f"decision log {cfg.decision_log}: no group values for {missing}; it records "
                        f"{sorted({k for t in df['groups'].unique() for k in json.loads(t)})}")
    df["query_id"] = df["request_id"] + "/" + df["query_id"].astype(str)
    times = df["time"].dt.tz_convert("UTC").dt.tz_localize(None)
    index, starts = assign_windows(times, spec)
    for i in np.unique(index):
        yield int(i), starts[i], starts[i + 1], df.iloc[np.flatnonzero(index == i)]


def _needed_columns(cfg: MonitorConfig, features: Sequence[str]) -> list[str]:
    c = cfg.columns
    served = cfg.score_column or cfg.rank_column
    ranking = [served] if served else []
    wanted = [c.query, *c.groups, cfg.time_column, *ranking, *features]
    if c.judgment:
        wanted.append(c.judgment)
    if c.item:
        wanted.append(c.item)
    return list(dict.fromkeys(wanted))


def _check_columns(present: Sequence[str], cfg: MonitorConfig, features: Sequence[str], where: str) -> None:
    missing = [col for col in _needed_columns(cfg, features) if col not in present and col != cfg.columns.judgment]
    if missing:
        served = cfg.score_column or cfg.rank_column
        what = " (give --score-column, --rank-column or --model-uri)" if served in missing else ""
        raise DataError(f"{where}: missing column(s) {missing}{what}; columns: {list(present)}")


def _times(cfg: MonitorConfig, frame: pd.DataFrame) -> pd.Series:
    from fairltr.monitoring import parse_time_column

    return parse_time_column(frame, cfg.time_column, str(cfg.data), time_format=cfg.time_format,
                             time_unit=cfg.time_unit)


def _frames_csv(cfg: MonitorConfig, spec, features: Sequence[str]) -> Iterator[tuple]:
    from fairltr.io import read_table
    from fairltr.monitoring import assign_windows

    c = cfg.columns
    from fairltr.data import check_duplicate_rows

    df = read_table(cfg.data, columns=c.replace(judgment=c.judgment if c.judgment else None), na_values=cfg.na_values)
    _check_columns(list(df.columns), cfg, features, str(cfg.data))
    df = check_duplicate_rows(df, c, cfg.duplicates, source=str(cfg.data))
    index, starts = assign_windows(_times(cfg, df), spec)
    for i in np.unique(index):
        yield int(i), starts[i], starts[i + 1], df.iloc[np.flatnonzero(index == i)]


def _frames_parquet(cfg: MonitorConfig, spec, features: Sequence[str], spill: Path,
                    extra: Sequence[str] = ()) -> Iterator[tuple]:
    """Two passes over record batches: the first finds the first timestamp (the windows' origin),
    the second spills each batch's rows to one Parquet file per window; then each window is
    read back alone."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from fairltr.monitoring import assign_windows

    try:
        pf = pq.ParquetFile(cfg.data)
    except Exception as exc:
        raise DataError(f"{cfg.data}: cannot read as Parquet: {' '.join(str(exc).split())}") from None
    _check_columns(pf.schema_arrow.names, cfg, features, str(cfg.data))
    cols = [col for col in dict.fromkeys([*_needed_columns(cfg, features), *extra]) if col in pf.schema_arrow.names]
    first = None
    for batch in pf.iter_batches(columns=[cfg.time_column], batch_size=1 << 16):
        t = _times(cfg, batch.to_pandas())
        first = t.min() if first is None else min(first, t.min())
    if first is None:
        raise DataError(f"{cfg.data}: the traffic table has no rows")
    writers: dict[int, pq.ParquetWriter] = {}
    starts_all: dict[int, tuple] = {}
    try:
        for batch in pf.iter_batches(columns=cols, batch_size=1 << 16):
            frame = batch.to_pandas()
            t = _times(cfg, frame)
            index, starts = assign_windows(pd.concat([pd.Series([first]), t], ignore_index=True), spec)
            index = index[1:]
            for i in np.unique(index):
                part = pa.Table.from_pandas(frame.iloc[np.flatnonzero(index == i)], preserve_index=False)
                if i not in writers:
                    writers[int(i)] = pq.ParquetWriter(spill / f"window-{int(i)}.parquet", part.schema)
                writers[int(i)].write_table(part)
                starts_all[int(i)] = (starts[i], starts[i + 1])
    finally:
        for w in writers.values():
            w.close()
    from fairltr.data import check_duplicate_rows

    for i in sorted(writers):  # a repeated row has its original's time: both fall in one window
        frame = check_duplicate_rows(pd.read_parquet(spill / f"window-{i}.parquet"), cfg.columns, cfg.duplicates,
                                     source=str(cfg.data))
        yield i, starts_all[i][0], starts_all[i][1], frame


def _scorer(cfg: MonitorConfig, model) -> Callable[[pd.DataFrame], np.ndarray]:
    """Higher = ranked first: the model's ranking (its recorded serving policy applied, as served:
    minus the served rank), else the table's scores, else minus its ranks (checked: 1..n per query)."""
    if model is not None and not (cfg.score_column or cfg.rank_column):
        if getattr(model, "serving_policy", None):  # the policy re-ranks: the order is the rank, not the score
            return lambda frame: -model.predict(frame)["rank"].to_numpy(dtype=np.float64)
        return lambda frame: model.predict(frame)["score"].to_numpy(dtype=np.float64)
    if cfg.score_column:
        return lambda frame: pd.to_numeric(frame[cfg.score_column], errors="raise").to_numpy(dtype=np.float64)
    from fairltr.monitoring.served_ranks import check_rank_permutation

    return lambda frame: -check_rank_permutation(frame, cfg.rank_column, cfg.columns.query, str(cfg.data))


def _reference_profile(cfg: MonitorConfig, vm, features: Sequence[str], echo: Echo):
    """The training profile to compare with: ``--reference`` (a table), else the profile logged
    with the model's training run (``training_profile.json``), else None (no shift report)."""
    from fairltr.monitoring import TrainingProfile

    groups = cfg.columns.groups
    if cfg.reference is not None:
        from fairltr.io import read_table

        ref = read_table(cfg.reference, columns=cfg.columns.replace(judgment=None))
        skip = {*cfg.columns.named, cfg.time_column, cfg.rank_column, cfg.score_column}
        return TrainingProfile.of(ref, groups, features or [c for c in ref.columns if c not in skip])
    if vm is None:
        return None
    from fairltr.tracking.job_logging.monitoring import recorded_training_profile

    profile = recorded_training_profile(vm)
    if profile is None:
        echo("no training profile is recorded with the model: population shift not reported (give --reference)")
    return profile


def _audit_all_windows(cfg: MonitorConfig, spec, gates: Sequence, vm, model, tmp: Path,
                       echo: Echo) -> tuple[list, list[pd.DataFrame], Any]:
    """Audit every window of ``cfg.data`` (scored by ``model`` unless the table carries scores or
    ranks): the windows with their failing gate/category pairs, and each window's population
    shift against the training profile (none without one), and that profile. ``tmp`` holds the
    Parquet spill."""
    from fairltr.monitoring import audit_windows, population_shift

    scoring = model is not None and not (cfg.score_column or cfg.rank_column)
    features = list(getattr(model, "feature_names", None) or []) if scoring else []
    profile = _reference_profile(cfg, vm, features, echo)
    columns = cfg.columns if cfg.columns.judgment else cfg.columns.replace(judgment=_JUDGMENT_FILL)
    spill = tmp / "spill"
    spill.mkdir()
    if cfg.decision_log is not None:
        frames = _frames_decision_log(cfg, spec)
    elif cfg.data.suffix.lower() in (".parquet", ".pq"):
        frames = _frames_parquet(cfg, spec, features, spill, extra=list(profile.features) if profile else [])
    else:
        frames = _frames_csv(cfg, spec, features)
    windows, shifts = [], []
    scores_of = _scorer(cfg, model)
    from fairltr.metrics.audit_jobs import audit_cutoffs_in

    gate_ks = audit_cutoffs_in(g.metric for g in gates)  # every cut-off a gate reads is computed
    for index, start, end, frame in frames:
        if not cfg.columns.judgment:
            frame = frame.assign(**{_JUDGMENT_FILL: 0.0})
        w = next(audit_windows([(index, start, end, frame)], scores_of, columns=columns, config=cfg.audit,
                               extra_ks=gate_ks))
        if not cfg.columns.judgment:  # no outcomes: nothing to say about merit
            w.metrics = {k: v for k, v in w.metrics.items() if not k.startswith("disparate_treatment_ratio")}
        windows.append(w)
        if profile is not None:
            shifts.append(population_shift(frame, profile, index=index, start=start))
        echo(f"window {w.label}: {w.n_queries} queries, {w.n_rows} candidates")
    return windows, shifts, profile


def _write_outputs(out: OutputSet, cfg: MonitorConfig, record: dict, windows: list, summary: dict,
                   metrics_table: pd.DataFrame, shift: pd.DataFrame) -> dict[str, Path]:
    """Write the output set (the tables, ``monitor.json``, the plot and the HTML report) at once."""
    from fairltr.monitoring.audit_windows import tables_frame

    with out:
        metrics_table.to_csv(out.path("windows.csv"), index=False)
        tables_frame(windows).to_csv(out.path("audit_by_window.csv"), index=False)
        shift.to_csv(out.path("shift.csv"), index=False)
        out.path("monitor.json").write_text(json.dumps(record, indent=1, default=str))
        from fairltr.tracking.job_logging.monitoring import monitor_plot_png, monitor_report_html

        out.path("monitor_over_time.png").write_bytes(monitor_plot_png(windows, cfg.audit.k))
        out.path("monitor_report.html").write_text(
            monitor_report_html(record, windows, summary, out.path("monitor_over_time.png").read_bytes()),
            encoding="utf-8")
        return out.commit()


def monitor(cfg: MonitorConfig, echo: Echo = lambda _: None) -> MonitorResult:
    """Validate everything first (window, gates, output folder, tracking, the model), then audit
    every window, write the output set, log one MLflow run and tag the model version."""
    from fairltr.monitoring import parse_window, shift_summary
    from fairltr.monitoring.audit_windows import metrics_frame

    spec = parse_window(cfg.window)
    gates = _parse_gates(cfg.gates)
    cfg = _with_model_groups(cfg)
    from fairltr.metrics.audit_jobs import names_scoring_rate
    from fairltr.metrics.availability import check_computed

    if names_scoring_rate(g.metric for g in gates) and cfg.audit.scoring == "none":
        from dataclasses import replace

        cfg = replace(cfg, audit=replace(cfg.audit, scoring="sample"))  # each window's median, LL144's scoring rate
    check_computed([(g.text, g.metric) for g in gates], evaluator="monitor", groups=cfg.columns.groups,
                   judgments=bool(cfg.columns.judgment))  # a gate on a metric never computed: refused now
    out = OutputSet(cfg.out_dir, managed=MONITOR_FILES)
    uri = None
    if cfg.tracking.enabled or cfg.model_uri:
        from fairltr.tracking.runs.config import check_tracking_uri

        uri = check_tracking_uri()
    with tempfile.TemporaryDirectory(prefix="fairltr-monitor-") as tmp:
        vm, model = _open_model(cfg, Path(tmp) / "model")
        windows, shifts, profile = _audit_all_windows(cfg, spec, gates, vm, model, Path(tmp), echo)
    shift = pd.concat(shifts, ignore_index=True) if shifts else pd.DataFrame()
    summary = shift_summary(shift, cfg.confidence) if len(shift) else {}
    mismatch = _label_warning(shift, echo)
    tests = _judge(cfg, windows, gates, profile)
    failures = [f | {"pool_changed": summary.get(f["window"], {}).get("shifted")} for w in windows for f in w.failures]
    metrics_table = metrics_frame(windows)
    record = _record(cfg, spec, windows, failures, summary, vm) | _statistics_record(cfg, windows, tests, mismatch)
    files = _write_outputs(out, cfg, record, windows, summary, metrics_table, shift)
    result = MonitorResult(windows=windows, failures=failures, files=files, tracking_uri=uri,
                           version=(vm.name, vm.version) if vm is not None and vm.name else None, record=record)
    if cfg.tracking.enabled:
        from fairltr.tracking.job_logging.monitoring import log_monitor_run, tag_monitored_version

        result.run_id = log_monitor_run(cfg.tracking, record, windows, files)
        if result.version is not None:
            tag_monitored_version(*result.version, record)
    return result


def _judge(cfg: MonitorConfig, windows: list, gates: Sequence, profile) -> pd.DataFrame:
    """Every window's verdict (:func:`fairltr.monitoring.judge_windows`) set on the window; the
    run's pair tests returned. The reference categories: the training profile's (shares at least
    the audit's min_category_share), else those of all windows."""
    from fairltr.monitoring.window_verdicts import judge_windows, pooled_categories

    if profile is not None:
        share = cfg.audit.min_category_share
        reference = {a: [c for c, v in shares.items() if v >= share] for a, shares in profile.categories.items()
                     if a in cfg.columns.groups}
    else:
        reference = pooled_categories(windows, cfg.columns.groups)
    verdicts, tests = judge_windows(windows, gates, cfg.confidence, reference)
    for w, v in zip(windows, verdicts):
        w.failures, w.verdict, w.insufficient = v.failures, v.verdict, v.insufficient
    return tests


def _label_warning(shift: pd.DataFrame, echo: Echo) -> dict[str, list[str]]:
    """Name the traffic's category labels the training profile lacks (one line), so that a shift
    of 1.0 is never silent; returns them per attribute."""
    from fairltr.monitoring.shift import label_mismatch

    mismatch = label_mismatch(shift)
    if mismatch:
        import warnings

        from fairltr.errors import FairltrWarning

        what = "; ".join(f"{a}: {', '.join(v)}" for a, v in mismatch.items())
        warnings.warn(f"the traffic's category labels differ from the training profile's ({what} never occur in "
                      "training): the population shift compares different labels; check the group columns' "
                      "spelling", FairltrWarning, stacklevel=2)
    return mismatch


def _statistics_record(cfg: MonitorConfig, windows: list, tests: pd.DataFrame, mismatch: dict) -> dict:
    """What the record adds about the statistics: each window's verdict, the insufficient-evidence
    lines, the family of tests and the label mismatch."""
    n_tests = int(tests["testable"].sum()) if len(tests) else 0
    verdicts = {w.label: w.verdict for w in windows}
    n_fail = sum(v == "fail" for v in verdicts.values())
    n_ins = sum(v == "insufficient evidence" for v in verdicts.values())
    verdict = "PASS" if not n_fail else f"FAIL in {n_fail} of {len(windows)} windows"
    if n_ins:
        verdict += f"; insufficient evidence in {n_ins}"
    return {
        "verdict": verdict, "window_verdicts": verdicts,
        "insufficient": [line for w in windows for line in w.insufficient],
        "family": {"method": "holm" if cfg.confidence is not None else "none (point estimates)",
                   "confidence": cfg.confidence, "n_tests": n_tests,
                   "test": "one-sided Farrington-Manning score test of p_c >= tau * p_r per category pair"},
        "label_mismatch": mismatch,
    }


def _parse_gates(texts: Sequence[str]) -> list:
    from fairltr.gates import parse_gate

    return [parse_gate(t) for t in texts]


def _with_model_groups(cfg: MonitorConfig) -> MonitorConfig:
    """Without ``--group``, ``--model-uri``'s recorded group attributes when the table has them and
    no ``protected`` column (as ``evaluate-model`` and ``promote``:
    :func:`fairltr.workflows.model_registry.with_recorded_groups`); ``cfg`` otherwise."""
    if not cfg.model_uri or cfg.data is None:
        return cfg
    from dataclasses import replace

    from fairltr.workflows.model_registry import model_meta_of, with_recorded_groups

    source = with_recorded_groups(RankingSource(cfg.data, columns=cfg.columns), lambda: model_meta_of(cfg.model_uri))
    return cfg if source.columns == cfg.columns else replace(cfg, columns=source.columns)


def _open_model(cfg: MonitorConfig, dst: Path):
    """(VerifiedModel, in-process pyfunc) of ``--model-uri``, or (None, None)."""
    if not cfg.model_uri:
        return None, None
    from fairltr.tracking.models.verify import open_verified_ranker

    vm, pyfunc = open_verified_ranker(cfg.model_uri, dst, "fairltr monitor", allow_unverified=cfg.allow_unverified)
    pyfunc.feature_names = list(pyfunc.metadata.get_input_schema().input_names())
    config = ((vm.meta.flavors or {}).get("python_function") or {}).get("config") or {}
    policy = config.get("serve_rerank")
    pyfunc.serving_policy = policy if policy and str(policy).strip() != "none" else None  # served as recorded
    return vm, pyfunc


def _record(cfg: MonitorConfig, spec, windows: list, failures: list[dict], summary: dict, vm) -> dict:
    """The JSON record of the monitoring run (``monitor.json``, MLflow, the version tag)."""
    last = max((w.end for w in windows), default=None)
    through = (last - pd.Timedelta(days=1)).date().isoformat() if last is not None else None
    failing_windows = sorted({f["window_start"] for f in failures})
    verdict = "PASS" if not failures else f"FAIL in {len(failing_windows)} of {len(windows)} windows"
    return {
        "data": str(cfg.data) if cfg.decision_log is None else f"decision log {_redacted(cfg.decision_log)}",
        "time_column": cfg.time_column, "window": spec.text(), "groups": list(cfg.columns.groups),
        "k": cfg.audit.k, "ci": cfg.audit.ci, "n_boot": cfg.audit.n_boot, "seed": cfg.audit.seed,
        "gates": list(cfg.gates), "confidence": cfg.confidence,
        "model_uri": cfg.model_uri, "model_version": (f"{vm.name}/{vm.version}" if vm is not None and vm.name else None),
        "n_windows": len(windows), "through": through, "verdict": verdict, "failing_windows": failing_windows,
        "failures": [{k: v for k, v in f.items() if k != "line"} | {"line": f["line"]} for f in failures],
        "shift": {str(k): v for k, v in summary.items()},
    }


def _redacted(uri: str) -> str:
    from fairltr.redaction import redact_uri

    return redact_uri(uri)
