"""What a sweep optimises: objectives and constraints by SPEC §6 metric names, and the method
runners (hyper-parameter values -> metric dictionary on the test set).

* objectives: ``"kendall_tau:max,exposure_disparity:min"`` (the default: relevance up, distance
  from exposure parity down); the direction may be omitted and then comes from the metric
  registry (:func:`fairltr.metrics.direction`); a direction contradicting the metric's
  declaration is refused, and so is a target metric (``exposure_ratio``, ideal 1.0: optimise
  ``exposure_disparity`` or ``exposure_shortfall`` instead). ``exposure_gap:min`` stays
  selectable (it rewards over-exposing the protected group).
* constraints: ``"kendall_tau>=0.2"`` -> Optuna constraint value ``0.2 - kendall_tau``;
  ``"exposure_gap<=0.01"`` -> ``exposure_gap - 0.01``; two-sided ``"0.8<=exposure_ratio<=1.25"``
  -> ``max(0.8 - R, R - 1.25)``; a gate preset such as ``"four_fifths"`` (``selection_ratio_at_10>=0.8``)
  or ``"four_fifths@5"``. A trial is feasible when every value is <= 0. An undefined (NaN)
  metric counts as infeasible (:data:`INFEASIBLE`).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError, DataError
from fairltr.metrics import evaluate_ranking, metric_info, optimisation_direction
from fairltr.tracking.gates import expand_preset
from tuning.space import SearchSpace, method_space

__all__ = [
    "DEFAULT_OBJECTIVES",
    "INFEASIBLE",
    "ObjectiveSpec",
    "Constraint",
    "parse_objectives",
    "parse_constraint",
    "MethodRunner",
    "DeltrRunner",
    "FairPostRunner",
    "FairPreRunner",
    "make_runner",
    "FoldAverageRunner",
    "make_fold_runner",
    "MethodPlugin",
    "register_method",
    "method_plugin",
]

DEFAULT_OBJECTIVES = "kendall_tau:max,exposure_disparity:min"
INFEASIBLE = 1e10
_DIR = {"max": "maximize", "maximize": "maximize", "min": "minimize", "minimize": "minimize"}


def _check_metric(name: str) -> None:
    try:
        metric_info(name)
    except KeyError as exc:
        raise ConfigError(str(exc).strip("\"'")) from None
    if name.endswith("_n_queries"):
        raise ConfigError(f"{name!r} is a query count, not a metric to optimise")


@dataclass(frozen=True)
class ObjectiveSpec:
    """One objective: a SPEC §6 metric key and its Optuna direction."""

    name: str
    direction: str  # "maximize" | "minimize"

    @property
    def short(self) -> str:
        return f"{self.name}:{self.direction[:3]}"


def parse_objectives(text: str | Sequence[str] = DEFAULT_OBJECTIVES) -> list[ObjectiveSpec]:
    """Parse ``"metric[:max|min],metric[:max|min]"``; exactly two objectives, distinct names."""
    items = [t.strip() for t in (text.split(",") if isinstance(text, str) else text) if t.strip()]
    specs: list[ObjectiveSpec] = []
    for item in items:
        name, _, d = item.partition(":")
        name = name.strip()
        _check_metric(name)
        try:
            natural = optimisation_direction(name)
        except ConfigError as exc:  # a target metric (exposure_ratio): says what to optimise instead
            raise ConfigError(f"objective {item!r}: {exc}") from None
        if d:
            if d.strip().lower() not in _DIR:
                raise ConfigError(f"objective {item!r}: direction must be 'max' or 'min'")
            direction = _DIR[d.strip().lower()]
            if direction != natural:
                raise ConfigError(
                    f"objective {item!r}: {name} is declared {'higher' if natural == 'maximize' else 'lower'}"
                    f"-is-better; use {name}:{natural[:3]}"
                )
        specs.append(ObjectiveSpec(name, natural))
    if len(specs) != 2:
        raise ConfigError(f"a Pareto sweep needs exactly 2 objectives, got {len(specs)}: {text!r}")
    if specs[0].name == specs[1].name:
        raise ConfigError(f"the two objectives must differ, got {specs[0].name!r} twice")
    return specs


_CONSTRAINT_RE = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(>=|<=|>|<)\s*([-+0-9.eE]+)\s*$")
_BETWEEN_RE = re.compile(r"^\s*([-+0-9.eE]+)\s*(<=|<)\s*([A-Za-z_][A-Za-z0-9_]*)\s*(<=|<)\s*([-+0-9.eE]+)\s*$")


@dataclass(frozen=True)
class Constraint:
    """``metric >= bound``, ``metric <= bound``, or two-sided ``bound <= metric <= high``
    (``op`` is then ``">="`` and ``high`` is set); ``value(metrics) <= 0`` means feasible."""

    metric: str
    op: str  # ">=" | "<="
    bound: float
    high: float | None = None

    @property
    def key(self) -> str:
        if self.high is not None:
            return f"{self.bound:g}<={self.metric}<={self.high:g}"
        return f"{self.metric}{self.op}{self.bound:g}"

    def value(self, metrics: Mapping[str, float]) -> float:
        """Violation: ``bound - m`` for ``>=``, ``m - bound`` for ``<=``, ``max(bound - m, m - high)``
        for two-sided; INFEASIBLE when m is NaN."""
        if self.metric not in metrics:
            raise ConfigError(f"constraint {self.key!r}: metric {self.metric!r} was not computed; "
                              f"available: {sorted(k for k in metrics if not k.endswith('_n_queries'))}")
        m = float(metrics[self.metric])
        if not math.isfinite(m):
            return INFEASIBLE
        if self.high is not None:
            return max(self.bound - m, m - self.high)
        return self.bound - m if self.op == ">=" else m - self.bound

    def __str__(self) -> str:
        return self.key


def _number(text: str, num: str) -> float:
    try:
        value = float(num)
    except ValueError:
        raise ConfigError(f"constraint {text!r}: {num!r} is not a number") from None
    if not math.isfinite(value):
        raise ConfigError(f"constraint {text!r}: {num!r} must be finite")
    return value


def parse_constraint(text: str) -> Constraint:
    """Parse ``"kendall_tau>=0.2"`` (``>`` and ``<`` are read as ``>=`` and ``<=``), two-sided
    ``"0.8<=exposure_ratio<=1.25"``, or a gate preset (``"four_fifths"``, ``"four_fifths@5"``)."""
    preset = expand_preset(text)
    expr = preset[1] if preset else text
    between = _BETWEEN_RE.match(expr)
    if between:
        low, _, name, _, high = between.groups()
        _check_metric(name)
        lo, hi = _number(text, low), _number(text, high)
        if lo > hi:
            raise ConfigError(f"constraint {text!r}: the interval is empty ({low} > {high})")
        return Constraint(name, ">=", lo, hi)
    m = _CONSTRAINT_RE.match(expr)
    if not m:
        raise ConfigError(f"constraint {text!r} must look like 'metric>=number', 'metric<=number', "
                          "'low<=metric<=high' or a preset such as 'four_fifths' / 'four_fifths@5'")
    name, op, num = m.groups()
    _check_metric(name)
    return Constraint(name, ">=" if op.startswith(">") else "<=", _number(text, num))


# ---------------------------------------------------------------------------------- runners

@dataclass
class MethodRunner:
    """Train + evaluate one hyper-parameter setting: ``runner(values) -> metrics``."""

    train: pd.DataFrame
    test: pd.DataFrame
    space: SearchSpace
    query: str = "query_id"
    group: str = "protected"
    judgment: str = "judgment"
    seed: int = 0
    max_iter: int | None = None
    method: str = ""
    timings: dict[str, float] = field(default_factory=dict)

    def evaluate(self, df: pd.DataFrame, scores: np.ndarray | str) -> dict[str, float]:
        return evaluate_ranking(df, scores, query=self.query, group=self.group, judgment=self.judgment)

    def _deltr(self, gamma: float, fairness_loss: str = "exposure_hinge"):
        from fairltr import DELTR

        return DELTR(gamma, protected=self.group, seed=self.seed, max_iter=self.max_iter,
                     fairness_loss=fairness_loss, device="cpu")

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:  # pragma: no cover
        raise NotImplementedError


@dataclass
class DeltrRunner(MethodRunner):
    """DELTR with a registered ranking loss; the loss's weight parameter is DELTR's ``gamma``."""

    loss: str = "exposure_hinge"

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:
        from fairltr.losses import get_loss

        weight = get_loss(self.loss).weight_param
        gamma = float(values[weight.name]) if weight is not None else 0.0
        model = self._deltr(gamma, self.loss).fit(self.train, query=self.query, judgment=self.judgment)
        return self.evaluate(self.test, model.predict(self.test))


@dataclass
class FairPostRunner(MethodRunner):
    """FA*IR post-processing of a standard (gamma = 0) DELTR ranking of the test set.

    The base model is trained once per process and reused by every trial.
    """

    _ranked: pd.DataFrame | None = None

    def ranked(self) -> pd.DataFrame:
        if self._ranked is None:
            model = self._deltr(0.0).fit(self.train, query=self.query, judgment=self.judgment)
            self._ranked = model.rank(self.test, query=self.query)
        return self._ranked

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:
        from fairltr.fair import fair_postprocess

        out = fair_postprocess(self.ranked(), values["fair_p"], values["fair_alpha"], score="score",
                               query=self.query, group=self.group)
        return self.evaluate(out, "score")


@dataclass
class FairPreRunner(MethodRunner):
    """FA*IR pre-processing: re-rank the training lists, rewrite their judgments, train gamma = 0."""

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:
        from fairltr.fair import fair_preprocess

        fair_train = fair_preprocess(self.train, values["fair_p"], values["fair_alpha"], query=self.query,
                                     group=self.group, judgment=self.judgment)
        model = self._deltr(0.0).fit(fair_train, query=self.query, judgment=self.judgment)
        return self.evaluate(self.test, model.predict(self.test))


_RUNNERS: dict[str, type[MethodRunner]] = {
    "deltr": DeltrRunner, "fair-post": FairPostRunner, "fair-pre": FairPreRunner,
}


@dataclass(frozen=True)
class MethodPlugin:
    """A sweep method provided from outside ``tuning`` (e.g. the DPR sweep, registered by the CLI,
    which may import Lightning; ``tuning`` itself never does).

    ``factory(train, test, *, seed, **options) -> runner`` receives the ``--train``/``--test``
    arguments as given (paths); ``default_objectives`` replaces the ranking default.
    """

    name: str
    factory: Callable[..., Callable[[Mapping[str, float]], dict[str, float]]]
    default_objectives: str = DEFAULT_OBJECTIVES
    description: str = ""


_PLUGINS: dict[str, MethodPlugin] = {}


def register_method(plugin: MethodPlugin) -> MethodPlugin:
    """Make ``plugin.name`` a sweep method (replaces an earlier registration of that name)."""
    if plugin.name in _RUNNERS:
        raise ConfigError(f"{plugin.name!r} is a built-in sweep method")
    _PLUGINS[plugin.name] = plugin
    return plugin


def method_plugin(name: str) -> MethodPlugin | None:
    """The registered plugin for ``name`` (None for built-in table methods)."""
    return _PLUGINS.get(name)


def make_runner(method: str, train: pd.DataFrame, test: pd.DataFrame, *, loss: str = "exposure_hinge",
                p_range: tuple[float, float] | None = None, alpha_range: tuple[float, float] = (0.01, 0.5),
                **kw) -> MethodRunner:
    """A runner for ``method`` in {deltr, fair-pre, fair-post} with its search space."""
    if method in _PLUGINS:
        raise ConfigError(f"{method!r} is a plugin method: build its runner with "
                          f"method_plugin({method!r}).factory(train, test, seed=...)")
    if method == "dpr":
        raise ConfigError("the DPR sweep needs the Lightning bi-encoder: run it through `fairltr sweep --method dpr`")
    if method not in _RUNNERS:
        raise ConfigError(f"unknown sweep method {method!r}; choose one of {sorted(_RUNNERS)}")
    for name, df in (("train", train), ("test", test)):
        if len(df) == 0:
            raise DataError(f"the {name} table is empty")
    space = method_space(method, train, loss=loss, group=kw.get("group", "protected"),
                         p_range=p_range, alpha_range=alpha_range)
    extra = {"loss": loss} if method == "deltr" else {}
    return _RUNNERS[method](train=train, test=test, space=space, method=method, **extra, **kw)


@dataclass
class FoldAverageRunner:
    """One setting evaluated on several (train, test) folds; each metric is the mean over the
    folds where it is defined (e.g. TREC's 6 folds, as the DELTR paper averages them)."""

    runners: list[MethodRunner]
    space: SearchSpace
    method: str = ""

    def __call__(self, values: Mapping[str, float]) -> dict[str, float]:
        per_fold = [r(values) for r in self.runners]
        keys = set().union(*per_fold)
        out: dict[str, float] = {}
        for k in sorted(keys):
            vals = np.array([f.get(k, np.nan) for f in per_fold], dtype=np.float64)
            ok = np.isfinite(vals)
            out[k] = float(vals[ok].mean()) if ok.any() else float("nan")
        out["n_folds"] = float(len(per_fold))
        return out


def make_fold_runner(method: str, folds: Sequence[tuple[pd.DataFrame, pd.DataFrame]], **kw) -> FoldAverageRunner:
    """:class:`FoldAverageRunner` over ``folds``; FA*IR's ``fair_p`` range comes from the pooled
    training share of all folds."""
    if not folds:
        raise ConfigError("make_fold_runner needs at least one (train, test) fold")
    runners = [make_runner(method, tr, te, **kw) for tr, te in folds]
    pooled = pd.concat([tr for tr, _ in folds], ignore_index=True)
    space = method_space(method, pooled, loss=kw.get("loss", "exposure_hinge"), group=kw.get("group", "protected"),
                         p_range=kw.get("p_range"), alpha_range=kw.get("alpha_range", (0.01, 0.5)))
    for r in runners:
        r.space = space
    return FoldAverageRunner(runners, space, method)


ObjectiveFn = Callable[[Mapping[str, float]], dict[str, float]]
