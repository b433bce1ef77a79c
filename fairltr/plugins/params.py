"""Declared parameters: one declaration per tunable setting, read by the estimators, the
Lightning modules, the CLI, MLflow params and the Optuna search spaces alike."""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass

from fairltr.errors import ConfigError

__all__ = ["HyperParam"]


@dataclass(frozen=True)
class HyperParam:
    """One tunable hyper-parameter: name, default and search range.

    ``log=True`` means a log-uniform search over [low, high]; ``include_zero=True`` adds the
    value 0 to a log-scale range (e.g. DELTR's gamma, where 0 is standard ListNet);
    ``integer=True``: the value used is rounded to the nearest integer (LightGBM's leaves).
    """

    name: str
    default: float
    low: float
    high: float
    log: bool = False
    include_zero: bool = False
    description: str = ""
    integer: bool = False  # the value used is the sampled one rounded to the nearest integer

    def __post_init__(self) -> None:
        if not self.low <= self.high:
            raise ConfigError(f"hyper-parameter {self.name!r}: low {self.low} > high {self.high}")
        if self.log and self.low <= 0:
            raise ConfigError(f"hyper-parameter {self.name!r}: a log range needs low > 0, got {self.low}")

    def validate(self, value: float | str) -> float:
        """Return ``value`` as float or raise naming the allowed range (0 allowed if declared).

        The one check of a loss weight's domain (DELTR's gamma, the bi-encoders' alpha): the
        estimator, the Lightning modules, the workflows' settings and the objectives call it.
        Numbers and numeric text are accepted (CLI and Optuna values); booleans, other text and
        non-finite values are not; a range starting at >= 0 rejects negatives.
        """
        if isinstance(value, bool) or not isinstance(value, (numbers.Real, str)):
            raise ConfigError(f"{self.name} must be a finite number, got {value!r}")
        try:
            number = float(value)
        except ValueError:
            raise ConfigError(f"{self.name} must be a finite number, got {value!r}") from None
        if not math.isfinite(number):
            raise ConfigError(f"{self.name} must be finite, got {number}")
        if number == 0.0 and (self.include_zero or self.low <= 0.0):
            return number
        if number < 0 and self.low >= 0:
            raise ConfigError(f"{self.name} must be >= 0, got {number}")
        return number
