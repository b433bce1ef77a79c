"""Where a promotion's metrics come from: a version evaluated on the promotion data in this
process (:func:`evaluate_model_uri` for rankers, the ``fair_retrieval`` evaluator for retrievers,
at the cut-offs the gates read: :func:`retrieval_cutoffs`), or without data the metrics its
training run logged (:func:`version_metrics`); the audit table a ranker's evaluation logged
(:func:`audit_table`); the version an alias points to (:func:`current_champion`).

:class:`VersionSource` opens the versions a decision compares (download, digest check, load by
fairltr's own loaders: :mod:`fairltr.tracking.models.verify`) and measures each once.
"""

from __future__ import annotations

import tempfile
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from fairltr.errors import ConfigError
from fairltr.gates import Gate
from fairltr.gates import is_finite_number as _finite

__all__ = ["evaluate_model_uri", "version_metrics", "current_champion", "retrieval_cutoffs", "audit_table",
           "OpenedVersion", "VersionSource"]


def evaluate_model_uri(
    model: Any, data: pd.DataFrame, config: Mapping[str, Any], run_name: str | None = None,
    label: str | None = None,
) -> tuple[dict[str, float], str]:
    """Evaluate ``model`` (a model URI, or a ``PyFuncModel`` such as
    :func:`fairltr.tracking.models.verify.load_verified` builds) on ``data`` with the ``fair_ranking``
    evaluator in a (nested when a run is active) MLflow run tagged ``fairltr.evaluated_model``
    = ``label`` (default: the URI). ``config["data"]`` (optional) is the file ``data`` was read
    from. The run records what was evaluated on what: params ``model_uri``, ``data``, the
    columns and cut-offs; the data as an MLflow dataset named by its file (``mlflow.data``,
    logged as the evaluation's input); a description naming the fairness metrics; the report
    is titled with the model URI and the data file. Returns (finite metrics with their
``<metric>_n_queries`` counts, run id)."""
    import mlflow

    from fairltr.tracking.evaluation.evaluator import metrics_with_counts
    from fairltr.tracking.job_logging.ranker_logging import dataset_of, metrics_description
    from fairltr.tracking.runs.life_cycle import log_params
    from fairltr.tracking.runs.racing_writes import log_input

    label = label or (model if isinstance(model, str) else "in-process model")
    source = config.get("data")
    config = {**config, "model_uri": label}
    dataset = dataset_of(data, role="evaluation data", path=source)
    nested = mlflow.active_run() is not None
    with mlflow.start_run(run_name=run_name, nested=nested) as run, warnings.catch_warnings():
        # MLflow's dataset schema inference hints about int columns (query id, group): noise here
        warnings.filterwarnings("ignore", message=".*Integer columns in Python cannot represent missing values.*")
        warnings.filterwarnings("ignore", message=".*Found extra inputs in the model input.*")
        mlflow.set_tag("fairltr.evaluated_model", label)
        resolved = config.get("model_version")
        if resolved:  # an alias URI names a moving target: record the version it pointed to
            mlflow.set_tags({"fairltr.evaluated_version": str(resolved),
                             "fairltr.evaluated_model_resolved": _resolved_uri(label, str(resolved))})
        groups = config.get("group")
        log_params(run.info.run_id, {
            "model_uri": label, "model_version": resolved,
            "data": str(source) if source else f"in-memory table ({dataset.digest})",
            "rows": len(data), **{key: config[key] for key in ("query", "judgment") if key in config},
            "group": ",".join(groups) if isinstance(groups, (list, tuple)) else groups,
            "k": ",".join(str(k) for k in config.get("k", ())) or None})
        # evaluate logs the dataset itself, unguarded: log it first (a racing process's insert
        # tolerated), so evaluate's own log finds the dataset and the run's input and writes nothing
        log_input(dataset, context="evaluation")
        result = mlflow.models.evaluate(
            model, dataset, model_type="fair_ranking", evaluators=["fair_ranking"],
            evaluator_config={"fair_ranking": dict(config)},
        )
        metrics = {k: v for k, v in metrics_with_counts(result).items() if _finite(v)}
        data_name = dataset.name
        what = f"`{label}` (version {resolved})" if resolved and "@" in label else f"`{label}`"
        mlflow.set_tag("mlflow.note.content", metrics_description(
            metrics, lead=f"Evaluation of {what} on `{data_name}` ({len(data)} rows)."))
    return metrics, run.info.run_id


def _short(text: str, limit: int = 400) -> str:
    """``text`` on one line, its END kept when long (an error's reason comes last)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else "..." + text[-(limit - 3):]


def _resolved_uri(uri: str, version: str) -> str:
    """``models:/NAME@alias`` (or ``models:/NAME/N``) -> ``models:/NAME/<version>``; other URIs unchanged."""
    import re

    m = re.match(r"^models:/([^/@]+)(?:@[^/]+|/\d+)$", uri)
    return f"models:/{m.group(1)}/{version}" if m else uri


def audit_table(run_id: str) -> pd.DataFrame | None:
    """The ``audit_table.csv`` the fair_ranking evaluator logged on ``run_id`` (None without)."""
    import mlflow

    from fairltr.tracking.evaluation.evaluator import AUDIT_ARTIFACT

    with tempfile.TemporaryDirectory(prefix="fairltr-audit-") as tmp:
        try:
            path = mlflow.artifacts.download_artifacts(run_id=run_id, artifact_path=AUDIT_ARTIFACT, dst_path=tmp)
        except Exception:  # no audit (no group column): the gate reads the metric alone
            return None
        return pd.read_csv(path, keep_default_na=False, na_values=[""])


def version_metrics(client, name: str, version: str) -> dict[str, float]:
    """Metrics recorded at training time on the run that produced a model version."""
    mv = client.get_model_version(name, version)
    if not mv.run_id:
        return {}
    return {k: float(v) for k, v in client.get_run(mv.run_id).data.metrics.items() if _finite(v)}


def current_champion(client, name: str, alias: str = "champion") -> str | None:
    """The version the alias points to, or None."""
    from mlflow.exceptions import MlflowException

    try:
        return str(client.get_model_version_by_alias(name, alias).version)
    except MlflowException:
        return None


def retrieval_cutoffs(gates: Sequence[Gate], k: int, mrc_k: int) -> tuple[int, int]:
    """The (k, mrc_k) of a retrieval evaluation the gates can read
    (:func:`fairltr.retrieval.retrieval_cutoffs` of the gates' metrics: a single named cut-off of
    each kind is used, otherwise the given one, and a gate on another cut-off then fails closed)."""
    from fairltr.retrieval.evaluate import retrieval_cutoffs as cutoffs_of

    return cutoffs_of([g.metric for g in gates], k, mrc_k)


@dataclass
class OpenedVersion:
    """A version opened for the decision: its metrics, or why it could not be used."""

    version: str
    metrics: dict[str, float] | None = None
    problem: str | None = None
    kind: str | None = None
    digest: str | None = None
    notes: list[str] = field(default_factory=list)
    scores: Any = None  # a ranker's scores of the promotion data (paired intervals)
    audit_table: pd.DataFrame | None = None  # its audit table (SPEC 3b), when audited


class VersionSource:
    """Opens and measures the versions of registered model ``model`` that one promotion compares
    (each once: :meth:`opened`): ``candidate`` is the version being promoted, the others are
    champions. ``data`` is None (training metrics), a ranking DataFrame or a retriever mapping
    with ``data_dir``; ``config`` the ``fair_ranking`` evaluator's; with ``confidence`` a ranker's
    scores are kept for the paired intervals."""

    def __init__(self, client: Any, model: str, candidate: str, gates: Sequence[Gate], *, data: Any,
                 config: Mapping[str, Any], allow_unverified: bool, tmp: Path,
                 confidence: float | None = None) -> None:
        self.client, self.model, self.candidate, self.gates = client, model, candidate, list(gates)
        self.data, self.config, self.allow_unverified = data, config, allow_unverified
        self.tmp, self.confidence = tmp, confidence
        self.sides: dict[str, OpenedVersion] = {}

    def opened(self, v: str) -> OpenedVersion:
        """Version ``v`` opened and measured (on first use; cached)."""
        if v not in self.sides:
            self.sides[v] = self._open(v)
        return self.sides[v]

    def has_opened(self, v: str) -> bool:
        return v in self.sides

    def _open(self, v: str) -> OpenedVersion:
        import shutil

        from fairltr.tracking.models.verify import ModelRejected, open_verified

        role = "candidate" if v == self.candidate else "champion"
        dst = self.tmp / f"v{v}"
        dst.mkdir(parents=True, exist_ok=True)
        try:
            try:
                vm, loaded = open_verified(f"models:/{self.model}/{v}", dst, allow_unverified=self.allow_unverified,
                                           client=self.client)
            except ModelRejected as exc:
                return OpenedVersion(v, problem=str(exc))
            side = OpenedVersion(v, kind=vm.kind, digest=vm.digest if vm.verified else None, notes=list(vm.notes))
            expected = self._data_kind()
            if expected is not None and vm.kind != expected:
                if role == "candidate":
                    raise ConfigError(f"{self.model} v{v} is a {vm.kind}: --data must be "
                                      + ("a parallel-query folder" if vm.kind == "retriever" else "a ranking file"))
                side.problem = f"the champion is a {vm.kind}, the candidate is not"
                return side
            try:
                side.metrics = self._metrics(v, vm.kind, loaded, role, side)
            except Exception as exc:  # a model that cannot score the data is not promotable
                from fairltr.tracking.models.signature_types import schema_error_line

                side.problem = f"{self.model} v{v} cannot be evaluated on the data: {_short(schema_error_line(exc))}"
            return side
        finally:
            shutil.rmtree(dst, ignore_errors=True)

    def _data_kind(self) -> str | None:
        if self.data is None:
            return None
        return "ranker" if isinstance(self.data, pd.DataFrame) else "retriever"

    def _metrics(self, v: str, kind: str, loaded: Any, role: str, side: OpenedVersion) -> dict[str, float]:
        if self.data is None:
            return version_metrics(self.client, self.model, v)
        run_name = f"{role} v{v}"
        label = f"models:/{self.model}/{v}"
        if kind == "ranker":
            metrics, run_id = evaluate_model_uri(loaded, self.data, self.config, run_name=run_name, label=label)
            if self.confidence is not None:
                from fairltr.tracking.evaluation.evaluator import model_scores

                side.scores = model_scores(loaded, self.data)
            if "audit" in self.config:
                side.audit_table = audit_table(run_id)
            return metrics
        from fairltr.tracking.evaluation.retrieval_evaluator import evaluate_retriever

        d = dict(self.data)
        k, mrc_k = retrieval_cutoffs(self.gates, int(d.pop("k", 100)), int(d.pop("mrc_k", 5)))
        metrics, _ = evaluate_retriever(loaded, d.pop("data_dir"), run_name=run_name, k=k, mrc_k=mrc_k,
                                        label=label, **d)
        return metrics
