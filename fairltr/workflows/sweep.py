"""Sweeps (``fairltr sweep``): the trial of each method, built on the same recipes as the
single-run jobs, handed to :func:`tuning.sweep.run_sweep` (Optuna study, N workers, MLflow
mirror, Pareto report).

* ``deltr``: values (the loss's declared weight, DELTR's ``gamma``) -> :class:`RankerSpec` ->
  :func:`~fairltr.workflows.ranking.train_and_evaluate`;
* ``fair-pre``: FA*IR pre-processing of the training lists with ``fair_p``/``fair_alpha``, gamma 0;
* ``fair-post``: FA*IR post-processing of a gamma = 0 ranking (the base model is trained once
  per fold and process);
* ``dpr``: a bi-encoder with the retrieval loss weighted by ``alpha`` (frozen document tower;
  the corpus embeddings are computed once per sweep and cached on disk).

Several (train, test) folds: every metric is the mean over the folds where it is defined.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.deltr import DELTR
from fairltr.errors import ConfigError, DataError
from fairltr.workflows.ranking import FairParams, RankerSpec, train_and_evaluate, validate_tables

__all__ = ["RankingTrial", "DprTrial", "ranking_trial", "dpr_trial", "run_sweep_job", "mean_over_folds",
           "RANKING_METHODS"]

RANKING_METHODS = ("deltr", "fair-pre", "fair-post")
Fold = tuple[pd.DataFrame, pd.DataFrame]


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
    audit: Any = None  # fairltr.metrics.AuditConfig: trials also report SPEC 3b's audit figures
    audit_ks: tuple[int, ...] = ()  # further cut-offs of impact_ratio_at_<k> / ndkl_at_<k> objectives
    _base_models: dict[int, DELTR] = field(default_factory=dict, repr=False)

    def spec_for(self, values: Mapping[str, float]) -> RankerSpec:
        """The ranker setting a trial's hyper-parameter values stand for."""
        if self.method == "deltr":
            from fairltr.losses import get_loss

            weight = get_loss(self.loss).weight_param
            gamma = float(values[weight.name]) if weight is not None else 0.0
            return self.base.with_(gamma=gamma, fairness_loss=self.loss)
        fair = FairParams(float(values["fair_p"]), float(values["fair_alpha"]))
        if self.method == "fair-pre":
            return self.base.with_(gamma=0.0, fair_pre=fair)
        return self.base.with_(gamma=0.0, fair_post=fair)

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:
        spec = self.spec_for(values)
        per_fold = []
        for i, (train, test) in enumerate(self.folds):
            model = None
            if self.method == "fair-post":  # one gamma = 0 base ranking per fold, re-ranked per trial
                if i not in self._base_models:
                    self._base_models[i] = train_and_evaluate(train, None, self.base.with_(gamma=0.0),
                                                              self.columns).model
                model = self._base_models[i]
            per_fold.append(train_and_evaluate(train, test, spec, self.columns, model=model, audit=self.audit,
                                              extra_audit_ks=self.audit_ks).metrics)
        return mean_over_folds(per_fold)


def ranking_trial(method: str, folds: Sequence[Fold], *, loss: str = "exposure_hinge",
                  p_range: tuple[float, float] | None = None, alpha_range: tuple[float, float] = (0.01, 0.5),
                  seed: int = 0, max_iter: int | None = None, columns: RankingColumns = DEFAULT_COLUMNS,
                  audit_texts: Sequence[str] = ()) -> RankingTrial:
    """The trial of ``method`` over ``folds``; FA*IR's ``fair_p`` range comes from the pooled
    training share of all folds. Validates the loss kind and the data before the study starts.
    When ``audit_texts`` (the objectives and constraints) name a worst-case audit metric
    (``impact_ratio_at_10``, ``exposure_ratio_worst``, ...), every trial is audited (point
    figures, SPEC 3b) at the cut-offs they name (10 by default)."""
    from tuning.space import method_space

    if method not in RANKING_METHODS:
        raise ConfigError(f"unknown ranking sweep method {method!r}; choose one of {list(RANKING_METHODS)}")
    if not folds:
        raise ConfigError("a sweep needs at least one (train, test) pair")
    base = RankerSpec(seed=seed, max_iter=max_iter, device="cpu")
    for i, (train, test) in enumerate(folds):
        for name, df in (("train", train), ("test", test)):
            if len(df) == 0:
                raise DataError(f"the {name} table{f' of fold {i + 1}' if len(folds) > 1 else ''} is empty")
        validate_tables(train, test, base, columns)  # bad data stops the sweep before the study, not in trial 0
    if method == "deltr":
        from fairltr.losses import available_losses, get_loss

        if get_loss(loss).kind != "ranking":
            raise ConfigError(f"--loss {loss!r} is a {get_loss(loss).kind} loss; DELTR sweeps take a ranking loss: "
                              f"{available_losses('ranking')}")
    pooled = folds[0][0] if len(folds) == 1 else pd.concat([tr for tr, _ in folds], ignore_index=True)
    space = method_space(method, pooled, loss=loss, group=columns.group, p_range=p_range, alpha_range=alpha_range)
    audit, audit_ks = None, ()
    from fairltr.workflows.audit import audit_cutoffs_in, make_audit_config, names_audit_metric

    if names_audit_metric(audit_texts):
        if not columns.groups:
            raise ConfigError("the audit objectives need a group column (--group)")
        ks = audit_cutoffs_in(audit_texts) or [10]
        audit, audit_ks = make_audit_config(k=ks[0], ci=0.0), tuple(ks[1:])
    return RankingTrial(method, list(folds), space, base, columns, loss, audit, audit_ks)


@dataclass
class DprTrial:
    """One DPR sweep trial: fine-tune the query tower with the retrieval loss weighted by the
    trial's ``alpha`` for ``spec.steps`` steps, retrieve the test split over the whole corpus,
    evaluate (MRR@100, Recall@100, MRC@5 ...). The document tower is frozen, so the corpus
    embeddings are computed once (and cached on disk under ``cache_dir``)."""

    data: Any
    test: Any
    spec: Any
    space: Any
    cache_dir: Path | None = None
    method: str = "dpr"
    _doc_emb: Any = field(default=None, repr=False)

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:
        from fairltr.workflows.retriever import (CorpusEmbeddingCache, build_module, corpus_embeddings,
                                                 evaluate_module, fit_module)

        weight = self.space.params[0].param.name
        module = build_module(self.spec, alpha=float(values[weight]))
        if self._doc_emb is None:
            cache = CorpusEmbeddingCache(self.cache_dir) if self.cache_dir is not None else None
            self._doc_emb = corpus_embeddings(module, self.data.corpus, self.spec, cache=cache)
        module.set_document_cache(self.data.corpus["_id"].tolist(), self._doc_emb)
        fit_module(module, self.data, self.spec)
        res, _, _ = evaluate_module(module, self.test, k=100, mrc_k=5, doc_embeddings=self._doc_emb)
        return {k: float(v) for k, v in res.items() if isinstance(v, (int, float))}


def dpr_trial(train: str | Path, test: str | Path, *, seed: int = 0, encoder: str | None = None,
              loss: str = "lakda_kl", steps: int = 100, batch_size: int = 32, lr: float = 5e-5,
              temperature: float = 0.05, max_train_items: int | None = None, max_test_items: int | None = None,
              max_query_length: int = 32, max_doc_length: int = 64, cache_dir: str | Path | None = None) -> DprTrial:
    """The DPR trial on parallel-query folders (train split of ``train``, test split of ``test``)."""
    from fairltr.retrieval import read_parallel_data
    from fairltr.workflows.retriever import RetrieverSpec, check_encoder, default_encoder
    from tuning.space import method_space

    try:  # fail before the study starts, not once per trial
        import lightning.pytorch  # noqa: F401
    except ImportError as exc:
        raise ConfigError(f"--method dpr needs Lightning: {exc}") from None
    spec = RetrieverSpec(check_encoder(encoder or default_encoder()), fairness_loss=loss, steps=steps,
                         batch_size=batch_size, lr=lr, temperature=temperature, shared=False,
                         freeze_documents=True, max_query_length=max_query_length, max_doc_length=max_doc_length,
                         seed=seed, max_train_items=max_train_items, devices=1)
    data = read_parallel_data(train)
    data.split("train")
    test_data = data if Path(test) == Path(train) else read_parallel_data(test)
    return DprTrial(data, test_data.split("test", max_test_items, seed), spec,
                    method_space("dpr", dpr_loss=loss), Path(cache_dir) if cache_dir else None)


DPR_OBJECTIVES = "mrr_at_100:max,mrc_at_5:max"


def run_sweep_job(cfg, echo: Callable[[str], None] = print, *, folds: Sequence[Fold] | None = None,
                  columns: RankingColumns = DEFAULT_COLUMNS):
    """Build the trial of ``cfg.method`` (a :class:`tuning.sweep.SweepConfig`) and run the sweep.

    ``folds`` replaces ``cfg.train``/``cfg.test`` for ranking methods (e.g. TREC's six folds).
    All inputs are read and validated before the study is created or joined."""
    from fairltr.tracking.config import check_tracking_uri
    from fairltr.workflows.outputs import check_output_dir
    from tuning.sweep import run_sweep
    from tuning.tracking import resolve_tracking_uri

    if not str(cfg.study).strip():
        raise ConfigError("--study must be a non-empty name")
    check_output_dir(cfg.out)
    if cfg.mlflow:
        check_tracking_uri(resolve_tracking_uri(cfg.tracking_uri))
    if cfg.method == "dpr":
        opts = dict(cfg.method_options)
        opts.setdefault("cache_dir", Path(cfg.out) / "cache")
        runner = dpr_trial(cfg.train, cfg.test, seed=cfg.seed, **opts)
        return run_sweep(cfg, runner=runner, echo=echo, default_objectives=DPR_OBJECTIVES)
    if folds is None:
        from fairltr.workflows.options import RankingSource

        folds = [(RankingSource(cfg.train, columns=columns).read(), RankingSource(cfg.test, columns=columns).read())]
    runner = ranking_trial(cfg.method, folds, loss=cfg.loss, p_range=cfg.p_range, alpha_range=cfg.alpha_range,
                           seed=cfg.seed, max_iter=cfg.max_iter, columns=columns,
                           audit_texts=[str(cfg.objectives or ""), *map(str, cfg.constraints or ())])
    return run_sweep(cfg, runner=runner, echo=echo)

