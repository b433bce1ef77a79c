"""Sweeps (``fairltr sweep``): the trial of each method, built on the same recipes as the
single-run jobs, handed to :func:`tuning.sweep.run_sweep` (Optuna study, N workers, MLflow
mirror, Pareto report).

Which methods exist, what each searches and how its trial is made is declared once per method
in :mod:`fairltr.workflows.sweep_methods` (the registry: :mod:`fairltr.workflows.sweep_registry`).
This module holds the two kinds of trial:

* :class:`RankingTrial`: values -> a :class:`RankerSpec` (the method's declared ``to_spec``) ->
  :func:`~fairltr.workflows.ranking.train_and_evaluate` on every fold; a post-processing method
  (``reuse_base``) fits its base model once per fold and process and re-ranks it per trial;
* :class:`DprTrial`: a bi-encoder with the retrieval loss weighted by ``alpha`` (frozen document
  tower; the corpus embeddings are computed once per sweep and cached on disk).

Several (train, test) folds: every metric is the mean over the folds where it is defined.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.errors import ConfigError, DataError
from fairltr.workflows.ranking import RankerSpec, train_and_evaluate, validate_tables
from fairltr.workflows.sweep_registry import (RankingContext, RankingPlan, SweepInputs, get_sweep_method,
                                             sweep_method_names)

__all__ = ["RankingTrial", "DprTrial", "PLRankTrial", "RankingPlan", "RankingContext", "ranking_trial", "dpr_trial",
           "run_sweep_job", "mean_over_folds", "RANKING_METHODS", "one_torch_thread"]

Fold = tuple[pd.DataFrame, pd.DataFrame]
RankedHook = Callable[[Mapping[str, float], list[pd.DataFrame]], None]
"""``on_ranked(values, ranked)`` of a ranking trial: the trial's values and each fold's ranked test
table (``score``, 1-based ``rank``), e.g. to keep what a bootstrap over test queries needs."""


def __getattr__(name: str):
    if name == "RANKING_METHODS":  # the registered ranking methods (read from the registry, not a list)
        return tuple(sweep_method_names("ranking"))
    raise AttributeError(name)


def one_torch_thread() -> None:
    """Torch uses one thread in this process: a sweep worker (N of them share one study and the
    machine's cores)."""
    import torch

    torch.set_num_threads(1)


def mean_over_folds(per_fold: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """Each metric's mean over the folds where it is finite (NaN where it is nowhere); with
    several folds also ``n_folds``. ``exposure_disparity`` and ``exposure_shortfall`` are
    functions of the reported ``exposure_ratio``, so they are recomputed from its mean."""
    from fairltr.metrics import derive_from_ratio

    if len(per_fold) == 1:
        return dict(per_fold[0])
    keys = sorted(set().union(*per_fold))
    out: dict[str, float] = {}
    for k in keys:
        vals = np.array([f.get(k, np.nan) for f in per_fold], dtype=np.float64)
        ok = np.isfinite(vals)
        out[k] = float(vals[ok].mean()) if ok.any() else float("nan")
    out["n_folds"] = float(len(per_fold))
    return derive_from_ratio(out)


@dataclass
class RankingTrial:
    """``trial(values) -> metrics`` for a ranking method; ``space`` is its search space."""

    method: str
    folds: list[Fold]
    space: Any
    base: RankerSpec = field(default_factory=RankerSpec)
    columns: RankingColumns = DEFAULT_COLUMNS
    loss: str = "exposure_hinge"
    plan: RankingPlan | None = None
    context: RankingContext | None = None
    audit: Any = None  # fairltr.metrics.AuditConfig: trials also report SPEC 3b's audit figures
    audit_ks: tuple[int, ...] = ()  # further cut-offs of impact_ratio_at_<k> / ndkl_at_<k> objectives
    on_ranked: RankedHook | None = None  # called with (values, the ranked test table of each fold)
    _base_models: dict[int, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.plan is None:
            self.plan = _plan_of(self.method)
        if self.context is None:
            self.context = RankingContext(_pooled(self.folds), self.columns, self.loss)

    @property
    def study_loss(self) -> str:
        """The loss recorded on the study (``""`` for methods that do not train with ``--loss``)."""
        return self.loss if self.plan.uses_loss else ""

    def spec_for(self, values: Mapping[str, float]) -> RankerSpec:
        """The ranker setting a trial's hyper-parameter values stand for."""
        return self.plan.to_spec(self.base, values, self.context)

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:
        spec = self.spec_for(values)
        per_fold, ranked = [], []
        for i, (train, test) in enumerate(self.folds):
            model = None
            if self.plan.reuse_base:  # one base ranking per fold, re-ranked per trial
                if i not in self._base_models:
                    self._base_models[i] = train_and_evaluate(train, None, spec.with_(fair_post=None, geyik_post=None,
                                                                         multinomial_post=None),
                                                              self.columns).model
                model = self._base_models[i]
            outcome = train_and_evaluate(train, test, spec, self.columns, model=model, audit=self.audit,
                                         extra_audit_ks=self.audit_ks, audit_required=self.audit is not None)
            per_fold.append(outcome.metrics)
            ranked.append(outcome.ranked)
        if self.on_ranked is not None:
            self.on_ranked(values, ranked)
        return mean_over_folds(per_fold)


def _plan_of(method: str) -> RankingPlan:
    m = get_sweep_method(method) if method in sweep_method_names() else None
    if m is None or m.ranking is None:
        raise ConfigError(f"unknown ranking sweep method {method!r}; choose one of {sweep_method_names('ranking')}")
    return m.ranking


def ranking_trial(method: str, folds: Sequence[Fold], *, loss: str = "exposure_hinge",
                  p_range: tuple[float, float] | None = None, alpha_range: tuple[float, float] = (0.01, 0.5),
                  seed: int = 0, max_iter: int | None = None, columns: RankingColumns = DEFAULT_COLUMNS,
                  audit_texts: Sequence[str] = ()) -> RankingTrial:
    """The trial of the registered ranking method ``method`` over ``folds``; FA*IR's ``fair_p``
    range comes from the pooled training share of all folds. Validates the method's extras, the
    loss kind and the data before the study starts. When ``audit_texts`` (the objectives and
    constraints) name a worst-case audit metric (``impact_ratio_at_10``, ``exposure_ratio_worst``,
    ...), every trial is audited (point figures, SPEC 3b) at the cut-offs they name (10 by default)."""
    plan = _plan_of(method)
    get_sweep_method(method).check_requirements()
    if not folds:
        raise ConfigError("a sweep needs at least one (train, test) pair")
    base = RankerSpec(seed=seed, max_iter=max_iter, device="cpu")
    for i, (train, test) in enumerate(folds):
        for name, df in (("train", train), ("test", test)):
            if len(df) == 0:
                raise DataError(f"the {name} table{f' of fold {i + 1}' if len(folds) > 1 else ''} is empty")
        validate_tables(train, test, base, columns)  # bad data stops the sweep before the study, not in trial 0
    context = RankingContext(_pooled(folds), columns, loss, p_range, alpha_range)
    audit, audit_ks = _trial_audit(audit_texts, columns)
    return RankingTrial(method, list(folds), plan.space(context), base, columns, loss, plan, context, audit, audit_ks)


def _trial_audit(audit_texts: Sequence[str], columns: RankingColumns) -> tuple[Any, tuple[int, ...]]:
    """The point audit a sweep's trials run when its objectives or constraints name an audit
    metric, and the further cut-offs they name; (None, ()) otherwise."""
    from fairltr.workflows.audit import audit_cutoffs_in, make_audit_config, names_audit_metric, names_scoring_rate

    if not names_audit_metric(audit_texts):
        return None, ()
    if not columns.groups:
        raise ConfigError("the audit objectives need a group column (--group)")
    ks = audit_cutoffs_in(audit_texts) or [10]
    scoring = "sample" if names_scoring_rate(audit_texts) else "none"
    return make_audit_config(k=ks[0], ci=0.0, scoring=scoring), tuple(ks[1:])


def _pooled(folds: Sequence[Fold]) -> pd.DataFrame:
    """The training tables of all folds as one (FA*IR's share, Geyik's category mix)."""
    return folds[0][0] if len(folds) == 1 else pd.concat([tr for tr, _ in folds], ignore_index=True)


def ranking_trial_from(inputs: SweepInputs) -> RankingTrial:
    """:func:`ranking_trial` of a sweep's config and folds (the ``trial`` of every ranking method)."""
    cfg = inputs.cfg
    return ranking_trial(cfg.method, inputs.folds, loss=cfg.loss, p_range=cfg.p_range, alpha_range=cfg.alpha_range,
                         seed=cfg.seed, max_iter=cfg.max_iter, columns=inputs.columns,
                         audit_texts=[str(cfg.objectives or ""), *map(str, cfg.constraints or ())])


@dataclass
class PLRankTrial:
    """``trial(values) -> metrics`` of the ``plrank`` method: a Plackett-Luce policy trained with
    the trial's ``lambda`` (the policy loss's declared weight) by
    :func:`fairltr.workflows.train_plrank.plrank_outcome` on every fold, evaluated on its
    deterministic (mean-score) ranking; metrics are the means over folds."""

    folds: list[Fold]
    space: Any
    spec: Any
    columns: RankingColumns = DEFAULT_COLUMNS
    method: str = "plrank"
    on_ranked: RankedHook | None = None  # as RankingTrial's
    study_loss = ""

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:
        from fairltr.workflows.train_plrank import plrank_outcome

        spec = self.spec.with_(lam=float(values[self.space.params[0].name]))
        outcomes = [plrank_outcome(train, test, spec, self.columns) for train, test in self.folds]
        if self.on_ranked is not None:
            self.on_ranked(values, [o.ranked for o in outcomes])
        return mean_over_folds([o.metrics for o in outcomes])


def plrank_trial_from(inputs: SweepInputs) -> PLRankTrial:
    """The ``plrank`` method's trial over the sweep's folds (``method_options["max_iter"]``, else
    ``--max-iter``: the policy's iterations, default PLRank's 300); the data are validated before
    the study starts."""
    from fairltr.workflows.train_plrank import PLRankSpec
    from tuning.space import loss_space

    cfg = inputs.cfg
    spec = PLRankSpec(seed=cfg.seed, max_iter=cfg.method_options.get("max_iter", cfg.max_iter), device="cpu")
    for train, test in inputs.folds:
        validate_tables(train, test, spec, inputs.columns)  # type: ignore[arg-type]  # reads features/colorblind
    return PLRankTrial(list(inputs.folds), loss_space("plrank"), spec, inputs.columns)


@dataclass
class DprTrial:
    """One DPR sweep trial: fine-tune the query tower with the retrieval loss weighted by the
    trial's ``alpha`` for ``spec.steps`` steps, retrieve the test split over the whole corpus,
    evaluate (MRR@100, Recall@100, MRC@5 ...). The document tower is frozen, so the corpus
    embeddings are computed once (and cached on disk under ``cache_dir``, default fairltr's state
    folder, shared with ``train dpr`` and ``evaluate-retrieval``). ``k`` / ``mrc_k``: the cut-offs
    of the evaluation, from the sweep's objectives and constraints
    (:func:`fairltr.retrieval.retrieval_cutoffs`)."""

    data: Any
    test: Any
    spec: Any
    space: Any
    cache_dir: Path | None = None
    k: int = 100
    mrc_k: int = 5
    method: str = "dpr"
    _doc_emb: Any = field(default=None, repr=False)
    study_loss = ""  # the retrieval loss is recorded as option_loss

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:
        from fairltr.workflows.retriever import CorpusEmbeddingCache, train_and_evaluate_retriever

        weight = self.space.params[0].param.name
        cache = CorpusEmbeddingCache(self.cache_dir)  # None: fairltr's state folder, shared with train dpr
        done = train_and_evaluate_retriever(self.spec, self.data, self.test, k=self.k, mrc_k=self.mrc_k,
                                            alpha=float(values[weight]), cache=cache, doc_embeddings=self._doc_emb)
        self._doc_emb = done.doc_embeddings  # the frozen document tower: encoded (or read) once per worker
        return {k: float(v) for k, v in done.evaluation.items() if isinstance(v, (int, float))}


def dpr_trial(train: str | Path, test: str | Path, *, seed: int = 0, encoder: str | None = None,
              loss: str = "lakda_kl", steps: int = 100, batch_size: int = 32, lr: float = 5e-5,
              temperature: float = 0.05, max_train_items: int | None = None, max_test_items: int | None = None,
              max_query_length: int = 32, max_doc_length: int = 64, cache_dir: str | Path | None = None,
              metrics: Sequence[str] = ("mrr_at_100", "mrc_at_5")) -> DprTrial:
    """The DPR trial on parallel-query folders (train split of ``train``, test split of ``test``),
    evaluated at the cut-offs ``metrics`` (the objectives and constraints) read."""
    from fairltr.retrieval import read_parallel_data, retrieval_cutoffs
    from fairltr.workflows.retriever import RetrieverSpec, check_encoder, default_encoder
    from tuning.space import loss_space

    try:  # fail before the study starts, not once per trial (the bi-encoder is the Lightning adapter's)
        import lightning_modules.biencoder  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"--method dpr needs Lightning: {exc}") from None
    spec = RetrieverSpec(check_encoder(encoder or default_encoder()), fairness_loss=loss, steps=steps,
                         batch_size=batch_size, lr=lr, temperature=temperature, shared=False,
                         freeze_documents=True, max_query_length=max_query_length, max_doc_length=max_doc_length,
                         seed=seed, max_train_items=max_train_items, devices=1)
    data = read_parallel_data(train)
    data.split("train")
    test_data = data if Path(test) == Path(train) else read_parallel_data(test)
    k, mrc_k = retrieval_cutoffs(metrics)
    return DprTrial(data, test_data.split("test", max_test_items, seed), spec,
                    loss_space(loss), Path(cache_dir) if cache_dir else None, k=k, mrc_k=mrc_k)


def dpr_trial_from(inputs: SweepInputs) -> DprTrial:
    """:func:`dpr_trial` of a sweep's config (the ``dpr`` method's trial; the corpus cache
    defaults to ``<out>/cache``)."""
    cfg = inputs.cfg
    opts = dict(cfg.method_options)
    opts.setdefault("cache_dir", Path(cfg.out) / "cache")
    objectives = cfg.objectives or get_sweep_method(cfg.method).default_objectives
    metrics = [*(objectives.split(",") if isinstance(objectives, str) else objectives), *cfg.constraints]
    return dpr_trial(cfg.train, cfg.test, seed=cfg.seed, metrics=metrics, **opts)


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
