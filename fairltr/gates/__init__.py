"""The one bound grammar of fairltr (pure core: no MLflow, no Optuna): promotion gates
(:mod:`fairltr.tracking.model_registry`), sweep constraints (:func:`tuning.parse_constraint`) and the
audit jobs' preset names (:mod:`fairltr.metrics.audit_jobs`) all parse with :func:`parse_gate`.

A gate is one of

* ``<metric> <op> <bound>`` with op in ``>=, <=, >, <``: ``exposure_disparity<=0.1``,
  ``ndcg_at_10>=champion-0.01`` (``<bound> <op> <metric>`` is read the same way);
* two-sided ``<low> <= <metric> <= <high>`` (either ``<=`` may be ``<``): ``0.8<=exposure_ratio<=1.25``
  — the way to gate a target metric (ideal 1.0) from both sides;
* a named preset: ``four_fifths`` = ``impact_ratio_at_10>=0.8`` (the four-fifths rule of hiring
  audits, docs/spec.md section 3b: every audited category's pooled selection rate in the top k is
  at least 80% of the most-selected category's, over every attribute and their intersection;
  small categories are excluded and listed); ``four_fifths@<k>`` for another k. (The per-query
  mean ``selection_ratio_at_<k>`` keeps its own name: gate it explicitly.)

A bound is a number or ``champion``, ``champion+x``, ``champion-x``, ``champion*x`` (relative to the
current champion's value of the same metric; ``parse_gate(..., champion=False)`` refuses these,
as a sweep constraint has no champion). Metric names must be known to the metric registry
(:func:`fairltr.metrics.metric_info`), so a typo fails at parse time with one line.

Confidence mode (``check_gates(..., confidence=0.95)``, ``fairltr promote --confidence``, SPEC 3b):
each bound is checked on the conservative end of an interval at that level. An absolute bound
compares the end of the metric's own interval (``<metric>_ci_low`` for ``>=`` / ``>``,
``<metric>_ci_high`` for ``<=`` / ``<``); a champion-relative ``champion+x`` / ``champion-x``
bound compares the end of the paired bootstrap interval of (candidate - champion) over the same
resampled queries with ``+x`` / ``-x``; a ``champion*x`` bound (not a difference) compares the
candidate's end with x times the champion's opposite end. A missing interval fails closed.

Checking (:func:`check_gates`) is fail-closed: a metric the candidate lacks (not computed, NaN)
fails the gate; so does a relative bound whose metric the champion lacks. Without a champion, the
relative bounds are skipped (``no_champion="pass"``, the first model that clears the absolute
bounds becomes champion) or fail the gate (``no_champion="fail"``). Every result records the rule
that was applied (the expanded expression, and the preset's name).
"""

from fairltr.gates.checks import GateResult, check_gates, constant_model_reason, constant_model_warning
from fairltr.gates.grammar import (GATE_PRESETS, GATE_TOLERANCE, OPS, Bound, Gate, GatePreset, expand_preset,
                                   gate_cutoffs, is_finite_number, parse_gate)

__all__ = [
    "OPS", "Bound", "Gate", "GatePreset", "GATE_PRESETS", "GateResult", "parse_gate", "check_gates",
    "expand_preset", "gate_cutoffs", "is_finite_number", "GATE_TOLERANCE", "constant_model_reason",
    "constant_model_warning",
]
