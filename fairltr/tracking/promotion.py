"""Fairness-gated promotion of a registered ranker or retriever to the ``champion`` alias.

The promise: ``@champion`` only ever points at a model that loads, matches the digest recorded
when it was logged, and passed its gates against the champion it replaced.

A gate is ``<metric> <op> <bound>`` with op in ``>=, <=, >, <`` and bound either a number
(absolute) or ``champion``, ``champion+x``, ``champion-x``, ``champion*x`` (relative to the
current ``@champion`` on the same data); two-sided gates and presets too
(:mod:`fairltr.tracking.gates`). Examples: ``exposure_ratio>=0.9``,
``ndcg_at_10>=champion-0.01``, ``mrc_at_5>=0.3``, ``four_fifths@7``.

Steps of :func:`promote`:

1. open the candidate: download it, verify its digest and load it with fairltr's own loaders
   (:mod:`fairltr.tracking.verify`; the stored model code never runs). A model that does not
   load, does not match its digest, or has no digest (unless ``allow_unverified``) is REJECTED
   with a one-line reason — with or without data.
2. metrics: with ``data`` the loaded model is evaluated in this process by the evaluator of its
   kind (``fair_ranking`` on a ranking DataFrame, with the gates' cut-offs added to ``k``;
   ``fair_retrieval`` on a parallel-query folder), nested in one ``promote NAME vV`` run;
   without data, the metrics logged by the version's training run are read.
3. the champion (if any) is opened and measured the same way. A champion that does not load or
   does not verify never blocks replacing it: it is reported, and its relative gates are
   decided by ``unloadable_champion`` — ``"pass"`` (default: skipped, as with no champion, so a
   candidate that clears the absolute gates replaces the broken champion) or ``"fail"`` (fail
   closed, note "champion vN unloadable").
4. the gates are checked (fail closed: a metric the candidate or the champion lacks fails).
5. compare-and-set under a lock the tracking store enforces (:mod:`fairltr.tracking.lock`): the
   lock of the registered model is acquired, the champion re-read; if it moved, the gates are
   re-checked against the new champion (measured outside the lock first when it is new); the
   alias is moved and the decision recorded while the lock is held; the lock is released.
   Concurrent promotions therefore move the alias one at a time, each checked against the
   champion it replaces: with monotone relative gates (``metric>=champion``) the champion's
   metric never decreases and the best eligible candidate of a race ends as champion.
6. outcomes: ``promoted`` (exit status 0), ``rejected`` (1: a gate failed, the model did not
   load or verify), ``contention`` (3: the lock stayed held for ``lock_timeout`` seconds or
   the alias moved ``max_attempts`` times — the gates were not decided; retry).

Record: every decision is written

* into the model version's description, BELOW the version's own training summary (kept): one
  line with the verdict, the gates passed and what the alias points to
  (:meth:`PromotionDecision.description`); a later decision replaces the earlier verdict line;
* as four tags on the model version: ``fairltr.promotion.verdict``, ``.time``,
  ``.evaluation_run`` and ``.decision`` (the whole decision as JSON of at most 4,900 characters:
  gates, results with intervals and per-category ratios, values, champion values, champion
  before/after and status, digest, reason, notes; leaner forms when long, never cut;
  :func:`decision_record` reads it back);
* as one tag per decision on the registered model (``fairltr.decision.<utc>.v<version>.<id>``,
  which concurrent writers cannot overwrite) holding the same one-line text;
* with ``data``, on the ``promote NAME vV`` run: the full decision as ``promotion_decision.json``,
  the gate values as metrics (``candidate/<metric>``, ``champion/<metric>``, ``gate_lower/<metric>``,
  ``gate_upper/<metric>``, ``gates_passed``, ``gates_failed``, ``promoted``) and the decision as
  the run's description.

Confidence (``confidence=0.95``, ``fairltr promote --confidence``; rankers with ``data``): both
models are evaluated with bootstrap intervals at that level, and every gate is checked on the
conservative end of its interval (:mod:`fairltr.tracking.gates`), champion-relative gates on the
paired bootstrap interval of (candidate - champion) over the same resampled queries
(:func:`fairltr.metrics.paired_difference`). Impact-ratio gates (``four_fifths@k``) list each
audited category's ratio and the excluded categories in the decision.
"""

from __future__ import annotations

import json
import tempfile
import time
import uuid
import warnings
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.errors import ConfigError
from fairltr.tracking.gates import Gate, GateResult, check_gates, gate_cutoffs, parse_gate
from fairltr.tracking.gates import is_finite_number as _finite

__all__ = ["Gate", "GateResult", "PromotionDecision", "parse_gate", "check_gates", "evaluate_model_uri",
           "version_metrics", "current_champion", "promote", "TAG_PREFIX", "EXIT_CODES", "TAG_LIMIT",
           "json_within", "retrieval_cutoffs", "decision_record", "DECISION_ARTIFACT", "VERDICT_MARK",
           "with_verdict"]

TAG_PREFIX = "fairltr.promotion."
TAG_LIMIT = 4900  # model version / registered model tag values are VARCHAR(5000) in MLflow's SQL stores
EXIT_CODES = {"promoted": 0, "rejected": 1, "contention": 3}
_HEADS = {"promoted": "PROMOTED", "rejected": "REJECTED", "contention": "LOST TO CONTENTION"}
DECISION_ARTIFACT = "promotion_decision.json"
_STALE_TAGS = tuple(f"fairltr.promotion.{k}" for k in (
    "decision_id", "requested_alias", "gates", "results", "values", "champion_values", "champion_before",
    "champion_after", "champion_status", "digest", "reason", "notes"))
VERDICT_MARK = "\n\nPromotion decision: "  # separates the version's training summary from the latest verdict
_NO_DECISION = " No promotion decision yet."


def with_verdict(description: str | None, verdict_line: str) -> str:
    """The version description with ``verdict_line`` as its latest decision: the training
    summary above :data:`VERDICT_MARK` is kept (its "No promotion decision yet." dropped), an
    earlier verdict replaced."""
    summary = (description or "").split(VERDICT_MARK, 1)[0].replace(_NO_DECISION, "").rstrip()
    if not summary:
        return _cut_text(verdict_line, 4900)
    return summary[:2500] + VERDICT_MARK + _cut_text(verdict_line, 4900 - min(len(summary), 2500) - len(VERDICT_MARK))


def decision_record(tags: Mapping[str, str]) -> dict[str, Any]:
    """The decision a model version's ``fairltr.promotion.decision`` tag holds, as a dict ({} when
    the version has none)."""
    text = tags.get(f"{TAG_PREFIX}decision")
    return json.loads(text) if text else {}


def json_within(candidates: Sequence[Any], limit: int = TAG_LIMIT) -> str:
    """The JSON text of the first of ``candidates`` (richest first) that fits in ``limit``
    characters; the last one is expected to fit, and if it does not, a JSON object saying so is
    returned. Always valid JSON."""
    for value in candidates:
        text = json.dumps(value)
        if len(text) <= limit:
            return text
    return json.dumps({"summary": "too long to store", "chars": len(json.dumps(candidates[-1]))})


def _cut_text(text: str, limit: int = TAG_LIMIT) -> str:
    if len(text) <= limit:
        return text
    tail = f" ... (+{len(text) - limit + 40} characters)"
    return text[:limit - len(tail)] + tail


@dataclass
class PromotionDecision:
    """What :func:`promote` decided and why (also written as tags)."""

    model: str
    version: str
    alias: str
    verdict: str  # "promoted" | "rejected" | "contention"
    results: list[GateResult]
    champion_before: str | None
    champion_after: str | None
    time: str
    decision_id: str
    candidate_metrics: dict[str, float] = field(default_factory=dict)
    champion_metrics: dict[str, float] | None = None
    evaluation_run_id: str | None = None
    notes: list[str] = field(default_factory=list)
    reason: str | None = None
    kind: str | None = None
    digest: str | None = None
    champion_status: str = "none"
    confidence: float | None = None
    interval: dict[str, Any] | None = None  # how the intervals were made: level, n_boot, seed, unit, method

    @property
    def promoted(self) -> bool:
        return self.verdict == "promoted"

    @property
    def exit_code(self) -> int:
        """0 promoted, 1 rejected (gate failed, model unloadable/unverified), 3 lost to contention."""
        return EXIT_CODES[self.verdict]

    def summary(self) -> str:
        head = (f"{self.model} v{self.version}: {_HEADS[self.verdict]} "
                f"(@{self.alias} was {'v' + self.champion_before if self.champion_before else 'unset'}, "
                f"now {'v' + self.champion_after if self.champion_after else 'unset'})")
        lines = [head]
        if self.reason:
            lines.append(f"  reason: {self.reason}")
        lines += ["  " + r.describe() for r in self.results] + ["  note: " + n for n in self.notes]
        return "\n".join(lines)

    def record(self, lean: int = 0) -> dict[str, Any]:
        """The decision as one JSON-able dict; ``lean`` 1..3 drops detail (categories, notes,
        then everything but the verdict and the gates' pass/fail) to fit a tag."""
        gated = sorted({r.metric for r in self.results})
        values = {m: self.candidate_metrics[m] for m in gated if m in self.candidate_metrics}
        values.update({f"{m}{end}": self.candidate_metrics[f"{m}{end}"] for m in gated for end in ("_ci_low", "_ci_high")
                       if f"{m}{end}" in self.candidate_metrics})
        champ = None if self.champion_metrics is None else {
            m: self.champion_metrics[m] for m in gated if m in self.champion_metrics}
        results = [asdict(r) for r in self.results]
        if lean >= 1:
            for r in results:
                cats = r.pop("categories", None) or []
                r["excluded"] = [f"{c['attribute']}={c['category']}" for c in cats if c.get("excluded")][:20]
                r["note"] = (r.get("note") or "")[:200]
        if lean >= 2:
            results = [{k: r.get(k) for k in ("gate", "rule", "passed", "value", "threshold", "margin", "interval",
                                              "difference_interval", "compared")} for r in results]
        out: dict[str, Any] = {
            "decision_id": self.decision_id, "verdict": self.verdict, "time": self.time,
            "requested_alias": self.alias, "model": self.model, "version": self.version,
            "gates": [r.gate for r in self.results], "results": results, "values": values,
            "champion_values": champ, "champion_before": self.champion_before,
            "champion_after": self.champion_after, "champion_status": self.champion_status or None,
            "digest": self.digest, "reason": self.reason, "notes": list(self.notes) if lean < 1 else self.notes[:5],
            "confidence": self.confidence, "interval": self.interval, "evaluation_run": self.evaluation_run_id,
        }
        if lean >= 3:
            failed = [r.gate[:100] for r in self.results if not r.passed]
            out = {k: out[k] for k in ("decision_id", "verdict", "time", "requested_alias", "champion_before",
                                       "champion_after", "digest", "confidence", "evaluation_run")}
            out.update(n_gates=len(self.results), n_failed=len(failed), failed=failed[:20],
                       reason=_cut_text(self.reason or "", 1000) or None)
        return out

    def version_tags(self) -> dict[str, str]:
        """The few ``fairltr.promotion.*`` tags of the version: ``verdict``, ``time``,
        ``evaluation_run`` (``none`` without data) and ``decision`` (the :meth:`record` JSON, the
        richest form within :data:`TAG_LIMIT`). ``requested_alias`` in the record is the alias
        the decision was about: the version holds it only when the verdict is ``promoted``."""
        return {
            f"{TAG_PREFIX}verdict": self.verdict,
            f"{TAG_PREFIX}time": self.time,
            f"{TAG_PREFIX}evaluation_run": self.evaluation_run_id or "none",
            f"{TAG_PREFIX}decision": json_within([self.record(lean) for lean in range(4)]),
        }

    def description(self) -> str:
        """One line for the version page: verdict, alias, UTC time, gates passed (the failed ones
        with their values, or the values of the passed ones), the reason, where the alias points.

        ``REJECTED for @champion (2026-11-30 22:17 UTC): 0 of 2 gates passed: 0.8<=exposure_ratio<=1.25
        failed (exposure_ratio 0.716); ...; @champion stays v1.``"""
        head = {"promoted": f"PROMOTED to @{self.alias}", "rejected": f"REJECTED for @{self.alias}",
                "contention": f"NOT DECIDED for @{self.alias} (lost to contention)"}[self.verdict]
        when = self.time.replace("T", " ")[:16] + " UTC" if "T" in self.time else self.time
        parts = [f"{head} ({when})"]
        if self.results:
            n_pass = sum(r.passed for r in self.results)
            failed = [r for r in self.results if not r.passed]
            shown = failed if failed else self.results
            detail = ", ".join(_gate_words(r) for r in shown[:4])
            detail += f", +{len(shown) - 4} more" if len(shown) > 4 else ""
            parts.append(f"{n_pass} of {len(self.results)} gates passed: {detail}")
        if self.reason:
            parts.append(" ".join(self.reason.split()))
        if self.verdict == "promoted":
            was = "v" + self.champion_before if self.champion_before and self.champion_before != self.version else None
            parts.append(f"replaces {was}" if was else f"first @{self.alias}" if not self.champion_before
                         else f"already held @{self.alias}")
        else:
            parts.append(f"@{self.alias} stays {'v' + self.champion_after if self.champion_after else 'unset'}")
        return _cut_text("; ".join(parts) + ".")

    def model_tag(self) -> tuple[str, str]:
        """(key, value) of the registered model's decision log entry: ``v<version> <description>``."""
        stamp = self.time.replace("+00:00", "Z").replace("-", "").replace(":", "")
        key = f"fairltr.decision.{stamp}.v{self.version}.{self.decision_id[:8]}"
        return key, _cut_text(f"v{self.version} {self.description()}")

    def run_metrics(self) -> dict[str, float]:
        """The decision as metrics of the promotion run: per gated metric the candidate's and the
        champion's value and the gate's bounds, plus the counts of passed and failed gates and
        ``promoted`` (1 or 0)."""
        out: dict[str, float] = {}
        for r in self.results:
            if r.value is not None:
                out[f"candidate/{r.metric}"] = r.value
            champ = (self.champion_metrics or {}).get(r.metric)
            if champ is not None:
                out[f"champion/{r.metric}"] = champ
            if r.lower is not None:
                out[f"gate_lower/{r.metric}"] = r.lower
            if r.upper is not None:
                out[f"gate_upper/{r.metric}"] = r.upper
        n_pass = sum(r.passed for r in self.results)
        out.update(gates_passed=float(n_pass), gates_failed=float(len(self.results) - n_pass),
                   promoted=1.0 if self.promoted else 0.0)
        return out


def _gate_words(r: GateResult) -> str:
    value = "no value" if r.value is None else f"{r.metric} {r.value:.4g}"
    if r.value is not None and r.confidence is not None:
        iv = r.difference_interval or r.interval
        what = "candidate - champion " if r.difference_interval else ""
        value += f", {what}{r.confidence:.0%} interval [{iv[0]:.4g}, {iv[1]:.4g}]" if iv else ", no interval"
    return f"{r.gate} {'passed' if r.passed else 'failed'} ({value})"


def _run_description(decision: PromotionDecision) -> str:
    """The promotion run's description (Markdown): the verdict line, then one line per gate."""
    lines = [f"**{decision.model} v{decision.version}:** {decision.description()}"]
    lines += [f"- `{r.describe()}`" for r in decision.results]
    return _cut_text("\n".join(lines), 7900)  # MLflow keeps at most 8,000 characters of a run tag


# ---------------------------------------------------------------------------- metrics sources
def evaluate_model_uri(
    model: Any, data: pd.DataFrame, config: Mapping[str, Any], run_name: str | None = None,
    label: str | None = None,
) -> tuple[dict[str, float], str]:
    """Evaluate ``model`` (a model URI, or a ``PyFuncModel`` such as
    :func:`fairltr.tracking.verify.load_verified` builds) on ``data`` with the ``fair_ranking``
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


def _resolved_uri(uri: str, version: str) -> str:
    """``models:/NAME@alias`` (or ``models:/NAME/N``) -> ``models:/NAME/<version>``; other URIs unchanged."""
    import re

    m = re.match(r"^models:/([^/@]+)(?:@[^/]+|/\d+)$", uri)
    return f"models:/{m.group(1)}/{version}" if m else uri


def _plain(v: Any) -> Any:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if f == f and abs(f) != float("inf") else None


def _audit_table(run_id: str) -> pd.DataFrame | None:
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
    """The (k, mrc_k) of a retrieval evaluation the gates can read: when the gates name exactly
    one cut-off of ``mrr_at_<k>`` / ``recall_at_<k>`` (resp. one of ``mrc_at_<m>`` /
    ``overlap_at_<m>`` / ``rbo_at_<m>``) it is used, otherwise the given one (a gate on another
    cut-off then fails closed)."""
    import re

    ks, ms = set(), set()
    for g in gates:
        m = re.match(r"^(mrr|recall)_at_(\d+)", g.metric)
        if m:
            ks.add(int(m.group(2)))
        m = re.match(r"^(mrc|overlap|rbo)_at_(\d+)", g.metric)
        if m:
            ms.add(int(m.group(2)))
    k = ks.pop() if len(ks) == 1 else k
    mrc_k = ms.pop() if len(ms) == 1 else mrc_k
    return (k, mrc_k) if mrc_k <= k else (max(k, mrc_k), mrc_k)


# ---------------------------------------------------------------------------- promote
@dataclass
class _Side:
    """A version opened for the decision: its metrics, or why it could not be used."""

    version: str
    metrics: dict[str, float] | None = None
    problem: str | None = None
    kind: str | None = None
    digest: str | None = None
    notes: list[str] = field(default_factory=list)
    scores: Any = None  # a ranker's scores of the promotion data (paired intervals)
    audit_table: pd.DataFrame | None = None  # its audit table (SPEC 3b), when audited


class _Promoter:
    """State of one :func:`promote` call (see the module docstring for the steps)."""

    def __init__(self, client, model: str, version: str, gates: list[Gate], *, data: Any, config: dict[str, Any],
                 alias: str, no_champion: str, unloadable_champion: str, allow_unverified: bool, tmp: Path,
                 confidence: float | None = None, columns: RankingColumns | None = None, audit: Any = None) -> None:
        self.client, self.model, self.version, self.gates = client, model, version, gates
        self.confidence, self.columns, self.audit = confidence, columns, audit
        self._differences: dict[tuple[str, str], dict[str, Any]] = {}
        self.data, self.config, self.alias = data, config, alias
        self.no_champion, self.unloadable_champion, self.allow_unverified = no_champion, unloadable_champion, allow_unverified
        self.tmp = tmp
        self.sides: dict[str, _Side] = {}
        self.notes: list[str] = []

    # ------------------------------------------------------------------ opening and measuring
    def side(self, v: str) -> _Side:
        if v not in self.sides:
            self.sides[v] = self._open(v)
        return self.sides[v]

    def _open(self, v: str) -> _Side:
        import shutil

        from fairltr.tracking.models.verify import ModelRejected, open_verified

        role = "candidate" if v == self.version else "champion"
        dst = self.tmp / f"v{v}"
        dst.mkdir(parents=True, exist_ok=True)
        try:
            try:
                vm, loaded = open_verified(f"models:/{self.model}/{v}", dst, allow_unverified=self.allow_unverified,
                                           client=self.client)
            except ModelRejected as exc:
                return _Side(v, problem=str(exc))
            side = _Side(v, kind=vm.kind, digest=vm.digest if vm.verified else None, notes=list(vm.notes))
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
                text = " ".join(str(exc).split())[:300]
                side.problem = f"{self.model} v{v} cannot be evaluated: {type(exc).__name__}: {text}"
            return side
        finally:
            shutil.rmtree(dst, ignore_errors=True)

    def _data_kind(self) -> str | None:
        if self.data is None:
            return None
        return "ranker" if isinstance(self.data, pd.DataFrame) else "retriever"

    def _metrics(self, v: str, kind: str, loaded: Any, role: str, side: _Side) -> dict[str, float]:
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
                side.audit_table = _audit_table(run_id)
            return metrics
        from fairltr.tracking.evaluation.retrieval_evaluator import evaluate_retriever

        d = dict(self.data)
        k, mrc_k = retrieval_cutoffs(self.gates, int(d.pop("k", 100)), int(d.pop("mrc_k", 5)))
        metrics, _ = evaluate_retriever(loaded, d.pop("data_dir"), run_name=run_name, k=k, mrc_k=mrc_k,
                                        label=label, **d)
        return metrics

    # ------------------------------------------------------------------ gates
    def check(self, cand: _Side, champion: str | None) -> tuple[list[GateResult], dict[str, float] | None]:
        results, champ = self._check(cand, champion)
        return [self._with_categories(r, cand) for r in results], champ

    def _check(self, cand: _Side, champion: str | None) -> tuple[list[GateResult], dict[str, float] | None]:
        kw: dict[str, Any] = {"confidence": self.confidence}
        if champion is None:
            return check_gates(self.gates, cand.metrics or {}, None, self.no_champion, **kw), None
        if champion == self.version:
            same = {g.metric: {"difference": 0.0, "ci_low": 0.0, "ci_high": 0.0} for g in self.gates}
            return check_gates(self.gates, cand.metrics or {}, cand.metrics, self.no_champion,
                               differences=same if self.confidence else None, **kw), cand.metrics
        side = self.side(champion)
        if side.problem is not None:
            results = check_gates(self.gates, cand.metrics or {}, None, self.unloadable_champion,
                                  absent_reason=f"champion v{champion} unloadable", **kw)
            return results, None
        differences = self.differences(cand, champion, side) if self.confidence is not None else None
        return check_gates(self.gates, cand.metrics or {}, side.metrics, self.no_champion,
                           differences=differences, **kw), side.metrics

    def differences(self, cand: _Side, champion: str, side: _Side) -> dict[str, dict[str, Any]]:
        """Paired bootstrap intervals of (candidate - champion) of the champion-relative gates'
        metrics, over the same resampled queries of the promotion data (computed once per champion)."""
        from dataclasses import replace

        from fairltr.metrics.bootstrap import paired_difference

        out: dict[str, dict[str, Any]] = {}
        if cand.scores is None or side.scores is None:
            return out
        audit = replace(self.audit, ci=self.confidence)
        for g in self.gates:
            if not any(b.relative and b.rel_op != "*" for b in g.bounds):
                continue
            key = (champion, g.metric)
            if key not in self._differences:
                self._differences[key] = paired_difference(self.data, cand.scores, side.scores, columns=self.columns,
                                                           metric=g.metric, config=audit)
            out[g.metric] = self._differences[key]
        return out

    def _with_categories(self, r: GateResult, cand: _Side) -> GateResult:
        """An impact-ratio gate's result with each audited category's ratio (and interval) and
        the exclusions, from the candidate's audit table at the gate's cut-off."""
        import re

        m = re.match(r"^impact_ratio_at_(\d+)(?:\.(.+))?$", r.metric)
        table = cand.audit_table
        if m is None or table is None or int(m.group(1)) != int((self.config.get("audit") or {}).get("k", 10)):
            return r
        if m.group(2):
            table = table[table["attribute"].astype(str) == m.group(2)]
        cats = []
        for _, row in table.iterrows():
            item = {"attribute": str(row["attribute"]), "category": str(row["category"]),
                    "impact_ratio": _plain(row["impact_ratio_at_k"]), "excluded": bool(row["excluded"])}
            for end in ("_ci_low", "_ci_high"):
                if f"impact_ratio_at_k{end}" in table.columns:
                    item[f"ci{end[3:]}"] = _plain(row[f"impact_ratio_at_k{end}"])
            cats.append(item)
        r.categories = cats
        excluded = [f"{c['attribute']}={c['category']}" for c in cats if c["excluded"]]
        if excluded:
            r.note = "; ".join(x for x in (r.note, f"excluded (small): {', '.join(excluded[:8])}"
                                           + (f" +{len(excluded) - 8}" if len(excluded) > 8 else "")) if x)
        return r

    def champion_status(self, champion: str | None) -> str:
        if champion is None:
            return "none"
        side = self.sides.get(champion)
        if side is None:
            return "not opened"
        if side.problem is not None:
            return f"unloadable: {side.problem}"
        return "loaded and verified" if side.digest else "loaded (unverified)"

    def current(self) -> str | None:
        return current_champion(self.client, self.model, self.alias)


def promote(
    model: str,
    version: str | int,
    gates: Sequence[str | Gate],
    *,
    data: pd.DataFrame | Mapping[str, Any] | None = None,
    columns: RankingColumns | None = None,
    query: Any = UNSET,
    group: Any = UNSET,
    judgment: Any = UNSET,
    alias: str = "champion",
    no_champion: str = "pass",
    unloadable_champion: str = "pass",
    allow_unverified: bool = False,
    experiment: str = "fairltr-promotion",
    max_attempts: int = 20,
    lock_timeout: float = 120.0,
    lock_lease: float = 60.0,
    extra_config: Mapping[str, Any] | None = None,
    audit: Any = None,
    confidence: float | None = None,
) -> PromotionDecision:
    """Decide whether version ``version`` of registered model ``model`` becomes ``@alias`` (see
    the module docstring). ``data``: None (training metrics), a ranking DataFrame (rankers; its
    column contract ``columns``, or the ``query`` / ``group`` / ``judgment`` names), or for retrievers a mapping of
    :func:`~fairltr.tracking.retrieval_evaluator.evaluate_retriever` arguments with ``data_dir``
    (and ``split``, ``languages``, ``max_items``, ``seed``, ``k``, ``mrc_k``). ``audit`` (a
    :class:`fairltr.metrics.AuditConfig`): rankers are audited on ``data`` (SPEC 3b; its cut-off
    is the one the gates' impact ratios name); ``confidence``: confidence mode (module docstring;
    needs a ranking DataFrame). Returns the recorded :class:`PromotionDecision`; its
    ``exit_code`` is 0, 1 or 3."""
    import mlflow
    from mlflow.exceptions import MlflowException

    from fairltr.metrics import DEFAULT_K
    from fairltr.tracking.runs.config import configure
    from fairltr.tracking.lock import LockTimeout, acquire_lock
    from fairltr.tracking.runs.life_cycle import job_run, log_params

    if not gates:
        raise ConfigError("give at least one --gate (e.g. 'exposure_ratio>=0.9')")
    for name, value in (("no_champion", no_champion), ("unloadable_champion", unloadable_champion)):
        if value not in ("pass", "fail"):
            raise ConfigError(f"{name} must be 'pass' or 'fail', got {value!r}")
    if data is not None and not isinstance(data, pd.DataFrame) and "data_dir" not in data:
        raise ConfigError("promotion data must be a ranking DataFrame or a mapping with 'data_dir'")
    parsed = [g if isinstance(g, Gate) else parse_gate(g) for g in gates]
    if confidence is not None and not isinstance(data, pd.DataFrame):
        raise ConfigError("--confidence needs --data (a ranking file): the intervals are bootstrapped over the "
                          "queries both models are evaluated on")
    version = str(version)
    configure()
    client = mlflow.MlflowClient()
    client.get_model_version(model, version)  # raises a clear MLflow error when absent
    configure(experiment)
    extra = dict(extra_config or {})
    ks = sorted(set(int(k) for k in extra.pop("k", DEFAULT_K)) | set(gate_cutoffs(parsed)))
    c = resolve_columns(columns, query=query, group=group, judgment=judgment)
    groups = list(c.groups)
    config = {"query": c.query, "group": groups[0] if len(groups) == 1 else groups or None, "judgment": c.judgment,
              "k": ks, **extra}
    from fairltr.metrics.audit_jobs import names_audit_metric

    # the audit runs when the decision reads it: a gate on an audit figure, or intervals (--confidence)
    needs_audit = names_audit_metric(g.metric for g in parsed) or confidence is not None or bool(audit and audit.ci)
    if isinstance(data, pd.DataFrame) and groups and needs_audit:
        from dataclasses import replace as _replace

        from fairltr.metrics.audit_jobs import audit_cutoffs_in, audit_to_config, make_audit_config

        gate_ks = audit_cutoffs_in(g.metric for g in parsed)
        audit = _replace(audit or make_audit_config(), k=gate_ks[0] if gate_ks else (audit.k if audit else 10))
        if confidence is not None:
            audit = _replace(audit, ci=float(confidence))
        config["audit"] = audit_to_config(audit)
        config["audit_metrics"] = [g.metric for g in parsed]
    interval = None
    if confidence is not None:
        from fairltr.metrics.audit_jobs import make_audit_config

        audit = audit or make_audit_config(ci=float(confidence))
        from fairltr.metrics.resampling import resolve_unit

        interval = {"level": float(confidence), "n_boot": audit.n_boot, "seed": audit.seed,
                    "unit": resolve_unit(audit.unit, int(data[c.query].nunique())), "method": audit.method}
    decision_id = uuid.uuid4().hex

    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fairltr-promote-")))
        eval_run_id = None
        if data is not None:  # one run per promotion; the evaluations are nested in it
            run = stack.enter_context(job_run(experiment, f"promote {model} v{version}"))
            eval_run_id = run.info.run_id
            log_params(eval_run_id, {"model": model, "version": version, "alias": alias, "no_champion": no_champion,
                                     "unloadable_champion": unloadable_champion,
                                     "gates": " ; ".join(g.text for g in parsed), "data": config.get("data")})
            if isinstance(data, pd.DataFrame):  # the data both sides are measured on, named by its file
                from fairltr.tracking.job_logging.ranker_logging import dataset_of

                mlflow.log_input(dataset_of(data, role="promotion data", path=config.get("data")), context="evaluation")
        p = _Promoter(client, model, version, parsed, data=data, config=config, alias=alias, no_champion=no_champion,
                      unloadable_champion=unloadable_champion, allow_unverified=allow_unverified, tmp=tmp,
                      confidence=confidence, columns=c, audit=audit)
        notes = p.notes
        champion_before = before = p.current()
        cand = p.side(version)
        notes.extend(cand.notes)
        results: list[GateResult] = []
        champ_metrics: dict[str, float] | None = None
        verdict, reason = "rejected", None
        recorded: PromotionDecision | None = None

        def record(verdict_: str, reason_: str | None) -> PromotionDecision:
            champ = before if before != version else None
            decision = PromotionDecision(
                model=model, version=version, alias=alias, verdict=verdict_, results=results,
                champion_before=champion_before, champion_after=p.current(),
                time=datetime.now(timezone.utc).isoformat(timespec="microseconds"), decision_id=decision_id,
                candidate_metrics=cand.metrics or {}, champion_metrics=champ_metrics, evaluation_run_id=eval_run_id,
                notes=notes, reason=reason_, kind=cand.kind, digest=cand.digest,
                champion_status=p.champion_status(champ), confidence=confidence, interval=interval,
            )
            for key, value in decision.version_tags().items():
                client.set_model_version_tag(model, version, key, value)
            mv = client.get_model_version(model, version)
            for key in _STALE_TAGS:  # the per-field tags of earlier fairltr releases: the decision tag holds them
                if key in (mv.tags or {}):
                    client.delete_model_version_tag(model, version, key)
            current = mv.description
            client.update_model_version(model, version, description=with_verdict(current, decision.description()))
            client.set_registered_model_tag(model, *decision.model_tag())
            return decision

        if cand.problem is not None:
            reason = cand.problem
        else:
            for _attempt in range(max_attempts):
                results, champ_metrics = p.check(cand, before)
                if before is not None and before != version:
                    notes_champ = p.sides[before].notes if before in p.sides else []
                    notes.extend(n for n in notes_champ if n not in notes)
                now = p.current()
                if now != before:
                    notes.append(f"@{alias} moved from {'v' + before if before else 'unset'} to "
                                 f"{'v' + now if now else 'unset'} during the evaluation; gates re-checked against it")
                    before = now
                    continue
                if not all(r.passed for r in results):
                    verdict = "rejected"
                    break
                if before == version:
                    notes.append(f"v{version} already holds @{alias}")
                    verdict = "promoted"
                    break
                try:
                    lock = acquire_lock(client, model, lease_s=lock_lease, timeout_s=lock_timeout)
                except LockTimeout as exc:
                    verdict, reason = "contention", str(exc)
                    break
                with lock:
                    now = p.current()
                    if now != before:
                        notes.append(f"@{alias} moved from {'v' + before if before else 'unset'} to "
                                     f"{'v' + now if now else 'unset'} before the lock was taken; gates re-checked")
                        before = now
                        if now is not None and now not in p.sides:
                            continue  # measure the new champion outside the lock, then try again
                        results, champ_metrics = p.check(cand, before)
                        if not all(r.passed for r in results):
                            verdict = "rejected"
                            recorded = record(verdict, None)
                            break
                        if before == version:
                            verdict = "promoted"
                            recorded = record(verdict, None)
                            break
                    if not lock.valid():
                        notes.append("the lock's lease ran out before the alias move; tried again")
                        continue
                    try:
                        client.set_registered_model_alias(model, alias, version)
                    except MlflowException as exc:
                        now = p.current()
                        if now != version:
                            notes.append(f"setting @{alias} failed ({type(exc).__name__}); it now points to "
                                         f"{'v' + now if now else 'nothing'}; gates re-checked")
                            before = now
                            time.sleep(0.05)
                            continue
                    verdict = "promoted"
                    recorded = record(verdict, None)
                    break
            else:
                verdict = "contention"
                reason = f"@{alias} kept moving: gave up after {max_attempts} attempts (gates not decided)"
        decision = recorded or record(verdict, reason)
        if eval_run_id is not None:
            from fairltr.tracking.runs.life_cycle import log_metrics

            log_metrics(eval_run_id, decision.run_metrics())
            mlflow.log_dict(decision.record(), DECISION_ARTIFACT)
            mlflow.set_tags({"fairltr.promotion.verdict": verdict, "fairltr.promotion.model": model,
                             "fairltr.promotion.version": version,
                             "mlflow.note.content": _run_description(decision)})
    return decision
