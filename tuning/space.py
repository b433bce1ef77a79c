"""Search spaces read from the ``fairltr.losses`` registry declarations and FA*IR's parameters.

A :class:`~fairltr.losses.HyperParam` becomes one Optuna parameter:

* ``log=False``: ``suggest_float(name, low, high)``.
* ``log=True``: the search coordinate is ``<name>_log10`` uniform on
  ``[log10(low) - zero_band, log10(high)]`` with ``zero_band = ZERO_BAND_DECADES`` when
  ``include_zero`` (else 0). Values below ``log10(low)`` map to exactly 0, values above to
  ``10 ** coordinate``. So 0 (e.g. ``gamma = 0`` = plain ListNet) has a probability mass of
  ``zero_band / (zero_band + log10(high / low))`` under uniform sampling (1/6 for DELTR's
  declared gamma range 1e2..1e7), while the rest of the range stays log-uniform. One
  continuous coordinate keeps NSGA-II's crossover, TPE and the GP sampler meaningful (a
  categorical "use zero" switch would split the space in two).
* ``log=False`` with ``include_zero`` and ``low > 0``: the same idea on a linear coordinate,
  ``<name>`` uniform on ``[low - zero_band_frac * (high - low), high]``, values below ``low`` -> 0.

The value actually used is recorded as the trial's user attribute ``<name>`` (and in MLflow).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

import numpy as np
import pandas as pd

from fairltr.errors import ConfigError, DataError
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
    """How one declared hyper-parameter is searched: coordinate name, bounds and the map to a value."""

    param: HyperParam
    zero_band: float

    @property
    def coordinate(self) -> str:
        """Optuna parameter name (``gamma_log10`` for log-scale params, else the param's name)."""
        return f"{self.param.name}_log10" if self.param.log else self.param.name

    @property
    def bounds(self) -> tuple[float, float]:
        """Range of the search coordinate."""
        p = self.param
        if p.log:
            return math.log10(p.low) - self.zero_band, math.log10(p.high)
        return p.low - self.zero_band, p.high

    @property
    def zero_probability(self) -> float:
        """Probability of the value 0 under uniform sampling of the coordinate."""
        lo, hi = self.bounds
        return self.zero_band / (hi - lo) if hi > lo else 0.0

    def to_value(self, coord: float) -> float:
        """Map a coordinate to the hyper-parameter's value (0 inside the zero band)."""
        p = self.param
        if p.log:
            return 0.0 if self.zero_band > 0 and coord < math.log10(p.low) else float(10.0 ** coord)
        return 0.0 if self.zero_band > 0 and coord < p.low else float(coord)

    def to_coordinate(self, value: float) -> float:
        """Inverse of :meth:`to_value` (0 goes to the middle of the zero band); for enqueueing."""
        p = self.param
        value = p.validate(value)
        lo, hi = self.bounds
        if value == 0.0:
            if self.zero_band <= 0:
                raise ConfigError(f"{p.name}=0 is outside the declared range [{p.low}, {p.high}]")
            return lo + self.zero_band / 2
        coord = math.log10(value) if p.log else value
        if not lo <= coord <= hi:
            raise ConfigError(f"{p.name}={value} is outside the declared range [{p.low}, {p.high}]")
        return coord

    def suggest(self, trial: "optuna.Trial") -> float:
        lo, hi = self.bounds
        return self.to_value(trial.suggest_float(self.coordinate, lo, hi))


class SearchSpace:
    """An ordered set of :class:`ParamSpace`; ``suggest(trial)`` returns ``{name: value}``."""

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
        return [s.param.name for s in self.params]

    def distributions(self) -> dict[str, "optuna.distributions.FloatDistribution"]:
        """Optuna distributions of the search coordinates (as ``suggest`` declares them)."""
        from optuna.distributions import FloatDistribution

        return {s.coordinate: FloatDistribution(*s.bounds) for s in self.params}

    def suggest(self, trial: "optuna.Trial") -> dict[str, float]:
        """Sample every parameter and record the values as user attributes ``<name>``."""
        values = {s.param.name: s.suggest(trial) for s in self.params}
        for k, v in values.items():
            trial.set_user_attr(k, v)
        return values

    def coordinates(self, values: Mapping[str, float]) -> dict[str, float]:
        """Search coordinates for given values (for ``study.enqueue_trial``)."""
        unknown = set(values) - set(self.names)
        if unknown:
            raise ConfigError(f"unknown hyper-parameter(s) {sorted(unknown)}; this space has {self.names}")
        return {s.coordinate: s.to_coordinate(values[s.param.name]) for s in self.params if s.param.name in values}

    def values_from_params(self, params: Mapping[str, float]) -> dict[str, float]:
        """Hyper-parameter values from a trial's Optuna params (search coordinates)."""
        return {s.param.name: s.to_value(params[s.coordinate]) for s in self.params if s.coordinate in params}

    def __repr__(self) -> str:
        inner = ", ".join(f"{s.coordinate}∈[{s.bounds[0]:g}, {s.bounds[1]:g}]" for s in self.params)
        return f"SearchSpace({inner})"


def loss_space(loss_name: str, **kw) -> SearchSpace:
    """The search space declared by a registered fairness loss (e.g. DELTR's ``gamma``)."""
    loss = get_loss(loss_name)
    if not loss.params:
        raise ConfigError(f"fairness loss {loss_name!r} declares no hyper-parameters to search")
    return SearchSpace(loss.params, **kw)


def protected_share(df: pd.DataFrame, group: str = "protected") -> float:
    """Share of rows in a protected group (group value >= 1)."""
    try:
        from fairltr.fair import protected_share as _share  # FA*IR's definition when present
        return float(_share(df, group=group))
    except ImportError:
        pass
    if group not in df.columns:
        raise DataError(f"group column {group!r} not in the table; columns: {list(df.columns)}")
    return float(np.mean(df[group].to_numpy() >= 1))


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
                 group: str = "protected", p_range: tuple[float, float] | None = None,
                 alpha_range: tuple[float, float] = (0.01, 0.5), dpr_loss: str = "lakda_kl") -> SearchSpace:
    """The search space of a sweep method: ``deltr`` (loss params), ``fair-pre``/``fair-post``
    (fair_p, fair_alpha), ``dpr`` (the retrieval loss's ``alpha``)."""
    if method == "deltr":
        return loss_space(loss)
    if method in ("fair-pre", "fair-post"):
        if train is None:
            raise ConfigError("FA*IR search spaces need the training table (for the protected share)")
        return fair_space(protected_share(train, group), p_range, alpha_range)
    if method == "dpr":
        return loss_space(dpr_loss)
    raise ConfigError(f"unknown sweep method {method!r}; choose deltr, fair-pre, fair-post or dpr")
