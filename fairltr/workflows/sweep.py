"""Sweeps (``fairltr sweep``): the trial of each method, built on the same recipes as the
single-run jobs, handed to :func:`tuning.sweep.run_sweep` (Optuna study, N workers, MLflow
mirror, Pareto report).

Which methods exist, what each searches and how its trial is made is declared once per method
in :mod:`fairltr.workflows.sweep_methods` (the registry: :mod:`fairltr.workflows.sweep_plugins`).
The trials (:class:`RankingTrial`, :class:`PLRankTrial`, :class:`DprTrial` and their builders)
live in :mod:`fairltr.workflows.sweep_trials` and are re-exported here; this module runs a sweep
job (:func:`run_sweep_job`), and registers a sweep's best trade-off.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.errors import ConfigError
from fairltr.workflows.ranking import RankerSpec, train_and_evaluate
from fairltr.workflows.sweep_plugins import (RankingContext, RankingPlan, SweepInputs, get_sweep_method,
                                             sweep_method_names)
from fairltr.workflows.sweep_trials import (  # noqa: F401 (re-exported: the paths callers name)
    DprTrial, Fold, PLRankTrial, RankedHook, RankingTrial, _plan_of, _pooled, _trial_audit, dpr_trial, dpr_trial_from,
    mean_over_folds, plrank_trial_from, ranking_trial, ranking_trial_from,
)

__all__ = ["RankingTrial", "DprTrial", "PLRankTrial", "RankingPlan", "RankingContext", "ranking_trial", "dpr_trial",
           "run_sweep_job", "mean_over_folds", "RANKING_METHODS", "one_torch_thread"]


def __getattr__(name: str):
    if name == "RANKING_METHODS":  # the registered ranking methods (read from the registry, not a list)
        return tuple(sweep_method_names("ranking"))
    raise AttributeError(name)


def one_torch_thread() -> None:
    """Torch uses one thread in this process: a sweep worker (N of them share one study and the
    machine's cores)."""
    import torch

    torch.set_num_threads(1)


def run_sweep_job(cfg, echo: Callable[[str], None] = print, *, folds: Sequence[Fold] | None = None,
                  columns: RankingColumns = DEFAULT_COLUMNS, on_ranked: RankedHook | None = None,
                  reading: Mapping[str, Any] | None = None):
    """Build the trial of the registered method ``cfg.method`` (a :class:`tuning.sweep.SweepConfig`)
    and run the sweep on the method's default objectives unless ``cfg.objectives`` is given.

    ``folds`` replaces ``cfg.train``/``cfg.test`` for ranking methods (e.g. TREC's six folds).
    ``on_ranked``: a ranking trial's hook (see :data:`RankedHook`; the comparison benchmark keeps
    each trial's test ranks for its bootstrap). ``reading``: how the ranking files are read
    (``na_values``, ``duplicates``: :class:`~fairltr.workflows.options.RankingSource`).
    All inputs are read and validated before the study is created or joined."""
    from fairltr.tracking.runs.config import check_tracking_uri
    from fairltr.workflows.outputs import check_output_dir
    from tuning.sweep import run_sweep
    from fairltr.tracking import resolve_tracking_uri

    method = get_sweep_method(cfg.method)
    if not str(cfg.study).strip():
        raise ConfigError("--study must be a non-empty name")
    check_output_dir(cfg.out)
    if cfg.mlflow:
        check_tracking_uri(resolve_tracking_uri(cfg.tracking_uri))
    method.check_requirements()
    _check_sweep_metrics(cfg, method, columns)
    if method.data == "ranking" and folds is None:
        from fairltr.workflows.options import RankingSource

        read = dict(reading or {})
        folds = [(RankingSource(cfg.train, columns=columns, **read).read(),
                  RankingSource(cfg.test, columns=columns, **read).read())]
    runner = method.trial(SweepInputs(cfg, list(folds) if method.data == "ranking" else None, columns))
    if on_ranked is not None:
        if not hasattr(runner, "on_ranked"):
            raise ConfigError(f"on_ranked takes a ranking method; {cfg.method!r} is not one")
        runner.on_ranked = on_ranked
    if cfg.register_best and not isinstance(runner, RankingTrial):
        raise ConfigError(f"--register-best takes a ranking method with a search over DELTR, LambdaMART or a "
                          f"re-ranker; {cfg.method!r} is not one")
    if cfg.register_best and not cfg.mlflow:
        raise ConfigError("--register-best registers in MLflow: drop --no-mlflow")
    result = run_sweep(cfg, runner=runner, echo=echo, default_objectives=method.default_objectives)
    if cfg.register_best and result.report is not None and result.report.best is not None:
        result.registered = register_best_tradeoff(cfg, runner, result.report.best, echo=echo)
    return result


def _check_sweep_metrics(cfg, method, columns: RankingColumns) -> None:
    """An objective or constraint on a metric the method's evaluation never computes (a retrieval
    metric of a ranker, an audit figure without a group attribute, an attribute not given) is
    refused now, before any study or run (not a NaN in every trial)."""
    from fairltr.metrics.availability import check_computed
    from tuning.objectives import DEFAULT_OBJECTIVES, parse_constraint, parse_objectives

    objectives = parse_objectives(cfg.objectives or method.default_objectives or DEFAULT_OBJECTIVES)
    named = [(o.short, o.name) for o in objectives]
    named += [(str(text), parse_constraint(str(text)).metric) for text in (cfg.constraints or ())]
    check_computed(named, evaluator=method.evaluates, groups=columns.groups)


def serving_policy_of(spec: RankerSpec) -> str | None:
    """The serving policy (:mod:`fairltr.fair.policy`) that applies ``spec``'s post-processing
    (FA*IR or a Geyik re-ranker of every predicted list) at serving time, written by the policy's
    own :meth:`~fairltr.fair.policy.ServingPolicy.describe`; None without one."""
    from fairltr.fair.policy import ServingPolicy

    if spec.fair_post is not None:
        fp = spec.fair_post
        return ServingPolicy("fair", p=fp.p, alpha=fp.alpha, adjust=fp.adjust).describe()
    if spec.multinomial_post is not None:
        mp = spec.multinomial_post
        return ServingPolicy("fair", p=mp.spec(), alpha=mp.alpha, adjust=mp.adjust, k=mp.k or None).describe()
    if spec.geyik_post is not None:
        gp = spec.geyik_post
        target = ",".join(f"{c}:{v:.6g}" for c, v in gp.target) if gp.target else None
        return ServingPolicy(gp.method, k=gp.k or None, target=target).describe()
    return None


def register_best_tradeoff(cfg, runner: RankingTrial, best: Mapping[str, Any], echo: Callable[[str], None] = print
                           ) -> tuple[str, str, str | None]:
    """Retrain the sweep's best trade-off on the (pooled) training data, evaluate it on the first
    test table, and log and register it as ONE model under ``cfg.register_best``: the ranker
    without its post-processing, which becomes the model's serving policy (so the served model
    ranks as the trial did). Returns (name, version, policy)."""
    import mlflow

    from fairltr.workflows.options import RankingSource, TrackingOptions
    from fairltr.workflows.train_ranker import publish_ranker
    from fairltr.tracking import resolve_tracking_uri

    mlflow.set_tracking_uri(resolve_tracking_uri(cfg.tracking_uri))  # the sweep's store, not the default one
    values = {name: float(best[name]) for name in runner.space.names if name in best}
    spec = runner.spec_for(values)
    policy = serving_policy_of(spec)
    train, test = _pooled(runner.folds), runner.folds[0][1]
    title = f"{cfg.method} best trade-off of sweep {cfg.study} (trial {best.get('trial', '?')})"
    tracking = TrackingOptions(experiment=cfg.experiment, register=cfg.register_best, serve_rerank=policy,
                               run_name=title, tags={"fairltr.sweep.study": str(cfg.study)})
    source = RankingSource(Path(cfg.train), columns=runner.columns)
    test_source = RankingSource(Path(cfg.test), columns=runner.columns)
    res = publish_ranker(lambda: train_and_evaluate(train, test, spec, runner.columns), out_dir=Path(cfg.out) / "best",
                         model_format="json", tracking=tracking, train_frame=train, train_source=source,
                         test_source=test_source, test=test, params={**spec.model_params(), **values}, run_name=title,
                         echo=echo)
    return str(cfg.register_best), str(res.registered_version), policy
