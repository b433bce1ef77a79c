"""Train, score and evaluate one ranker setting: the single implementation behind ``train
deltr``, ``quickstart``, the paper reproduction and every ranking sweep trial.

A :class:`RankerSpec` says how to train (``ranker``: DELTR with its gamma, colorblind, loss,
optimizer, engine; or LambdaMART with its LightGBM settings ``gbdt``) and which FA*IR baseline
to apply (pre-processing of the training lists, post-processing of the predicted lists).
:func:`train_and_evaluate` runs it: fit -> rank the test lists -> metrics.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Callable, Protocol, Sequence

import pandas as pd

from fairltr.columns import DEFAULT_COLUMNS, RankingColumns
from fairltr.deltr import DELTR
from fairltr.errors import ConfigError
from fairltr.gbdt import GBDTParams, LambdaMART
from fairltr.plugins.rankers import Ranker
from fairltr.losses import GAMMA
from fairltr.metrics import DEFAULT_K, evaluate_ranking

__all__ = ["FairParams", "GeyikParams", "MultinomialParams", "LightningOptions", "RankerSpec", "RankerOutcome", "fit_ranker", "rank_with",
           "evaluate_ranked", "evaluate_ranked_audits", "train_and_evaluate", "ENGINES", "RANKERS", "check_device", "validate_tables", "check_training_options",
           "chosen_features", "FeatureChoice", "FitOptions"]

ENGINES = ("estimator", "lightning")
RANKERS = ("deltr", "lambdamart")


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
class GeyikParams:
    """A Geyik et al. re-ranking of every predicted list (:func:`fairltr.fair.rerank_geyik`):
    ``method`` (detconstsort ...), ``target`` as ``((category, share), ...)`` (None: each
    query's own mix), ``k`` (None: whole lists)."""

    method: str = "detconstsort"
    target: tuple[tuple[Any, float], ...] | None = None
    k: int | None = None

    def __post_init__(self) -> None:
        from fairltr.fair import GEYIK_METHODS

        if self.method not in GEYIK_METHODS:
            raise ConfigError(f"Geyik method must be one of {list(GEYIK_METHODS)}, got {self.method!r}")


@dataclass(frozen=True)
class MultinomialParams:
    """A multinomial FA*IR re-ranking of every predicted list (:func:`fairltr.fair.rerank_multinomial`):
    ``shares`` the protected categories' minimum shares as ``((category, share), ...)`` (each in
    (0, 1), together below 1), significance ``alpha``, ``adjust``, ``k`` (None: whole lists)."""

    shares: tuple[tuple[Any, float], ...]
    alpha: float = 0.1
    adjust: bool = True
    k: int | None = None

    def __post_init__(self) -> None:
        from fairltr.fair import check_multinomial_params, parse_min_shares

        parse_min_shares({c: v for c, v in self.shares})
        check_multinomial_params(self.k, [v for _, v in self.shares], self.alpha)

    def spec(self) -> str:
        """The shares as ``--p`` writes them (``1=0.2,2=0.1``)."""
        return ",".join(f"{c}={v:.6g}" for c, v in self.shares)


@dataclass(frozen=True)
class LightningOptions:
    """The Lightning engine's knobs (``--engine lightning``): epochs, queries per batch,
    optimizer (None = the engine's default for the batch shape), accelerator, devices; ``num_nodes``
    hosts of one DDP run (one process each, rendezvous from MASTER_ADDR / MASTER_PORT / NODE_RANK)
    and ``ddp_timeout`` (seconds) for the wait on the other nodes."""

    epochs: int | None = None
    batch_queries: int | None = None
    optimizer: str | None = None
    lr: float | None = None
    accelerator: str = "auto"
    devices: int = 1
    num_nodes: int = 1
    ddp_timeout: float | None = None

    def __post_init__(self) -> None:
        if self.epochs is not None and self.epochs < 1:
            raise ConfigError(f"epochs must be >= 1, got {self.epochs}")
        if self.batch_queries is not None and self.batch_queries < 1:
            raise ConfigError(f"batch_queries must be >= 1, got {self.batch_queries}")
        if self.devices < 1:
            raise ConfigError(f"devices must be >= 1, got {self.devices}")
        if self.num_nodes < 1:
            raise ConfigError(f"num_nodes must be >= 1, got {self.num_nodes}")
        if self.num_nodes > 1 and self.devices != 1:
            raise ConfigError(f"--num-nodes runs one process per node: --devices must be 1, got {self.devices}")
        if self.ddp_timeout is not None and not self.ddp_timeout > 0:
            raise ConfigError(f"ddp timeout must be > 0 seconds, got {self.ddp_timeout:g}")


def check_training_options(*, l2: float, lr: float | None, max_iter: int | None, device: str) -> None:
    """The optimiser settings every ranker spec shares (DELTR's :class:`RankerSpec`, PLRank's
    :class:`~fairltr.workflows.PLRankSpec`): ``l2`` a finite number >= 0, ``lr`` None or a finite
    number > 0, ``max_iter`` None or >= 1, ``device`` one :func:`check_device` accepts."""
    if isinstance(l2, bool) or not isinstance(l2, (int, float)) or not math.isfinite(l2) or l2 < 0:
        raise ConfigError(f"l2 must be a finite number >= 0, got {l2!r}")
    if lr is not None and not (math.isfinite(lr) and lr > 0):
        raise ConfigError(f"lr must be a finite number > 0, got {lr!r}")
    if max_iter is not None and max_iter < 1:
        raise ConfigError(f"max_iter must be >= 1, got {max_iter}")
    check_device(device)


class FeatureChoice(Protocol):
    """What a spec says about the model's inputs: the chosen ``features`` (None: every numeric
    column but the contract's) and whether the group column is left out (``colorblind``)."""

    features: tuple[str, ...] | None
    colorblind: bool


def chosen_features(spec: FeatureChoice) -> list[str] | None:
    """The ``features=`` argument of the estimators' ``fit``: the spec's list, or None."""
    return list(spec.features) if spec.features is not None else None


@dataclass(frozen=True)
class FitOptions:
    """What every ranker spec says about fitting (DELTR's :class:`RankerSpec`, PLRank's
    :class:`~fairltr.workflows.PLRankSpec`): the model's inputs (``colorblind``, ``features``) and
    the optimiser settings, checked by :func:`check_training_options`. A spec subclasses it
    (overriding the ``optimizer`` default) and calls ``super().__post_init__()``."""

    colorblind: bool = False
    features: tuple[str, ...] | None = None
    optimizer: str = "adam"
    max_iter: int | None = None
    lr: float | None = None
    l2: float = 0.0
    seed: int = 0
    device: str = "auto"

    def __post_init__(self) -> None:
        check_training_options(l2=self.l2, lr=self.lr, max_iter=self.max_iter, device=self.device)


@dataclass(frozen=True)
class RankerSpec(FitOptions):
    """One ranker setting. ``gamma=0`` is standard ListNet (the group column is a feature unless
    ``colorblind``); ``fair_pre`` re-ranks every training list with FA*IR before training;
    ``fair_post`` re-ranks every predicted list with FA*IR, ``geyik_post`` with one of Geyik et
    al.'s re-rankers (after FA*IR if both are set). ``ranker="lambdamart"`` trains
    LightGBM's lambdarank with ``gbdt`` instead (seed, colorblind, features, FA*IR apply; gamma
    must stay 0 and the engine the estimator)."""

    gamma: float = 0.0
    fairness_loss: str = "exposure_hinge"
    optimizer: str = "lbfgs"
    fair_pre: FairParams | None = None
    fair_post: FairParams | None = None
    engine: str = "estimator"
    lightning: LightningOptions = field(default_factory=LightningOptions)
    ranker: str = "deltr"
    gbdt: GBDTParams = field(default_factory=GBDTParams)
    geyik_post: GeyikParams | None = None
    multinomial_post: MultinomialParams | None = None  # after fair_post, before geyik_post
    reference_group: str | int | None = None  # DELTR's declared reference category (None: DELTR's default)

    def __post_init__(self) -> None:
        if self.ranker not in RANKERS:
            raise ConfigError(f"ranker must be one of {RANKERS}, got {self.ranker!r}")
        if self.ranker == "lambdamart" and (self.gamma != 0 or self.engine != "estimator"):
            raise ConfigError("LambdaMART has no exposure penalty and no Lightning engine: gamma must be 0 and "
                              "engine 'estimator'")
        if self.reference_group is not None and self.engine != "estimator":
            raise ConfigError("--reference-group is taken by the estimator engine only (not --engine lightning)")
        if self.engine not in ENGINES:
            raise ConfigError(f"engine must be one of {ENGINES}, got {self.engine!r}")
        if self.engine != "lightning" and self.lightning.num_nodes > 1:
            raise ConfigError("--num-nodes needs --engine lightning (the estimator runs in one process)")
        GAMMA.validate(self.gamma)
        super().__post_init__()

    def with_(self, **changes: Any) -> "RankerSpec":
        return replace(self, **changes)

    def model_params(self) -> dict[str, Any]:
        """What identifies the setting beyond DELTR's own parameters (logged as run params)."""
        out: dict[str, Any] = {"engine": self.engine}
        if self.ranker == "lambdamart":
            out = {"ranker": "lambdamart"}
        if self.fair_pre is not None:
            out.update(fair_preprocess_p=self.fair_pre.p, fair_alpha=self.fair_pre.alpha)
        if self.fair_post is not None:
            out.update(fair_postprocess_p=self.fair_post.p, fair_alpha=self.fair_post.alpha)
        if self.geyik_post is not None:
            out.update(geyik_method=self.geyik_post.method, geyik_k=self.geyik_post.k,
                       geyik_target=",".join(f"{c}:{v:g}" for c, v in self.geyik_post.target or ()))
        if self.engine == "lightning":
            lo = self.lightning
            out.update(epochs=lo.epochs, batch_queries=lo.batch_queries, accelerator=lo.accelerator,
                       devices=lo.devices)
            if lo.num_nodes > 1:
                out.update(num_nodes=lo.num_nodes)
        return out


@dataclass
class RankerOutcome:
    """What :func:`train_and_evaluate` produced: the model, the ranked test lists, the metrics and
    the audits of the test table (``{k: AuditResult}``, empty without an audit)."""

    model: Ranker
    ranked: pd.DataFrame | None
    metrics: dict[str, float] | None
    audits: dict = field(default_factory=dict)


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


def validate_tables(train: pd.DataFrame, test: pd.DataFrame | None, spec: FeatureChoice,
                    columns: RankingColumns = DEFAULT_COLUMNS) -> list[str]:
    """Check, before any training, every cell the job will read: the features (chosen as the
    model will choose them) of ``train`` and of ``test``, each must be a finite number. Errors
    name the file, line, column and query. Returns the feature list."""
    from fairltr.data import numeric_matrix, select_features

    feats = select_features(train, columns=columns, features=chosen_features(spec))
    numeric_matrix(train, feats, query=columns.query)
    if test is not None:
        numeric_matrix(test, [f for f in feats if not (spec.colorblind and f == columns.group)], query=columns.query)
    return feats


def fit_ranker(train: pd.DataFrame | str, spec: RankerSpec, columns: RankingColumns = DEFAULT_COLUMNS, *,
               progress: bool = False) -> Ranker:
    """Fit the setting's model on ``train`` (a table; the Lightning engine also takes a Parquet
    path, streamed). FA*IR pre-processing, when set, is applied to the table first."""
    features = chosen_features(spec)
    if spec.ranker == "lambdamart":
        if not isinstance(train, pd.DataFrame):
            raise ConfigError("LambdaMART trains on a table in memory, not a streamed file")
        model = LambdaMART(spec.gbdt, seed=spec.seed, colorblind=spec.colorblind, columns=columns)
        return model.fit(training_table(train, spec, columns), features=features)
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
    if lo.num_nodes > 1:
        kwargs.update(num_nodes=lo.num_nodes, ddp_timeout=lo.ddp_timeout)
    for key, value in (("epochs", lo.epochs), ("batch_queries", lo.batch_queries),
                       ("optimizer", lo.optimizer), ("lr", lo.lr)):
        if value is not None:
            kwargs[key] = value
    return train_deltr_lightning(data, **kwargs)


def rank_with(model: Ranker, test: pd.DataFrame, spec: RankerSpec, columns: RankingColumns = DEFAULT_COLUMNS) -> pd.DataFrame:
    """``test`` sorted by the model's score within each query (``score``, 1-based ``rank``),
    FA*IR / multinomial FA*IR / Geyik post-processed when the spec says so, each through its
    declared re-ranker (:data:`fairltr.fair.rerankers.RERANKERS`); then the order is the re-ranked
    one and ``score`` encodes it."""
    ranked = model.rank(test, query=columns.query)
    if spec.fair_post is not None:
        fp = spec.fair_post
        ranked = _post(ranked, "fair", columns, keep_after="score_before_fair", p=fp.p, alpha=fp.alpha,
                       adjust=fp.adjust)
    if spec.multinomial_post is not None:
        mp = spec.multinomial_post
        ranked = _post(ranked, "fair", columns.replace(judgment=None, item=None), k=mp.k,
                       p={str(c): v for c, v in mp.shares}, alpha=mp.alpha, adjust=mp.adjust)
    if spec.geyik_post is not None:
        gp = spec.geyik_post
        ranked = _post(ranked.assign(score_before_geyik=ranked["score"].to_numpy()), gp.method, columns, k=gp.k,
                       target=dict(gp.target) if gp.target else None)
    return ranked


def _post(ranked: pd.DataFrame, method: str, columns: RankingColumns, *, keep_after: str | None = None,
          k: int | None = None, **settings: Any) -> pd.DataFrame:
    """Every ranked list re-ranked by the declared re-ranker ``method``; ``score`` then encodes the
    re-ranked order (``n_q - rank + 1``), the model's score kept as ``keep_after`` when named."""
    from fairltr.fair.rerankers import get_reranker

    out = get_reranker(method).run(ranked, "score", columns=columns, k=k, **settings)
    if keep_after is not None:
        out[keep_after] = out["score"].to_numpy()
    n_q = out.groupby(columns.query, sort=False)["rank"].transform("size").to_numpy()
    out["score"] = (n_q - out["rank"].to_numpy() + 1).astype("float64")
    return out


def evaluate_ranked(ranked: pd.DataFrame, columns: RankingColumns = DEFAULT_COLUMNS,
                    k: Sequence[int] = DEFAULT_K, audit: Any = None, extra_audit_ks: Sequence[int] = (),
                    audit_required: bool | None = None, ties: str = "expected", conventions: Any = None
                    ) -> dict[str, float]:
    """The metrics of :func:`evaluate_ranked_audits` (without the audit tables)."""
    return evaluate_ranked_audits(ranked, columns, k, audit, extra_audit_ks, audit_required, ties, conventions)[0]


def evaluate_ranked_audits(ranked: pd.DataFrame, columns: RankingColumns = DEFAULT_COLUMNS,
                           k: Sequence[int] = DEFAULT_K, audit: Any = None, extra_audit_ks: Sequence[int] = (),
                           audit_required: bool | None = None, ties: str = "expected", conventions: Any = None
                           ) -> tuple[dict[str, float], dict]:
    """The metric dictionary of a ranked table (its ``score`` column gives the order); with
    ``audit`` (a :class:`fairltr.metrics.AuditConfig`) and a group column also SPEC 3b's
    worst-case figures (and their intervals when ``audit.ci > 0``), see
    :func:`fairltr.workflows.audit.audit_evaluation` (``audit_required``: its ``required``; True when
    a gate, objective or constraint names an audit metric). ``conventions``: a
    :class:`fairltr.metrics.conventions.RelevanceConventions` (None: the default)."""
    from fairltr.metrics.conventions import RelevanceConventions

    conventions = conventions or RelevanceConventions()
    if audit is None or not columns.groups or ties != "expected":
        return evaluate_ranking(ranked, "score", columns=columns, k=tuple(k), ties=ties, conventions=conventions), {}
    from fairltr.workflows.audit import audit_evaluation

    return audit_evaluation(ranked, "score", columns=columns, k=tuple(k), audit=audit, extra_ks=extra_audit_ks,
                            required=audit_required, conventions=conventions)


def train_and_evaluate(train: pd.DataFrame | str, test: pd.DataFrame | None, spec: RankerSpec,
                       columns: RankingColumns = DEFAULT_COLUMNS, *, k: Sequence[int] = DEFAULT_K,
                       progress: bool = False, model: Ranker | None = None, audit: Any = None,
                       extra_audit_ks: Sequence[int] = (), audit_required: bool | None = None,
                       ties: str = "expected") -> RankerOutcome:
    """Fit (unless a fitted ``model`` is given, e.g. one base model re-ranked by many FA*IR
    settings), rank ``test`` and compute its metrics (with ``audit``, SPEC 3b's audit figures
    too, see :func:`evaluate_ranked`; ``ties``: :data:`fairltr.metrics.evaluate.TIE_POLICIES`).
    Without ``test`` only the model is made."""
    if model is None:
        model = fit_ranker(train, spec, columns, progress=progress)
    if test is None:
        return RankerOutcome(model, None, None)
    ranked = rank_with(model, test, spec, columns)
    metrics, audits = evaluate_ranked_audits(ranked, columns, k, audit, extra_audit_ks, audit_required, ties=ties)
    return RankerOutcome(model, ranked, metrics, audits)


ProgressFn = Callable[[str], None]
