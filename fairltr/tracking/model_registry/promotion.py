"""Fairness-gated promotion of a registered ranker or retriever to the ``champion`` alias.

The promise: ``@champion`` only ever points at a model that loads, matches the digest recorded
when it was logged, and passed its gates against the champion it replaced.

A gate is ``<metric> <op> <bound>`` with op in ``>=, <=, >, <`` and bound either a number
(absolute) or ``champion``, ``champion+x``, ``champion-x``, ``champion*x`` (relative to the
current ``@champion`` on the same data); two-sided gates and presets too
(:mod:`fairltr.gates`). Examples: ``exposure_ratio>=0.9``,
``ndcg_at_10>=champion-0.01``, ``mrc_at_5>=0.3``, ``four_fifths@7``.

Steps of :func:`promote`:

1. open the candidate: download it, verify its digest and load it with fairltr's own loaders
   (:mod:`fairltr.tracking.models.verify`, :mod:`fairltr.tracking.model_registry.sources`; the stored model code never runs). A model that does not
   load, does not match its digest, or has no digest (unless ``allow_unverified``) is REJECTED
   with a one-line reason — with or without data.
2. metrics: with ``data`` the loaded model is evaluated in this process by the evaluator of its
   kind (``fair_ranking`` on a ranking DataFrame, with the gates' cut-offs added to ``k``;
   ``fair_retrieval`` on a parallel-query folder), nested in one ``promote NAME vV`` run;
   without data, the metrics logged by the version's training run are read.
3. the champion (if any) is opened and measured the same way. A champion that does not load,
   does not verify, or cannot be evaluated on ``data`` (a schema error, a missing column) is
   reported with the reason, and its relative gates are decided by ``unloadable_champion``:
   ``"fail"`` (default: fail closed) or ``"pass"`` (an explicit choice, ``--if-champion-unavailable
   pass``: the relative gates are *skipped*, recorded as "skipped: <reason>" in the line, the
   decision record and the version description, never as passed; a candidate that clears the
   absolute gates then replaces the broken champion).
4. the gates are checked (fail closed: a metric the candidate or the champion lacks fails;
   :mod:`fairltr.tracking.model_registry.checks`).
5. compare-and-set under a lock the tracking store enforces (:mod:`fairltr.tracking.model_registry.lock`,
   :mod:`fairltr.tracking.model_registry.compare_and_set`): the
   lock of the registered model is acquired, the champion re-read; if it moved, the gates are
   re-checked against the new champion (measured outside the lock first when it is new); the
   alias is moved and the decision recorded while the lock is held; the lock is released.
   Concurrent promotions therefore move the alias one at a time, each checked against the
   champion it replaces: with monotone relative gates (``metric>=champion``) the champion's
   metric never decreases and the best eligible candidate of a race ends as champion.
6. outcomes: ``promoted`` (exit status 0), ``rejected`` (1: a gate failed, the model did not
   load or verify), ``contention`` (3: the lock stayed held for ``lock_timeout`` seconds or
   the alias moved ``max_attempts`` times — the gates were not decided; retry).

Record: every decision is written to the version's description and tags, the registered model's
decision log and, with data, the promotion run (:mod:`fairltr.tracking.model_registry.decision`).

Confidence (``confidence=0.95``, ``fairltr promote --confidence``; rankers with ``data``): both
models are evaluated with bootstrap intervals at that level, and every gate is checked on the
conservative end of its interval (:mod:`fairltr.gates`), champion-relative gates on the
paired bootstrap interval of (candidate - champion) over the same resampled queries
(:func:`fairltr.metrics.paired_difference`). Impact-ratio gates (``four_fifths@k``) list each
audited category's ratio and the excluded categories in the decision.
"""

from __future__ import annotations

import tempfile
from contextlib import ExitStack
from dataclasses import replace
from pathlib import Path
from typing import Any, Mapping, Sequence

import pandas as pd

from fairltr.columns import UNSET, RankingColumns, resolve_columns
from fairltr.errors import ConfigError
from fairltr.gates import Gate, gate_cutoffs, parse_gate
from fairltr.tracking.model_registry.checks import GateCheck
from fairltr.tracking.model_registry.compare_and_set import Race, compare_and_set
from fairltr.tracking.model_registry.decision import PromotionDecision, log_decision_run
from fairltr.tracking.model_registry.sources import VersionSource, current_champion

__all__ = ["promote"]


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
    unloadable_champion: str = "fail",
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
    :func:`~fairltr.tracking.evaluation.retrieval_evaluator.evaluate_retriever` arguments with ``data_dir``
    (and ``split``, ``languages``, ``max_items``, ``seed``, ``k``, ``mrc_k``). ``audit`` (a
    :class:`fairltr.metrics.AuditConfig`): rankers are audited on ``data`` (SPEC 3b; its cut-off
    is the one the gates' impact ratios name); ``confidence``: confidence mode (module docstring;
    needs a ranking DataFrame). Returns the recorded :class:`PromotionDecision`; its
    ``exit_code`` is 0, 1 or 3. The body is the steps, each a function."""
    from fairltr.tracking.runs.config import configure

    parsed = _checked_gates(gates, data, no_champion, unloadable_champion, confidence)
    c = resolve_columns(columns, query=query, group=group, judgment=judgment)
    version = str(version)
    client = _checked_version(model, version, parsed, data, c)
    configure(experiment)
    config, audit = _evaluation_config(parsed, c, data, extra_config, audit, confidence)
    audit, interval = _interval(confidence, audit, data, c)
    with ExitStack() as stack:
        tmp = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fairltr-promote-")))
        eval_run_id = None
        if data is not None:  # one run per promotion; the evaluations are nested in it
            eval_run_id = _start_promotion_run(stack, experiment, model, version, alias, parsed, data, config,
                                               no_champion=no_champion, unloadable_champion=unloadable_champion)
        versions = VersionSource(client, model, version, parsed, data=data, config=config,
                                 allow_unverified=allow_unverified, tmp=tmp, confidence=confidence)
        checks = GateCheck(versions, parsed, no_champion=no_champion, unloadable_champion=unloadable_champion,
                           confidence=confidence, columns=c, audit=audit)
        before = current_champion(client, model, alias)  # read before the candidate is measured
        cand = versions.opened(version)
        race = Race(client, versions, checks, cand, alias=alias, before=before, evaluation_run_id=eval_run_id,
                    confidence=confidence, interval=interval, notes=list(cand.notes))
        decision = compare_and_set(race, max_attempts=max_attempts, lock_timeout=lock_timeout, lock_lease=lock_lease)
        if eval_run_id is not None:
            log_decision_run(decision, eval_run_id)
    return decision


def _checked_version(model: str, version: str, parsed: list[Gate], data: Any, c: RankingColumns) -> Any:
    """The tracking store's client, once version ``version`` of ``model`` is known to exist and
    passed the refusals that come before any run or download (:func:`_check_before_work`)."""
    import mlflow

    from fairltr.tracking.runs.config import configure

    configure()
    client = mlflow.MlflowClient()
    mv = client.get_model_version(model, version)  # raises a clear MLflow error when absent
    _check_before_work(client, model, version, mv, parsed, data, c)
    return client


def _check_before_work(client: Any, model: str, version: str, mv: Any, parsed: list[Gate], data: Any,
                       c: RankingColumns) -> None:
    """Refused before any run or download: ``--data`` of the other kind than the version (a
    retriever's tag says which), a gate on a metric that kind's evaluation never computes with
    the group attributes ``c`` names (:class:`~fairltr.errors.OptionError`, exit 2), and without
    ``data`` a gate on a metric the version's training run did not log."""
    if data is None:
        _check_logged(client, model, version, mv, parsed)
        return
    from fairltr.metrics.availability import check_computed

    kind = "retriever" if (mv.tags or {}).get("fairltr.kind") == "retriever" else "ranker"
    given = "ranker" if isinstance(data, pd.DataFrame) else "retriever"
    if kind != given:
        raise ConfigError(f"{model} v{version} is a {kind}: --data must be "
                          + ("a parallel-query folder" if kind == "retriever" else "a ranking file"))
    check_computed([(g.text, g.metric) for g in parsed], evaluator=kind, groups=c.groups)


def _check_logged(client: Any, model: str, version: str, mv: Any, parsed: list[Gate]) -> None:
    """Without ``--data`` the candidate's gates read its training run's metrics: a gate on a
    metric that run has no finite value of could only FAIL with no value, so it is refused now
    (:class:`~fairltr.errors.OptionError`), naming the run's metrics of the same family."""
    from fairltr.errors import OptionError
    from fairltr.gates import is_finite_number

    logged = client.get_run(mv.run_id).data.metrics if mv.run_id else {}
    for g in parsed:
        if is_finite_number(logged.get(g.metric)):
            continue
        family = g.metric.split(".")[0].split("_at_")[0]
        near = sorted(k for k in logged if k.split(".")[0].split("_at_")[0] == family and is_finite_number(logged[k]))
        shown = f"; it logged {', '.join(near[:8])}" if near else ""
        raise OptionError(f"{g.text!r} cannot be checked here: the training run of {model} v{version} logged no "
                          f"finite {g.metric!r}{shown} (without --data the gates read the metrics logged at "
                          "training; --data evaluates the version on a file)")


def _checked_gates(gates: Sequence[str | Gate], data: Any, no_champion: str, unloadable_champion: str,
                   confidence: float | None) -> list[Gate]:
    """The parsed gates, after the arguments are checked (one-line :class:`ConfigError` otherwise)."""
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
    return parsed


def _evaluation_config(parsed: list[Gate], c: RankingColumns, data: Any, extra_config: Mapping[str, Any] | None,
                       audit: Any, confidence: float | None) -> tuple[dict[str, Any], Any]:
    """The ``fair_ranking`` evaluator's config (columns, the cut-offs with the gates' added, the
    extra keys) and the audit: it runs when the decision reads it (a gate on an audit figure, or
    intervals), at the cut-off the gates' impact ratios name."""
    from fairltr.metrics import DEFAULT_K
    from fairltr.metrics.audit_jobs import (
        audit_cutoffs_in, audit_to_config, make_audit_config, names_audit_metric, names_scoring_rate,
    )

    extra = dict(extra_config or {})
    ks = sorted(set(int(k) for k in extra.pop("k", DEFAULT_K)) | set(gate_cutoffs(parsed)))
    groups = list(c.groups)
    config = {"query": c.query, "group": groups[0] if len(groups) == 1 else groups or None, "judgment": c.judgment,
              "k": ks, **extra}
    needs_audit = names_audit_metric(g.metric for g in parsed) or confidence is not None or bool(audit and audit.ci)
    if isinstance(data, pd.DataFrame) and groups and needs_audit:
        gate_ks = audit_cutoffs_in(g.metric for g in parsed)
        audit = replace(audit or make_audit_config(), k=gate_ks[0] if gate_ks else (audit.k if audit else 10))
        if names_scoring_rate(g.metric for g in parsed) and audit.scoring == "none":
            audit = replace(audit, scoring="sample")  # a scoring-rate gate: LL144's median of the whole sample
        if confidence is not None:
            audit = replace(audit, ci=float(confidence))
        config["audit"] = audit_to_config(audit)
        config["audit_metrics"] = [g.metric for g in parsed]
        # the report's per-category verdicts at the gate's own threshold, on the interval's low end
        # in confidence mode
        bounds = [b.value for g in parsed if g.metric.startswith("impact_ratio_at_") for b in g.bounds
                  if not b.relative and b.op in (">=", ">")]
        config["audit_threshold"] = float(bounds[0]) if bounds else 0.8
        config["audit_confidence"] = confidence is not None
    return config, audit


def _interval(confidence: float | None, audit: Any, data: Any, c: RankingColumns) -> tuple[Any, dict[str, Any] | None]:
    """In confidence mode, the audit the paired intervals use and how the intervals are made
    (level, resamples, seed, resampling unit, method); (audit, None) otherwise."""
    if confidence is None:
        return audit, None
    from fairltr.metrics.audit_jobs import make_audit_config
    from fairltr.metrics.resampling import resolve_unit

    audit = audit or make_audit_config(ci=float(confidence))
    interval = {"level": float(confidence), "n_boot": audit.n_boot, "seed": audit.seed,
                "unit": resolve_unit(audit.unit, int(data[c.query].nunique())), "method": audit.method}
    return audit, interval


def _start_promotion_run(stack: ExitStack, experiment: str, model: str, version: str, alias: str,
                         parsed: list[Gate], data: Any, config: Mapping[str, Any], *, no_champion: str,
                         unloadable_champion: str) -> str:
    """Open the ``promote NAME vV`` run in ``stack`` (the evaluations nest in it), log what is
    decided, and for rankers the data both sides are measured on; returns its id."""
    import mlflow

    from fairltr.tracking.runs.life_cycle import job_run, log_params

    run = stack.enter_context(job_run(experiment, f"promote {model} v{version}"))
    run_id = run.info.run_id
    log_params(run_id, {"model": model, "version": version, "alias": alias, "no_champion": no_champion,
                        "unloadable_champion": unloadable_champion,
                        "gates": " ; ".join(g.text for g in parsed), "data": config.get("data")})
    if isinstance(data, pd.DataFrame):  # the data both sides are measured on, named by its file
        from fairltr.tracking.job_logging.ranker_logging import dataset_of
        from fairltr.tracking.runs.racing_writes import log_input

        # two promoters of one model log the same file at once: the slower insert is repeated
        log_input(dataset_of(data, role="promotion data", path=config.get("data")), context="evaluation")
    return run_id
