"""Jobs on logged and registered models: evaluate one with MLflow's evaluate and fairltr's
evaluator plugins (``fairltr evaluate-model``), promote a version behind fairness gates
(``fairltr promote``), and draw the DELTR paper's Figure 1 from tracked runs
(``fairltr compare-runs``)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS
from fairltr.errors import ConfigError
from fairltr.metrics import DEFAULT_K
from fairltr.workflows.options import RankingSource
from fairltr.workflows.train_ranker import check_k

__all__ = ["EvaluateModelConfig", "EvaluateModelResult", "evaluate_model", "PromoteConfig", "promote_model",
           "CompareRunsConfig", "compare_runs", "RetrievalEvalData", "mark_run"]


@dataclass(frozen=True)
class RetrievalEvalData:
    """A parallel-query folder to evaluate a retriever on: split, language filter, sample."""

    folder: Path
    split: str = "test"
    languages: tuple[str, ...] | None = None
    max_items: int | None = None
    seed: int = 0
    k: int = 100
    mrc_k: int = 5

    def __post_init__(self) -> None:
        object.__setattr__(self, "folder", Path(self.folder))
        if self.k < 1 or self.mrc_k < 1:
            raise ConfigError(f"k and mrc_k must be >= 1, got {self.k} and {self.mrc_k}")
        if self.max_items is not None and self.max_items < 1:
            raise ConfigError(f"max_items must be >= 1, got {self.max_items}")


@dataclass(frozen=True)
class EvaluateModelConfig:
    """``fairltr evaluate-model``: ``data`` is a ranking file (rankers) or a parallel-query folder
    (retrievers); the model's kind decides which evaluator runs."""

    model_uri: str
    data: RankingSource | RetrievalEvalData
    k: tuple[int, ...] = DEFAULT_K
    experiment: str = "fairltr-evaluation"
    run_name: str | None = None
    allow_unverified: bool = False
    audit: Any = None  # fairltr.metrics.AuditConfig: SPEC 3b's audit (and intervals when audit.ci > 0)
    compare_with: str | None = None  # a second ranker: paired differences on the same table
    conventions: Any = None  # rankers: a fairltr.metrics.conventions.RelevanceConventions (None: the default)

    def __post_init__(self) -> None:
        object.__setattr__(self, "k", check_k(self.k))
        if self.conventions is not None and isinstance(self.data, RetrievalEvalData):
            raise ConfigError("--empty-queries / --linear-ndcg set a ranker's nDCG conventions, not a retriever's")
        if self.compare_with and isinstance(self.data, RetrievalEvalData):
            raise ConfigError("--compare-with compares rankers on a ranking file, not retrievers")


@dataclass
class EvaluateModelResult:
    """``resolved_version``: the registered version an alias URI (``models:/NAME@champion``)
    pointed to when it was evaluated (also for ``models:/NAME/N``); ``differences``: with
    ``compare_with``, per headline metric the paired difference and its interval."""

    kind: str
    metrics: dict[str, float]
    run_id: str
    resolved_version: str | None = None
    differences: dict[str, dict[str, Any]] | None = None


def ranker_config(source: RankingSource, k: Sequence[int], audit: Any = None) -> dict[str, Any]:
    """The ``fair_ranking`` evaluator config of a ranking file: columns (``group`` a list when
    several attributes), cut-offs, data path and the audit settings."""
    from fairltr.workflows.audit import audit_to_config

    c = source.columns
    groups = list(c.groups)
    config: dict[str, Any] = {"query": c.query, "group": groups[0] if len(groups) == 1 else groups or None,
                              "judgment": c.judgment, "k": list(k), "data": str(source.path)}
    if audit is not None and groups:
        config["audit"] = audit_to_config(audit)
    return config


def recorded_groups(meta: Any) -> tuple[str, ...]:
    """The group attributes a logged ranker was trained with (its MLmodel config), or ``()``."""
    config = ((getattr(meta, "flavors", None) or {}).get("python_function") or {}).get("config") or {}
    groups = config.get("groups") or ([config["group"]] if config.get("group") else [])
    return tuple(str(g) for g in groups)


def _column_names(source: RankingSource) -> list[str] | None:
    """The column names of a CSV or Parquet ranking file (None for other layouts or unreadable files)."""
    from fairltr.io import PARQUET_SUFFIXES

    try:
        if source.path.suffix.lower() in PARQUET_SUFFIXES or source.fmt == "parquet":
            import pyarrow.parquet as pq

            return list(pq.read_schema(source.path).names)
        if source.fmt in ("auto", "csv"):
            return [str(c) for c in pd.read_csv(source.path, nrows=0).columns]
    except Exception:  # the reader names the problem when the file is read
        return None
    return None


def with_recorded_groups(source: RankingSource, meta: Any) -> RankingSource:
    """``source`` reading the model's own group attributes when none was given: the default group
    column (``protected``) is absent from the file, and every attribute the model was trained with
    is present (its own training file, evaluated without repeating ``--group``). A note on stderr
    says so; otherwise ``source`` is unchanged (a missing column stays a one-line error).
    ``meta``: the model's MLmodel metadata, or a function returning it (called only when no
    group was given)."""
    from dataclasses import replace

    import click

    c = source.columns
    if c.groups != DEFAULT_COLUMNS.groups:
        return source
    groups = recorded_groups(meta() if callable(meta) else meta)
    if not groups or tuple(groups) == c.groups:
        return source
    header = _column_names(source)
    if header is None or c.group in header or not set(groups) <= set(header):
        return source
    click.echo(f"{source.path}: no --group given and no {c.group!r} column: using the model's own group "
               f"attributes ({', '.join(groups)})", err=True)
    return replace(source, columns=c.replace(group=groups))


def model_meta_of(model_uri: str) -> Any:
    """The MLmodel metadata of ``model_uri``, read before the model is opened (its recorded group
    attributes; :func:`fairltr.tracking.models.verify.model_meta`, None when unreadable)."""
    from fairltr.tracking.models.verify import model_meta
    from fairltr.tracking.runs.config import configure

    configure()
    return model_meta(model_uri)


def evaluate_model(cfg: EvaluateModelConfig) -> EvaluateModelResult:
    """Evaluate a logged/registered model in a new run of ``cfg.experiment``.

    The model is downloaded, checked against the digest the tracking store recorded when it was
    logged, and built in this process by fairltr's own loaders (:mod:`fairltr.tracking.models.verify`):
    code stored with the model never runs here. A model without a recorded digest is refused
    unless ``cfg.allow_unverified``; one that does not match or load raises
    :class:`~fairltr.tracking.models.verify.ModelRejected` (a one-line :class:`DataError`)."""
    import tempfile

    from fairltr.tracking.runs.config import check_tracking_uri, configure
    from fairltr.tracking.models.verify import open_verified

    check_tracking_uri()
    configure(cfg.experiment)
    run_name = cfg.run_name or f"evaluate {cfg.model_uri}"
    with tempfile.TemporaryDirectory(prefix="fairltr-evaluate-") as tmp:
        vm, loaded = open_verified(cfg.model_uri, tmp, allow_unverified=cfg.allow_unverified)
        kind = vm.kind
        if kind == "retriever":
            if not isinstance(cfg.data, RetrievalEvalData):
                raise ConfigError(f"{cfg.model_uri} is a retriever: --data must be a parallel-query folder "
                                  "(corpus.jsonl, queries.jsonl, qrels.tsv)")
            from fairltr.tracking.evaluation.retrieval_evaluator import evaluate_retriever

            d = cfg.data
            metrics, run_id = evaluate_retriever(loaded, d.folder, split=d.split, languages=d.languages,
                                                 max_items=d.max_items, seed=d.seed, run_name=run_name, k=d.k,
                                                 mrc_k=d.mrc_k, label=cfg.model_uri)
            return EvaluateModelResult(kind, metrics, run_id)
        if not isinstance(cfg.data, RankingSource):
            raise ConfigError(f"{cfg.model_uri} is a ranker: --data must be a ranking file, not a folder")
        from fairltr.tracking import evaluate_model_uri

        source = with_recorded_groups(cfg.data, vm.meta)
        df = source.read()
        config = ranker_config(source, cfg.k, cfg.audit)
        if cfg.conventions is not None:
            config.update(empty_queries=cfg.conventions.empty_queries, linear_ndcg=cfg.conventions.linear_ndcg)
        if vm.version:
            config["model_version"] = str(vm.version)
        metrics, run_id = evaluate_model_uri(loaded, df, config, run_name=run_name, label=cfg.model_uri)
        differences = None
        if cfg.compare_with:
            differences = _paired_differences(loaded, cfg.compare_with, df, cfg, Path(tmp) / "other")
    return EvaluateModelResult(kind, metrics, run_id, resolved_version=vm.version, differences=differences)


def _paired_differences(loaded: Any, other_uri: str, df: pd.DataFrame, cfg: EvaluateModelConfig,
                        dst: Path) -> dict[str, dict[str, Any]]:
    """Paired bootstrap differences (this model - ``other_uri``) of the headline metrics on ``df``."""
    from dataclasses import replace

    from fairltr.metrics.bootstrap import paired_difference
    from fairltr.metrics.plugins import headline_metrics
    from fairltr.tracking.evaluation.evaluator import model_scores
    from fairltr.tracking.models.verify import open_verified
    from fairltr.workflows.audit import audit_cutoff, make_audit_config

    dst.mkdir(parents=True, exist_ok=True)
    other_vm, other = open_verified(other_uri, dst, allow_unverified=cfg.allow_unverified)
    if other_vm.kind != "ranker":
        raise ConfigError(f"--compare-with {other_uri} is a {other_vm.kind}, not a ranker")
    audit = cfg.audit or make_audit_config(k=audit_cutoff(cfg.k), ci=0.95)
    if not audit.ci:
        audit = replace(audit, ci=0.95)
    columns = cfg.data.columns
    a, b = model_scores(loaded, df), model_scores(other, df)
    out: dict[str, dict[str, Any]] = {}
    keys = [m for m in headline_metrics(audit.k) if not m.startswith(("mrc_", "mrr_"))]  # a ranker's headline
    for metric in keys:
        if not columns.groups and metric.startswith(("impact_ratio", "exposure_ratio_worst", "ndkl", "disparate")):
            continue
        out[metric] = paired_difference(df, a, b, columns=columns, metric=metric, config=audit)
    return out


# ---------------------------------------------------------------------------------- promote
@dataclass(frozen=True)
class PromoteConfig:
    """``fairltr promote``: check ``gates`` on version ``version`` of registered model ``model``
    (on ``data`` when given — a ranking file for rankers, a parallel-query folder for retrievers
    — else on the metrics logged at training) and move ``alias`` only when every gate passes.

    ``unloadable_champion``: relative gates against a champion that does not load, verify or
    evaluate on ``data`` fail (``"fail"``, the default: fail closed) or are skipped and recorded as
    skipped with the reason (``"pass"``, ``--if-champion-unavailable pass``); ``allow_unverified``: accept versions logged without
    a digest (still loaded by fairltr's loaders only); ``lock_timeout`` / ``lock_lease``: seconds
    to wait for the registered model's promotion lock, and the lease a crashed holder keeps it."""

    model: str
    version: str
    gates: tuple[str, ...]
    data: RankingSource | RetrievalEvalData | None = None
    alias: str = "champion"
    no_champion: str = "pass"
    experiment: str = "fairltr-promotion"
    unloadable_champion: str = "fail"
    allow_unverified: bool = False
    lock_timeout: float = 120.0
    lock_lease: float = 60.0
    confidence: float | None = None
    audit: Any = None

    def __post_init__(self) -> None:
        if self.confidence is not None:
            if not (0.0 < float(self.confidence) < 1.0):
                raise ConfigError(f"--confidence must be a level in (0, 1), e.g. 0.95; got {self.confidence!r}")
            if not isinstance(self.data, RankingSource):
                raise ConfigError("--confidence needs --data (a ranking file): the intervals are bootstrapped over "
                                  "the queries both models are evaluated on")
        if not self.gates:
            raise ConfigError("give at least one --gate (e.g. 'exposure_ratio>=0.9')")
        for name in ("no_champion", "unloadable_champion"):
            if getattr(self, name) not in ("pass", "fail"):
                raise ConfigError(f"{name} must be 'pass' or 'fail', got {getattr(self, name)!r}")
        if not self.lock_timeout > 0 or not self.lock_lease > 0:
            raise ConfigError(f"lock_timeout and lock_lease must be > 0 seconds, got {self.lock_timeout} "
                              f"and {self.lock_lease}")


def promote_model(cfg: PromoteConfig):
    """Parse the gates (before any evaluation), read ``--data`` (with the version's recorded group
    attributes when no ``--group`` is given: :func:`with_recorded_groups`), then :func:`fairltr.tracking.promote`
    (the registered model's kind — read from the verified model — picks the evaluator).
    Returns the :class:`~fairltr.tracking.PromotionDecision` (``exit_code`` 0
    promoted, 1 rejected, 3 lost to contention)."""
    from fairltr.tracking.runs.config import check_tracking_uri
    from fairltr.gates import parse_gate
    from fairltr.tracking import promote

    parsed = [parse_gate(g) for g in cfg.gates]
    check_tracking_uri()
    data: Any = None
    kw: dict[str, Any] = {}
    if isinstance(cfg.data, RankingSource):  # without --group: the version's own attributes, as evaluate-model
        source = with_recorded_groups(cfg.data, lambda: model_meta_of(f"models:/{cfg.model}/{cfg.version}"))
        data = source.read()
        kw = dict(columns=source.columns, extra_config={"data": str(source.path)}, audit=cfg.audit,
                  confidence=cfg.confidence)
    elif isinstance(cfg.data, RetrievalEvalData):
        d = cfg.data
        data = {"data_dir": d.folder, "split": d.split, "languages": list(d.languages) if d.languages else None,
                "max_items": d.max_items, "seed": d.seed, "k": d.k, "mrc_k": d.mrc_k}
    return promote(cfg.model, cfg.version, parsed, data=data, alias=cfg.alias, no_champion=cfg.no_champion,
                   unloadable_champion=cfg.unloadable_champion, allow_unverified=cfg.allow_unverified,
                   experiment=cfg.experiment, lock_timeout=cfg.lock_timeout, lock_lease=cfg.lock_lease, **kw)


# ---------------------------------------------------------------------------------- mark a run
def mark_run(run_id: str, status: str = "FAILED", force: bool = False) -> tuple[str, str]:
    """``fairltr mark-run``: end a run an earlier command left RUNNING (the tracking server was
    lost), see :func:`fairltr.tracking.runs.life_cycle.mark_run`. Returns (status before, status after)."""
    from fairltr.tracking.runs.config import check_tracking_uri
    from fairltr.tracking.runs.life_cycle import mark_run as _mark_run

    check_tracking_uri()
    return _mark_run(run_id, status, force=force)


# ---------------------------------------------------------------------------------- compare
@dataclass(frozen=True)
class CompareRunsConfig:
    experiment: str
    relevance: str = "kendall_tau"
    fairness: str = "exposure_ratio"
    out: Path | None = None


def compare_runs(cfg: CompareRunsConfig) -> tuple[str, pd.DataFrame]:
    """Relevance vs fairness of every finished run of an experiment, logged as a comparison run."""
    from fairltr.tracking.evaluation.compare import log_runs_comparison
    from fairltr.tracking.runs.config import check_tracking_uri
    from fairltr.workflows.outputs import check_output_file

    if cfg.out is not None:
        check_output_file(cfg.out, (".png",))
    check_tracking_uri()
    return log_runs_comparison(cfg.experiment, relevance=cfg.relevance, fairness=cfg.fairness, out=cfg.out)


def split_gates(texts: Sequence[str]) -> tuple[str, ...]:
    """Gates from repeated ``--gate`` options and ``;``-separated ``--gates`` lists."""
    out: list[str] = []
    for t in texts:
        out.extend(g.strip() for g in t.split(";") if g.strip())
    return tuple(out)
