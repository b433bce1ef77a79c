"""Fairness monitoring of served rankings over time (``fairltr monitor``): time windows, the
audit of docs/spec.md section 3b per window, and population shift against the training data.

Pure functions over pandas / numpy (no MLflow): :mod:`fairltr.workflows.monitor` adds the
model scoring, the gates, the MLflow run and the registry tag.
"""

from fairltr.monitoring.shift import SHIFT_COLUMNS, TrainingProfile, population_shift, shift_summary
from fairltr.monitoring.windows import WindowSpec, assign_windows, parse_time_column, parse_window
from fairltr.monitoring.audit_windows import WindowAudit, audit_windows, failing_categories
from fairltr.monitoring.traffic import make_served_traffic

__all__ = ["WindowSpec", "parse_window", "parse_time_column", "assign_windows", "WindowAudit", "audit_windows",
           "failing_categories", "make_served_traffic", "TrainingProfile", "population_shift", "shift_summary", "SHIFT_COLUMNS"]
