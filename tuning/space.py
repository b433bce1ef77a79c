"""Search spaces read from the ``fairltr.losses`` registry declarations and FA*IR's parameters.

A :class:`~fairltr.losses.HyperParam` becomes one Optuna parameter *of the same name* (what
optuna-dashboard shows: ``gamma``, not a transformed coordinate):

* ``log=False``: ``FloatDistribution(low, high)``.
* ``log=True``: ``FloatDistribution(low / 10**zero_band, high, log=True)`` with
  ``zero_band = ZERO_BAND_DECADES`` when ``include_zero`` (else 0). A sampled value below ``low``
  means exactly 0, any other is used as sampled. So 0 (e.g. ``gamma = 0`` = plain ListNet) has
  the probability ``zero_band / (zero_band + log10(high / low))`` under log-uniform sampling
  (1/6 for DELTR's declared gamma range 1e2..1e7) while the rest of the range stays
  log-uniform. One continuous log-scaled parameter keeps NSGA-II's crossover and mutation,
  TPE and the GP sampler meaningful (all of them work on the log of a ``log=True`` parameter; a
  categorical "use zero" switch would split the space in two), and the dashboard draws it on a
  log axis.
* ``log=False`` with ``include_zero`` and ``low > 0``: the same idea on a linear scale,
  ``FloatDistribution(low - zero_band_frac * (high - low), high)``, values below ``low`` -> 0.

An ``integer`` parameter (LambdaMART's ``num_leaves``) is sampled on the same continuous axis
and used rounded to the nearest integer. The value actually used (0 inside the zero band, the
rounded value) is recorded as the trial's user attribute ``<name>`` and logged to MLflow as the
parameter ``<name>``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

import pandas as pd

from fairltr.columns import RankingColumns
from fairltr.errors import ConfigError
from fairltr.losses import HyperParam, get_loss

if TYPE_CHECKING:  # pragma: no cover
    import optuna

__all__ = [
    "ZERO_BAND_DECADES",
    "ZERO_BAND_FRACTION",
    "ParamSpace",
    "SearchSpace",
    "loss_space",
    "fair_space",
    "protected_share",
    "method_space",
]

ZERO_BAND_DECADES = 1.0
ZERO_BAND_FRACTION = 0.1


@dataclass(frozen=True)
class ParamSpace:
    """How one declared hyper-parameter is searched: its Optuna distribution and the map from a
    sampled value to the value used. ``zero_band`` is in decades for log-scale parameters, in
    parameter units otherwise."""

    param: HyperParam
    zero_band: float

    @property
    def name(self) -> str:
        """The Optuna parameter name: the declared name (``gamma``)."""
        return self.param.name

    @property
    def bounds(self) -> tuple[float, float]:
        """Range of the Optuna parameter (the zero band included)."""
        p = self.param
        if p.log:
            return p.low / 10.0 ** self.zero_band, p.high
        return p.low - self.zero_band, p.high

    def distribution(self) -> "optuna.distributions.FloatDistribution":
        from optuna.distributions import FloatDistribution

        return FloatDistribution(*self.bounds, log=self.param.log)

    @property
    def zero_probability(self) -> float:
        """Probability of the value 0 when the parameter is sampled from its distribution."""
        lo, hi = self.bounds
        if self.zero_band <= 0 or hi <= lo:
            return 0.0
        if self.param.log:
            return self.zero_band / math.log10(hi / lo)
        return self.zero_band / (hi - lo)

    def to_value(self, sampled: float) -> float:
        """The value used for a sampled one: 0 inside the zero band (below ``low``), else itself
        (rounded to the nearest integer for an ``integer`` parameter)."""
        if self.zero_band > 0 and sampled < self.param.low:
            return 0.0
        return float(round(sampled)) if self.param.integer else float(sampled)

    def to_sampled(self, value: float) -> float:
        """Inverse of :meth:`to_value` (0 goes to the middle of the zero band, geometric for log
        parameters); for ``study.enqueue_trial``."""
        p = self.param
        value = p.validate(value)
        lo, hi = self.bounds
        if value == 0.0:
            if self.zero_band <= 0:
                raise ConfigError(f"{p.name}=0 is outside the declared range [{p.low}, {p.high}]")
            return math.sqrt(lo * p.low) if p.log else (lo + p.low) / 2
        if not p.low <= value <= hi:
            raise ConfigError(f"{p.name}={value} is outside the declared range [{p.low}, {p.high}]")
        return float(value)

    def suggest(self, trial: "optuna.Trial") -> float:
        lo, hi = self.bounds
        return self.to_value(trial.suggest_float(self.name, lo, hi, log=self.param.log))

    def __repr__(self) -> str:
        lo, hi = self.bounds
        kind = "log" if self.param.log else "linear"
        zero = f", <{self.param.low:g} means 0" if self.zero_band > 0 else ""
        return f"{self.name}∈[{lo:g}, {hi:g}] {kind}{zero}"


class SearchSpace:
    """An ordered set of :class:`ParamSpace`; ``suggest(trial)`` returns ``{name: value used}``."""

    def __init__(self, params: tuple[HyperParam, ...] | list[HyperParam], *,
                 zero_band_decades: float = ZERO_BAND_DECADES, zero_band_fraction: float = ZERO_BAND_FRACTION) -> None:
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise ConfigError(f"duplicate hyper-parameter names in a search space: {names}")
        spaces = []
        for p in params:
            if p.log:
                band = zero_band_decades if p.include_zero else 0.0
            else:
                band = zero_band_fraction * (p.high - p.low) if (p.include_zero and p.low > 0) else 0.0
            spaces.append(ParamSpace(p, band))
        self.params: tuple[ParamSpace, ...] = tuple(spaces)

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.params]

    def distributions(self) -> dict[str, "optuna.distributions.FloatDistribution"]:
        """Optuna distributions of the parameters (as ``suggest`` declares them)."""
        return {s.name: s.distribution() for s in self.params}

    def suggest(self, trial: "optuna.Trial") -> dict[str, float]:
        """Sample every parameter and record the values used as user attributes ``<name>``."""
        values = {s.name: s.suggest(trial) for s in self.params}
        for k, v in values.items():
            trial.set_user_attr(k, v)
        return values

    def sampled_for(self, values: Mapping[str, float]) -> dict[str, float]:
        """Optuna parameter values that stand for the given values (for ``study.enqueue_trial``)."""
        unknown = set(values) - set(self.names)
        if unknown:
            raise ConfigError(f"unknown hyper-parameter(s) {sorted(unknown)}; this space has {self.names}")
        return {s.name: s.to_sampled(values[s.name]) for s in self.params if s.name in values}

    def values_from_params(self, params: Mapping[str, float]) -> dict[str, float]:
        """Values used for a trial's Optuna params."""
        return {s.name: s.to_value(params[s.name]) for s in self.params if s.name in params}

    def __repr__(self) -> str:
        return f"SearchSpace({', '.join(repr(s) for s in self.params)})"


def loss_space(loss_name: str, **kw) -> SearchSpace:
    """The search space declared by a registered fairness loss (e.g. DELTR's ``gamma``)."""
    loss = get_loss(loss_name)
    if not loss.params:
        raise ConfigError(f"fairness loss {loss_name!r} declares no hyper-parameters to search")
    return SearchSpace(loss.params, **kw)


def protected_share(df: pd.DataFrame, columns: RankingColumns | None = None) -> float:
    """Share of rows in a protected group (group value >= 1) of the contract's group column
    (default :data:`~fairltr.columns.DEFAULT_COLUMNS`): FA*IR's p* (:func:`fairltr.fair.protected_share`)."""
    from fairltr.fair import protected_share as _share

    return float(_share(df, columns=columns))


def fair_space(share: float, p_range: tuple[float, float] | None = None,
               alpha_range: tuple[float, float] = (0.01, 0.5)) -> SearchSpace:
    """FA*IR's ``fair_p`` (linear) and ``fair_alpha`` (log) around the data's protected share.

    Default ``fair_p`` range: ``[max(0.01, share / 2), min(0.95, 2 * share + 0.1)]`` — from half
    the share (a weak requirement) to well above it (over-representation at the top).
    """
    if not 0.0 <= share <= 1.0:
        raise ConfigError(f"protected share must be in [0, 1], got {share}")
    if p_range is None:
        p_range = (max(0.01, share / 2), min(0.95, 2 * share + 0.1))
    lo, hi = map(float, p_range)
    if not 0.0 < lo < hi < 1.0:
        raise ConfigError(f"fair_p range must satisfy 0 < low < high < 1, got {p_range}")
    alo, ahi = map(float, alpha_range)
    if not 0.0 < alo < ahi < 1.0:
        raise ConfigError(f"fair_alpha range must satisfy 0 < low < high < 1, got {alpha_range}")
    return SearchSpace((
        HyperParam("fair_p", default=min(max(share, lo), hi), low=lo, high=hi,
                   description="FA*IR target minimum proportion of protected items"),
        HyperParam("fair_alpha", default=min(max(0.1, alo), ahi), low=alo, high=ahi, log=True,
                   description="FA*IR significance level (adjusted for multiple tests)"),
    ))


def method_space(method: str, train: pd.DataFrame | None = None, *, loss: str = "exposure_hinge",
                 columns: RankingColumns | None = None, p_range: tuple[float, float] | None = None,
                 alpha_range: tuple[float, float] = (0.01, 0.5), dpr_loss: str = "lakda_kl") -> SearchSpace:
    """The search space of one of the four original sweep methods: ``deltr`` (loss params),
    ``fair-pre``/``fair-post`` (fair_p, fair_alpha), ``dpr`` (the retrieval loss's ``alpha``).

    Kept for callers of the Python API. Sweep methods declare their spaces once, in the method
    registry (:mod:`fairltr.workflows.sweep_methods`, built from :func:`loss_space` and
    :func:`fair_space`); a new method is not added here. ``columns`` names the group column of
    ``train`` (default :data:`~fairltr.columns.DEFAULT_COLUMNS`)."""
    if method == "deltr":
        return loss_space(loss)
    if method in ("fair-pre", "fair-post"):
        if train is None:
            raise ConfigError("FA*IR search spaces need the training table (for the protected share)")
        return fair_space(protected_share(train, columns), p_range, alpha_range)
    if method == "dpr":
        return loss_space(dpr_loss)
    raise ConfigError(f"unknown sweep method {method!r}; choose deltr, fair-pre, fair-post or dpr")
