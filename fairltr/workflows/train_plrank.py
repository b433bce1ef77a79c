"""``fairltr train plrank``: train a Plackett-Luce policy (:class:`fairltr.PLRank`), evaluate it on
the test lists twice — its deterministic (mean-score) ranking under the usual names
(``ndcg_at_10``, ``kendall_tau``, ``exposure_disparity`` ...) and the policy itself from
``eval_samples`` sampled rankings per query (:mod:`fairltr.metrics.policy`: ``expected_ndcg_at_<k>``,
``ee_l``, ``ee_d``, ``ee_r``, ``expected_exposure_ratio``, ``expected_exposure_disparity``) —
write model + predictions + metrics, log and register it like a DELTR ranker.

Entry points other code relies on (the sweep-method registry among them):

* :class:`PLRankSpec` — one PLRank setting (the estimator's parameters + features/colorblind);
* :func:`fit_plrank` (table in, fitted :class:`~fairltr.PLRank` out) and
  :func:`plrank_outcome` (fit -> rank ``test`` -> metrics, a :class:`~fairltr.workflows.RankerOutcome`);
* :class:`TrainPLRankConfig` -> :func:`train_plrank` -> :class:`~fairltr.workflows.TrainRankerResult`.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Sequence

import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.errors import ConfigError
from fairltr.losses.builtin import LAMBDA
from fairltr.losses.plackett_luce import DISPARITIES, ESTIMATORS, check_cutoff
from fairltr.metrics import DEFAULT_K
from fairltr.metrics.policy import POLICY_DEFAULT_SAMPLES, check_eval_samples, evaluate_policy
from fairltr.plrank import PL_OPTIMIZERS, PLRank
from fairltr.workflows.ranking import FitOptions, RankerOutcome, chosen_features, evaluate_ranked, validate_tables
from fairltr.workflows.train_ranker import RankerJobConfig, TrainRankerResult, publish_ranker

__all__ = ["PLRankSpec", "TrainPLRankConfig", "fit_plrank", "plrank_outcome", "train_plrank",
           "default_plrank_run_name", "POLICY_METRIC_KEYS"]

POLICY_METRIC_KEYS = ("expected_ndcg_at_10", "ee_l", "ee_d", "ee_r", "expected_exposure_ratio",
                      "expected_exposure_disparity")
"""The policy's figures the CLI prints (all of :func:`fairltr.metrics.policy.evaluate_policy`'s are logged)."""

Echo = Callable[[str], None]


def _quiet(_: str) -> None:
    pass


@dataclass(frozen=True)
class PLRankSpec(FitOptions):
    """One PLRank setting: ``lam`` (the fairness weight, ``--lambda``), ``samples`` (rankings per
    query and iteration), the DCG ``cutoff`` (None: the whole ranking), the gradient
    ``estimator``, the ``disparity`` and ``merit`` normalisation, ``eval_samples`` (sampled
    rankings per test query for the policy's figures, drawn with the ``seed``), and the fitting
    options PLRank shares with DELTR (:class:`~fairltr.workflows.ranking.FitOptions`, optimizer
    ``adam``). Checked when built."""

    lam: float = LAMBDA.default
    samples: int = 16
    estimator: str = "plrank"
    disparity: str = "squared"
    merit: bool = False
    reduce: str = "max"
    cutoff: int | None = None
    eval_samples: int = POLICY_DEFAULT_SAMPLES

    def __post_init__(self) -> None:
        object.__setattr__(self, "lam", LAMBDA.validate(self.lam))
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise ConfigError(f"samples must be an integer >= 1, got {self.samples!r}")
        object.__setattr__(self, "cutoff", None if self.cutoff in (None, 0) else check_cutoff(self.cutoff))
        check_eval_samples(self.eval_samples)
        for name, allowed in (("estimator", ESTIMATORS), ("disparity", DISPARITIES), ("optimizer", PL_OPTIMIZERS),
                              ("reduce", ("max", "mean"))):
            if getattr(self, name) not in allowed:
                raise ConfigError(f"{name} must be one of {list(allowed)}, got {getattr(self, name)!r}")
        super().__post_init__()

    def with_(self, **changes: Any) -> "PLRankSpec":
        return replace(self, **changes)

    def estimator_for(self, columns: RankingColumns = DEFAULT_COLUMNS) -> PLRank:
        """The unfitted :class:`~fairltr.PLRank` of this setting."""
        return PLRank(lam=self.lam, samples=self.samples, cutoff=self.cutoff, estimator=self.estimator,
                      disparity=self.disparity,
                      merit=self.merit, reduce=self.reduce, protected=columns.group, colorblind=self.colorblind,
                      l2=self.l2, optimizer=self.optimizer, max_iter=self.max_iter, lr=self.lr, seed=self.seed,
                      device=self.device, columns=columns)

    def model_params(self) -> dict[str, Any]:
        """Run params beyond the estimator's own."""
        return {"engine": "estimator", "method": "plrank", "eval_samples": self.eval_samples}


def fit_plrank(train: pd.DataFrame, spec: PLRankSpec, columns: RankingColumns = DEFAULT_COLUMNS, *,
               progress: bool = False) -> PLRank:
    """Fit the setting's policy on ``train``."""
    return spec.estimator_for(columns).fit(train, features=chosen_features(spec), progress=progress)


def plrank_outcome(train: pd.DataFrame, test: pd.DataFrame | None, spec: PLRankSpec,
                   columns: RankingColumns = DEFAULT_COLUMNS, *, k: Sequence[int] = DEFAULT_K,
                   progress: bool = False, model: PLRank | None = None) -> RankerOutcome:
    """Fit (unless ``model`` is given), rank ``test`` by the mean scores and compute that ranking's
    metrics, and the policy's figures from ``spec.eval_samples`` sampled rankings per query
    (seed ``spec.seed``; :func:`fairltr.metrics.policy.evaluate_policy`)."""
    if model is None:
        model = fit_plrank(train, spec, columns, progress=progress)
    if test is None:
        return RankerOutcome(model, None, None)
    ranked = model.rank(test, query=columns.query)
    metrics = evaluate_ranked(ranked, columns, k)
    metrics.update(evaluate_policy(ranked, "score", columns=columns, n_samples=spec.eval_samples, seed=spec.seed,
                                   k=k))
    return RankerOutcome(model, ranked, metrics)


def default_plrank_run_name(spec: PLRankSpec) -> str:
    return (f"plrank lambda={spec.lam:g} {spec.disparity}" + (" merit" if spec.merit else "")
            + (" colorblind" if spec.colorblind else ""))


@dataclass(frozen=True)
class TrainPLRankConfig(RankerJobConfig):
    """``fairltr train plrank``: train on ``train`` (in memory), evaluate on ``test`` when given,
    write model + predictions + metrics to ``out_dir``, log to MLflow (and register); the fields
    and checks of :class:`~fairltr.workflows.train_ranker.RankerJobConfig`."""

    spec: PLRankSpec = field(default_factory=PLRankSpec)
    out_dir: Path = Path("outputs/plrank")


def train_plrank(cfg: TrainPLRankConfig, echo: Echo = _quiet) -> TrainRankerResult:
    """Validate inputs, output folder and tracking server first; then train, write the output set
    all-or-nothing and log the run (the model files are on disk before any tracking)."""
    columns = cfg.train.columns
    train = cfg.train.read()
    test = cfg.test.read() if cfg.test is not None else None
    validate_tables(train, test, cfg.spec, columns)
    return publish_ranker(
        lambda: plrank_outcome(train, test, cfg.spec, columns, k=cfg.k, progress=cfg.progress),
        out_dir=cfg.out_dir, model_format=cfg.model_format, tracking=cfg.tracking, train_frame=train,
        train_source=cfg.train, test_source=cfg.test, test=test, params=cfg.spec.model_params(),
        run_name=cfg.tracking.run_name or default_plrank_run_name(cfg.spec), echo=echo)
