"""What a sweep optimises: objectives and constraints by metric name (the names
:func:`fairltr.metrics.evaluate_ranking` reports). The trials themselves (hyper-parameter values
-> metrics) are built by the workflows: :mod:`fairltr.workflows.sweep`.

* objectives: ``"kendall_tau:max,exposure_disparity:min"`` (the default: relevance up, distance
  from exposure parity down); the direction may be omitted and then comes from the metric
  registry (:func:`fairltr.metrics.direction`); a direction contradicting the metric's
  declaration is refused, and so is a target metric (``exposure_ratio``, ideal 1.0: optimise
  ``exposure_disparity`` or ``exposure_shortfall`` instead; ``exposure_gap``, signed with target
  0: pushing it down over-exposes the protected group).
* constraints (the core bound grammar, :func:`fairltr.gates.parse_gate`, read with numbers only):
  ``"kendall_tau>=0.2"`` -> Optuna constraint value ``0.2 - kendall_tau``;
  ``"exposure_gap<=0.01"`` -> ``exposure_gap - 0.01``; two-sided ``"0.8<=exposure_ratio<=1.25"``
  -> ``max(0.8 - R, R - 1.25)``; a gate preset such as ``"four_fifths"`` (``impact_ratio_at_10>=0.8``, every
  audited category's pooled selection rate at least 80% of the highest) or ``"four_fifths@5"``.
  The worst-case audit metrics (``impact_ratio_at_10:max``, ``exposure_ratio_worst:max``,
  ``impact_ratio_at_10.race:max``, ``ndkl_at_10:min``) are objectives too: the trials are then
  audited (:func:`fairltr.workflows.ranking_trial`). A trial is feasible when every value is <= 0. An undefined (NaN)
  metric counts as infeasible (:data:`INFEASIBLE`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping, Sequence

from fairltr.errors import ConfigError
from fairltr.gates import parse_gate
from fairltr.metrics import is_metric_key, metric_info, optimisation_direction
from fairltr.metrics.compare import nearly_equal

__all__ = [
    "DEFAULT_OBJECTIVES",
    "INFEASIBLE",
    "ObjectiveSpec",
    "Constraint",
    "parse_objectives",
    "parse_constraint",
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
    """One objective: a metric name and its Optuna direction."""

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
        # the direction is the LAST ':'-part (an intersection key holds one: impact_ratio_at_10.sex:race:max)
        head, _, tail = item.rpartition(":")
        name, d = (head, tail) if head and (tail.strip().lower() in _DIR or is_metric_key(head.strip())) else (item, "")
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
        # a value within the gates' tolerance of a bound is on it (an exact 4/5 meets >=0.8): 0, feasible
        low = 0.0 if nearly_equal(m, self.bound) else self.bound - m
        if self.high is not None:
            return max(low, 0.0 if nearly_equal(m, self.high) else m - self.high)
        if self.op == ">=":
            return low
        return 0.0 if nearly_equal(m, self.bound) else m - self.bound

    def __str__(self) -> str:
        return self.key


def parse_constraint(text: str) -> Constraint:
    """Parse a constraint with the one bound grammar (:func:`fairltr.gates.parse_gate`, numbers
    only: a sweep has no champion): ``"kendall_tau>=0.2"`` (``>`` and ``<`` are read as ``>=`` and
    ``<=``), two-sided ``"0.8<=exposure_ratio<=1.25"``, or a gate preset (``"four_fifths"``,
    ``"four_fifths@5"``). A ``<metric>_n_queries`` count is refused (not a metric to bound)."""
    gate = parse_gate(text, what="constraint", champion=False)
    if gate.metric.endswith("_n_queries"):
        raise ConfigError(f"constraint {gate.text!r}: {gate.metric!r} is a query count, not a metric to optimise")
    if gate.two_sided:
        low, high = gate.bounds
        return Constraint(gate.metric, ">=", float(low.value), float(high.value))
    bound = gate.bounds[0]
    return Constraint(gate.metric, ">=" if bound.op in (">=", ">") else "<=", float(bound.value))
