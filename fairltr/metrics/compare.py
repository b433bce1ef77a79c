"""How a figure is compared with a bound: one tolerance for every gate, verdict and alarm.

Ratios such as (4/9) / (5/9) come out as 0.7999999999999999 in floating point: read literally, a
category selected at exactly four fifths of the top rate would fail ``>= 0.8``. So a value within
:data:`GATE_TOLERANCE` (relative to the bound, at least that much absolute) of a bound counts as equal
to it: ``>=`` and ``<=`` hold, ``>`` and ``<`` do not. Promotion gates, sweep constraints, the
audit's per-category verdicts and monitor's alarms all use :func:`holds`.
"""

from __future__ import annotations

import math

__all__ = ["GATE_TOLERANCE", "holds", "nearly_equal"]

GATE_TOLERANCE = 1e-9
"""Relative tolerance of a comparison with a bound (docs/spec.md section 3b)."""


def nearly_equal(value: float, bound: float, tol: float = GATE_TOLERANCE) -> bool:
    """Whether ``value`` is within the tolerance ``tol`` (relative to the bound, at least ``tol``
    absolute) of ``bound``."""
    return abs(float(value) - float(bound)) <= tol * max(1.0, abs(float(bound)))


def holds(op: str, value: float, bound: float, tol: float = GATE_TOLERANCE) -> bool:
    """``value <op> bound`` for op in ``>=, <=, >, <``, equality up to ``tol``; NaN never holds."""
    v, b = float(value), float(bound)
    if math.isnan(v) or math.isnan(b):
        return False
    same = nearly_equal(v, b, tol)
    if op == ">=":
        return same or v > b
    if op == "<=":
        return same or v < b
    if op == ">":
        return not same and v > b
    if op == "<":
        return not same and v < b
    raise ValueError(f"unknown comparison {op!r}")
