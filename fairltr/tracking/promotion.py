"""Fairness-gated promotion of a registered ranker to the ``champion`` alias.

A gate is ``<metric> <op> <bound>`` with op in ``>=, <=, >, <`` and bound either a number
(absolute) or ``champion``, ``champion+x``, ``champion-x``, ``champion*x`` (relative to the
current ``@champion`` on the same data). Examples: ``exposure_ratio>=0.9``,
``ndcg_at_10>=champion-0.01``, ``exposure_gap<=champion``.

Policies:
* fail closed: a gate whose metric the candidate lacks (not computed, NaN) fails; so does a
  relative gate whose metric the champion lacks;
* no champion yet (first promotion): relative gates are skipped and reported as such when
  ``no_champion="pass"`` (default: the first model that clears the absolute gates becomes
  champion); ``no_champion="fail"`` fails them instead;
* concurrency: MLflow has no atomic compare-and-set on aliases. Right before moving the alias
  the current champion is read again; if it changed since the evaluation, the new champion is
  evaluated and the gates re-checked (up to ``max_attempts`` times). After moving, the alias is
  read back; a concurrent winner is reported in the decision. Two racing promotions therefore end
  with the alias on one version, and both decisions are recorded;
* record: every decision is written as tags on the model version (``fairltr.promotion.*``) and as
  one tag per decision on the registered model (``fairltr.decision.<utc>.v<version>``), which
  concurrent writers cannot overwrite.
"""

from __future__ import annotations

import json
import uuid
import warnings
from contextlib import ExitStack
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

import pandas as pd

from fairltr.errors import ConfigError
from fairltr.tracking.gates import Gate, GateResult, check_gates, parse_gate
from fairltr.tracking.gates import is_finite_number as _finite

__all__ = ["Gate", "GateResult", "PromotionDecision", "parse_gate", "check_gates", "evaluate_model_uri",
           "version_metrics", "current_champion", "promote", "TAG_PREFIX"]

TAG_PREFIX = "fairltr.promotion."


@dataclass
class PromotionDecision:
    """What :func:`promote` decided and why (also written as tags)."""

    model: str
    version: str
    alias: str
    verdict: str  # "promoted" | "rejected"
    results: list[GateResult]
    champion_before: str | None
    champion_after: str | None
    time: str
    decision_id: str
    candidate_metrics: dict[str, float] = field(default_factory=dict)
    champion_metrics: dict[str, float] | None = None
    evaluation_run_id: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def promoted(self) -> bool:
        return self.verdict == "promoted"

    def summary(self) -> str:
        head = (f"{self.model} v{self.version}: {self.verdict.upper()} "
                f"(@{self.alias} was {'v' + self.champion_before if self.champion_before else 'unset'}, "
                f"now {'v' + self.champion_after if self.champion_after else 'unset'})")
        lines = [head] + ["  " + r.describe() for r in self.results] + ["  note: " + n for n in self.notes]
        return "\n".join(lines)

    def version_tags(self) -> dict[str, str]:
        gated = sorted({r.metric for r in self.results})
        return {
            f"{TAG_PREFIX}verdict": self.verdict,
            f"{TAG_PREFIX}time": self.time,
            f"{TAG_PREFIX}decision_id": self.decision_id,
            f"{TAG_PREFIX}alias": self.alias,
            f"{TAG_PREFIX}gates": json.dumps([r.gate for r in self.results]),
            f"{TAG_PREFIX}results": json.dumps([asdict(r) for r in self.results])[:4900],
            f"{TAG_PREFIX}values": json.dumps({m: self.candidate_metrics.get(m) for m in gated}),
            f"{TAG_PREFIX}champion_values": json.dumps(
                None if self.champion_metrics is None else {m: self.champion_metrics.get(m) for m in gated}),
            f"{TAG_PREFIX}champion_before": self.champion_before or "none",
            f"{TAG_PREFIX}champion_after": self.champion_after or "none",
            f"{TAG_PREFIX}evaluation_run": self.evaluation_run_id or "none",
            f"{TAG_PREFIX}notes": "; ".join(self.notes)[:4900],
        }

    def model_tag(self) -> tuple[str, str]:
        stamp = self.time.replace("+00:00", "Z").replace("-", "").replace(":", "")
        key = f"fairltr.decision.{stamp}.v{self.version}.{self.decision_id[:8]}"
        value = json.dumps({"version": self.version, "verdict": self.verdict, "time": self.time,
                            "gates": {r.gate: r.passed for r in self.results},
                            "champion_before": self.champion_before, "champion_after": self.champion_after})
        return key, value[:4900]


# ---------------------------------------------------------------------------- metrics sources
def evaluate_model_uri(
    model_uri: str, data: pd.DataFrame, config: Mapping[str, Any], run_name: str | None = None
) -> tuple[dict[str, float], str]:
    """Evaluate ``model_uri`` on ``data`` with the ``fair_ranking`` evaluator in a (nested when a
    run is active) MLflow run. Returns (finite metrics, run id)."""
    import mlflow

    nested = mlflow.active_run() is not None
    with mlflow.start_run(run_name=run_name, nested=nested) as run, warnings.catch_warnings():
        # MLflow's dataset schema inference hints about int columns (query id, group): noise here
        warnings.filterwarnings("ignore", message=".*Integer columns in Python cannot represent missing values.*")
        mlflow.set_tag("fairltr.evaluated_model", model_uri)
        result = mlflow.models.evaluate(
            model_uri, data, model_type="fair_ranking", evaluators=["fair_ranking"],
            evaluator_config={"fair_ranking": dict(config)},
        )
    return {k: float(v) for k, v in result.metrics.items() if _finite(v)}, run.info.run_id


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


# ---------------------------------------------------------------------------- promote
def promote(
    model: str,
    version: str | int,
    gates: Sequence[str | Gate],
    *,
    data: pd.DataFrame | None = None,
    query: str = "query_id",
    group: str = "protected",
    judgment: str = "judgment",
    alias: str = "champion",
    no_champion: str = "pass",
    experiment: str = "fairltr-promotion",
    max_attempts: int = 3,
    extra_config: Mapping[str, Any] | None = None,
) -> PromotionDecision:
    """Evaluate version ``version`` of registered model ``model`` (and the current ``@alias``) on
    ``data`` with the fair_ranking evaluator — or, without data, read the metrics logged by each
    version's training run — check ``gates``; move ``alias`` on success; record the decision."""
    import time

    import mlflow
    from mlflow.exceptions import MlflowException

    from fairltr.tracking.config import configure

    if not gates:
        raise ConfigError("give at least one --gate (e.g. 'exposure_ratio>=0.9')")
    parsed = [g if isinstance(g, Gate) else parse_gate(g) for g in gates]
    version = str(version)
    configure()
    client = mlflow.MlflowClient()
    client.get_model_version(model, version)  # raises a clear MLflow error when absent
    configure(experiment)
    config = {"query": query, "group": group, "judgment": judgment, **dict(extra_config or {})}
    cache: dict[str, dict[str, float]] = {}
    notes: list[str] = []

    def metrics_of(v: str) -> dict[str, float]:
        if v not in cache:
            if data is None:
                cache[v] = version_metrics(client, model, v)
            else:
                cache[v], _ = evaluate_model_uri(f"models:/{model}/{v}", data, config,
                                                 run_name=f"{'candidate' if v == version else 'champion'} v{v}")
        return cache[v]

    decision_id = uuid.uuid4().hex
    with ExitStack() as stack:
        eval_run_id = None
        if data is not None:  # one run per promotion; the two evaluations are nested in it
            run = stack.enter_context(mlflow.start_run(run_name=f"promote {model} v{version}"))
            eval_run_id = run.info.run_id
            mlflow.log_params({"model": model, "version": version, "alias": alias, "no_champion": no_champion,
                               "gates": " ; ".join(g.text for g in parsed)})
        champion_before = before = current_champion(client, model, alias)
        results: list[GateResult] = []
        verdict = "rejected"
        for _attempt in range(max_attempts):
            candidate = metrics_of(version)
            champion = metrics_of(before) if before is not None else None
            results = check_gates(parsed, candidate, champion, no_champion)
            if not all(r.passed for r in results):
                break
            now = current_champion(client, model, alias)  # compare-and-set: re-read right before setting
            if now != before:
                notes.append(f"@{alias} moved from {'v' + before if before else 'unset'} to v{now} "
                             "during the evaluation; gates re-checked against it")
                before = now
                continue
            try:
                client.set_registered_model_alias(model, alias, version)
            except MlflowException as exc:
                # two promotions setting a fresh alias at once: the store's unique constraint
                # lets one insert win; the loser re-reads the alias and re-checks against it
                now = current_champion(client, model, alias)
                if now == version:
                    verdict = "promoted"
                    break
                notes.append(f"setting @{alias} failed ({type(exc).__name__}); it now points to "
                             f"{'v' + now if now else 'nothing'}; gates re-checked")
                before = now
                time.sleep(0.05)
                continue
            verdict = "promoted"
            break
        else:
            notes.append(f"@{alias} kept moving; gave up after {max_attempts} attempts (rejected)")
        after = current_champion(client, model, alias)
        if verdict == "promoted" and after != version:
            notes.append(f"a concurrent promotion moved @{alias} to v{after} right after this one")
        decision = PromotionDecision(
            model=model, version=version, alias=alias, verdict=verdict, results=results,
            champion_before=champion_before, champion_after=after,
            time=datetime.now(timezone.utc).isoformat(timespec="microseconds"), decision_id=decision_id,
            candidate_metrics=cache.get(version, {}), champion_metrics=cache.get(before) if before else None,
            evaluation_run_id=eval_run_id, notes=notes,
        )
        for key, value in decision.version_tags().items():
            client.set_model_version_tag(model, version, key, value)
        client.set_registered_model_tag(model, *decision.model_tag())
        if eval_run_id is not None:
            mlflow.set_tags({"fairltr.promotion.verdict": verdict, "fairltr.promotion.model": model,
                             "fairltr.promotion.version": version})
    return decision
