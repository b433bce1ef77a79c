"""Train, score and evaluate one ranker setting: the single implementation behind ``train
deltr``, ``quickstart``, the paper reproduction and every ranking sweep trial.

A :class:`RankerSpec` says how to train (DELTR's gamma, colorblind, loss, optimizer, engine)
and which FA*IR baseline to apply (pre-processing of the training lists, post-processing of the
predicted lists). :func:`train_and_evaluate` runs it: fit -> rank the test lists -> metrics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Sequence

import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.deltr import DELTR
from fairltr.errors import ConfigError
from fairltr.losses import GAMMA
from fairltr.metrics import DEFAULT_K, evaluate_ranking

__all__ = ["FairParams", "LightningOptions", "RankerSpec", "RankerOutcome", "fit_ranker", "rank_with",
           "evaluate_ranked", "train_and_evaluate", "ENGINES", "check_device", "validate_tables"]

ENGINES = ("estimator", "lightning")


def check_device(device: str) -> str:
    """``auto``, ``cpu``, ``cuda``, ``cuda:N``...: a device that parses and exists here."""
    import torch

    if device == "auto":
        return device
    try:
        dev = torch.device(device)
    except (RuntimeError, ValueError, TypeError):
        raise ConfigError(f"device {device!r} is not a device name (auto, cpu, cuda, cuda:1, ...)") from None
    if dev.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if count == 0:
            raise ConfigError(f"device {device!r}: no CUDA device on this machine (use auto or cpu)")
        if dev.index is not None and dev.index >= count:
            raise ConfigError(f"device {device!r}: this machine has {count} CUDA device(s), cuda:0..cuda:{count - 1}")
    elif dev.type not in ("cpu",) and dev.type != "mps":
        raise ConfigError(f"device {device!r} is not supported; use auto, cpu or cuda[:N]")
    return device


@dataclass(frozen=True)
class FairParams:
    """FA*IR settings: target protected proportion ``p`` in (0, 1), significance ``alpha``."""

    p: float
    alpha: float = 0.1
    adjust: bool = True

    def __post_init__(self) -> None:
        from fairltr.fair import check_params

        check_params(None, self.p, self.alpha)


@dataclass(frozen=True)
class LightningOptions:
    """The Lightning engine's knobs (``--engine lightning``): epochs, queries per batch,
    optimizer (None = the engine's default for the batch shape), accelerator, devices."""

    epochs: int | None = None
    batch_queries: int | None = None
    optimizer: str | None = None
    lr: float | None = None
    accelerator: str = "auto"
    devices: int = 1

    def __post_init__(self) -> None:
        if self.epochs is not None and self.epochs < 1:
            raise ConfigError(f"epochs must be >= 1, got {self.epochs}")
        if self.batch_queries is not None and self.batch_queries < 1:
            raise ConfigError(f"batch_queries must be >= 1, got {self.batch_queries}")
        if self.devices < 1:
            raise ConfigError(f"devices must be >= 1, got {self.devices}")


@dataclass(frozen=True)
class RankerSpec:
    """One ranker setting. ``gamma=0`` is standard ListNet (the group column is a feature unless
    ``colorblind``); ``fair_pre`` re-ranks every training list with FA*IR before training;
    ``fair_post`` re-ranks every predicted list with FA*IR."""

    gamma: float = 0.0
    colorblind: bool = False
    fairness_loss: str = "exposure_hinge"
    features: tuple[str, ...] | None = None
    optimizer: str = "lbfgs"
    max_iter: int | None = None
    lr: float | None = None
    l2: float = 0.0
    seed: int = 0
    device: str = "auto"
    fair_pre: FairParams | None = None
    fair_post: FairParams | None = None
    engine: str = "estimator"
    lightning: LightningOptions = field(default_factory=LightningOptions)
    reference_group: str | int | None = None  # DELTR's declared reference category (None: DELTR's default)

    def __post_init__(self) -> None:
        if self.reference_group is not None and self.engine != "estimator":
            raise ConfigError("--reference-group is taken by the estimator engine only (not --engine lightning)")
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        GAMMA.validate(self.gamma)
        if isinstance(self.l2, bool) or not isinstance(self.l2, (int, float)) or not math.isfinite(self.l2) or self.l2 < 0:
            raise ConfigError(f"l2 must be a finite number >= 0, got {self.l2!r}")
        if self.lr is not None and not (math.isfinite(self.lr) and self.lr > 0):
            raise ConfigError(f"lr must be a finite number > 0, got {self.lr!r}")
        if self.max_iter is not None and self.max_iter < 1:
            raise ConfigError(f"max_iter must be >= 1, got {self.max_iter}")
        check_device(self.device)

    def with_(self, **changes: Any) -> "RankerSpec":
        return replace(self, **changes)

    def model_params(self) -> dict[str, Any]:
        """What identifies the setting beyond DELTR's own parameters (logged as run params)."""
        out: dict[str, Any] = {"engine": self.engine}
        if self.fair_pre is not None:
            out.update(fair_preprocess_p=self.fair_pre.p, fair_alpha=self.fair_pre.alpha)
        if self.fair_post is not None:
            out.update(fair_postprocess_p=self.fair_post.p, fair_alpha=self.fair_post.alpha)
        if self.engine == "lightning":
            lo = self.lightning
            out.update(epochs=lo.epochs, batch_queries=lo.batch_queries, accelerator=lo.accelerator,
                       devices=lo.devices)
        return out


@dataclass
class RankerOutcome:
    """What :func:`train_and_evaluate` produced: the model, the ranked test lists, the metrics."""

    model: DELTR
    ranked: pd.DataFrame | None
    metrics: dict[str, float] | None


def _estimator(spec: RankerSpec, columns: RankingColumns) -> DELTR:
    # protected= as well as columns=: model.protected keeps naming the group for its older readers
    return DELTR(spec.gamma, protected=columns.group, colorblind=spec.colorblind, l2=spec.l2,
                 optimizer=spec.optimizer, max_iter=spec.max_iter, lr=spec.lr, seed=spec.seed,
                 device=spec.device, fairness_loss=spec.fairness_loss, columns=columns,
                 **({"reference_group": spec.reference_group} if spec.reference_group is not None else {}))


def training_table(train: pd.DataFrame, spec: RankerSpec, columns: RankingColumns = DEFAULT_COLUMNS) -> pd.DataFrame:
    """The lists the model trains on: ``train`` itself, or its FA*IR pre-processed version."""
    if spec.fair_pre is None:
        return train
    from fairltr.fair import fair_preprocess

    fp = spec.fair_pre
    return fair_preprocess(train, fp.p, fp.alpha, adjust=fp.adjust, columns=columns)


def validate_tables(train: pd.DataFrame, test: pd.DataFrame | None, spec: RankerSpec,
                    columns: RankingColumns = DEFAULT_COLUMNS) -> list[str]:
    """Check, before any training, every cell the job will read: the features (chosen as the
    model will choose them) of ``train`` and of ``test``, each must be a finite number. Errors
    name the file, line, column and query. Returns the feature list."""
    from fairltr.data import numeric_matrix, select_features

    feats = select_features(train, columns=columns,
                            features=list(spec.features) if spec.features is not None else None)
    numeric_matrix(train, feats, query=columns.query)
    if test is not None:
        numeric_matrix(test, [f for f in feats if not (spec.colorblind and f == columns.group)], query=columns.query)
    return feats


def fit_ranker(train: pd.DataFrame | str, spec: RankerSpec, columns: RankingColumns = DEFAULT_COLUMNS, *,
               progress: bool = False) -> DELTR:
    """Fit the setting's model on ``train`` (a table; the Lightning engine also takes a Parquet
    path, streamed). FA*IR pre-processing, when set, is applied to the table first."""
    features = list(spec.features) if spec.features is not None else None
    if spec.engine == "estimator":
        if not isinstance(train, pd.DataFrame):
            raise ConfigError("the estimator engine trains on a table in memory; stream Parquet with "
                              "--engine lightning")
        model = _estimator(spec, columns)
        return model.fit(training_table(train, spec, columns), features=features, progress=progress)
    from lightning_modules import train_deltr_lightning

    if spec.fair_pre is not None and not isinstance(train, pd.DataFrame):
        raise ConfigError("FA*IR pre-processing needs the training table in memory, not a streamed file")
    data = training_table(train, spec, columns) if isinstance(train, pd.DataFrame) else train
    lo = spec.lightning
    kwargs: dict[str, Any] = dict(
        gamma=spec.gamma, fairness_loss=spec.fairness_loss, colorblind=spec.colorblind, features=features,
        columns=columns, l2=spec.l2,
        accelerator=lo.accelerator, devices=lo.devices, seed=spec.seed, progress=progress,
    )
    for key, value in (("epochs", lo.epochs), ("batch_queries", lo.batch_queries),
                       ("optimizer", lo.optimizer), ("lr", lo.lr)):
        if value is not None:
            kwargs[key] = value
    return train_deltr_lightning(data, **kwargs)


def rank_with(model: DELTR, test: pd.DataFrame, spec: RankerSpec, columns: RankingColumns = DEFAULT_COLUMNS) -> pd.DataFrame:
    """``test`` sorted by the model's score within each query (``score``, 1-based ``rank``),
    FA*IR post-processed when the spec says so (then ``score`` encodes the fair order)."""
    ranked = model.rank(test, query=columns.query)
    if spec.fair_post is None:
        return ranked
    from fairltr.fair import fair_postprocess

    fp = spec.fair_post
    return fair_postprocess(ranked, fp.p, fp.alpha, adjust=fp.adjust, columns=columns)


def evaluate_ranked(ranked: pd.DataFrame, columns: RankingColumns = DEFAULT_COLUMNS,
                    k: Sequence[int] = DEFAULT_K, audit: Any = None, extra_audit_ks: Sequence[int] = ()) -> dict[str, float]:
    """The metric dictionary of a ranked table (its ``score`` column gives the order); with
    ``audit`` (a :class:`fairltr.metrics.AuditConfig`) and a group column also SPEC 3b's
    worst-case figures (and their intervals when ``audit.ci > 0``), see
    :func:`fairltr.workflows.audit.audit_evaluation`."""
    if audit is None or not columns.groups:
        return evaluate_ranking(ranked, "score", columns=columns, k=tuple(k))
    from fairltr.workflows.audit import audit_evaluation

    return audit_evaluation(ranked, "score", columns=columns, k=tuple(k), audit=audit, extra_ks=extra_audit_ks)[0]


def train_and_evaluate(train: pd.DataFrame | str, test: pd.DataFrame | None, spec: RankerSpec,
                       columns: RankingColumns = DEFAULT_COLUMNS, *, k: Sequence[int] = DEFAULT_K,
                       progress: bool = False, model: DELTR | None = None, audit: Any = None,
                       extra_audit_ks: Sequence[int] = ()) -> RankerOutcome:
    """Fit (unless a fitted ``model`` is given, e.g. one base model re-ranked by many FA*IR
    settings), rank ``test`` and compute its metrics (with ``audit``, SPEC 3b's audit figures
    too, see :func:`evaluate_ranked`). Without ``test`` only the model is made."""
    if model is None:
        model = fit_ranker(train, spec, columns, progress=progress)
    if test is None:
        return RankerOutcome(model, None, None)
    ranked = rank_with(model, test, spec, columns)
    return RankerOutcome(model, ranked, evaluate_ranked(ranked, columns, k, audit, extra_audit_ks))


ProgressFn = Callable[[str], None]
