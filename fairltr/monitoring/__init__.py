"""Fairness monitoring of served rankings over time (``fairltr monitor``): time windows, the
audit of docs/spec.md section 3b per window, each window's verdict (pass, fail, insufficient
evidence) with the run's error rate controlled (Holm), and population shift against the training
data, tested against sampling noise.

Pure functions over pandas / numpy (no MLflow): :mod:`fairltr.workflows.monitor` adds the
model scoring, the gates, the MLflow run and the registry tag.
"""

from fairltr.monitoring.shift import SHIFT_COLUMNS, TrainingProfile, label_mismatch, population_shift, shift_summary
from fairltr.monitoring.windows import TIME_UNITS, WindowSpec, assign_windows, parse_time_column, parse_window
from fairltr.monitoring.audit_windows import WindowAudit, audit_windows, failing_categories
from fairltr.monitoring.selection_tests import MIN_EXPECTED, VERDICTS, holm, ratio_test_pvalues
from fairltr.monitoring.served_ranks import check_rank_permutation
from fairltr.monitoring.traffic import make_served_traffic
from fairltr.monitoring.window_verdicts import WindowVerdict, judge_windows, pooled_categories

__all__ = ["WindowSpec", "parse_window", "parse_time_column", "assign_windows", "TIME_UNITS", "WindowAudit",
           "audit_windows", "failing_categories", "make_served_traffic", "TrainingProfile", "population_shift",
           "shift_summary", "label_mismatch", "SHIFT_COLUMNS", "MIN_EXPECTED", "VERDICTS", "holm", "ratio_test_pvalues",
           "check_rank_permutation", "WindowVerdict", "judge_windows", "pooled_categories"]
