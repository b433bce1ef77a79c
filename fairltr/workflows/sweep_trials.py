"""The trials of the sweeps (``trial(values) -> metrics``, with its search space as ``.space``),
built on the same recipes as the single-run jobs:

* :class:`RankingTrial`: values -> a :class:`RankerSpec` (the method's declared ``to_spec``) ->
  :func:`~fairltr.workflows.ranking.train_and_evaluate` on every fold; a post-processing method
  (``reuse_base``) fits its base model once per fold and process and re-ranks it per trial;
* :class:`PLRankTrial`: a Plackett-Luce policy trained with the trial's ``lambda``;
* :class:`DprTrial`: a bi-encoder with the retrieval loss weighted by ``alpha`` (frozen document
  tower; the corpus embeddings are computed once per sweep and cached on disk).

The built-in declarations (:mod:`fairltr.workflows.sweep_methods`) name the ``*_trial_from``
builders here, so this module reads a method's declaration from the registry object itself
(:data:`~fairltr.workflows.sweep_declaration.SWEEP_METHODS`), never through
:mod:`fairltr.workflows.sweep_plugins` (which imports the declarations): a builder runs from a
registered declaration, and :mod:`fairltr.workflows.sweep` (the public entry, which re-exports
every name here) has the built-ins loaded. Several (train, test) folds: every metric is the mean
over the folds where it is defined.
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
from fairltr.workflows.sweep_declaration import SWEEP_METHODS, RankingContext, RankingPlan, SweepInputs

__all__ = ["RankingTrial", "DprTrial", "PLRankTrial", "ranking_trial", "dpr_trial", "mean_over_folds",
           "ranking_trial_from", "plrank_trial_from", "dpr_trial_from", "Fold", "RankedHook"]

Fold = tuple[pd.DataFrame, pd.DataFrame]
RankedHook = Callable[[Mapping[str, float], list[pd.DataFrame]], None]
"""``on_ranked(values, ranked)`` of a ranking trial: the trial's values and each fold's ranked test
table (``score``, 1-based ``rank``), e.g. to keep what a bootstrap over test queries needs."""


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
    m = SWEEP_METHODS.get(method)
    if m is None or m.ranking is None:
        ranking = [d.name for d in SWEEP_METHODS.declarations() if d.data == "ranking"]
        raise ConfigError(f"unknown ranking sweep method {method!r}; choose one of {ranking}")
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
    SWEEP_METHODS.require(method).check_requirements()
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
    objectives = cfg.objectives or SWEEP_METHODS.require(cfg.method).default_objectives
    metrics = [*(objectives.split(",") if isinstance(objectives, str) else objectives), *cfg.constraints]
    return dpr_trial(cfg.train, cfg.test, seed=cfg.seed, metrics=metrics, **opts)
