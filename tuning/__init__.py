"""Optuna Pareto sweeps over fairness hyper-parameters (DELTR gamma, FA*IR p/alpha), mirrored to
MLflow, on SQLite, journal-file or PostgreSQL storages (N cooperating workers).

Public API: search spaces from the loss registry (:mod:`tuning.space`), objectives and
constraints by SPEC §6 metric names (:mod:`tuning.objectives`), studies and the exactly-N
worker loop (:mod:`tuning.study`), Pareto front / hypervolume / best trade-off
(:mod:`tuning.pareto`, :mod:`tuning.report`), plots (:mod:`tuning.plots`), the MLflow mirror
(:mod:`tuning.tracking`) and :func:`run_sweep` (:mod:`tuning.sweep`).
"""

from tuning.objectives import (
    DEFAULT_OBJECTIVES,
    Constraint,
    FoldAverageRunner,
    MethodPlugin,
    make_fold_runner,
    method_plugin,
    register_method,
    ObjectiveSpec,
    make_runner,
    parse_constraint,
    parse_objectives,
)
from tuning.pareto import as_losses, best_tradeoff_index, dominates, hypervolume_2d, pareto_mask
from tuning.plots import plot_fronts
from tuning.report import FrontReport, front_report, nadir_reference, parse_reference, trials_frame, write_report
from tuning.space import SearchSpace, fair_space, loss_space, method_space, protected_share
from tuning.study import (
    SAMPLERS,
    TrialSeededSampler,
    count_states,
    default_storage_url,
    make_sampler,
    make_storage,
    open_study,
    run_worker,
    trials_ahead,
)
from tuning.sweep import SweepConfig, SweepResult, make_objective, run_sweep, study_reports

__all__ = [
    "DEFAULT_OBJECTIVES", "Constraint", "FoldAverageRunner", "make_fold_runner",
    "MethodPlugin", "method_plugin", "register_method", "ObjectiveSpec", "make_runner", "parse_constraint", "parse_objectives",
    "as_losses", "best_tradeoff_index", "dominates", "hypervolume_2d", "pareto_mask", "plot_fronts",
    "FrontReport", "front_report", "nadir_reference", "parse_reference", "trials_frame", "write_report",
    "SearchSpace", "fair_space", "loss_space", "method_space", "protected_share",
    "SAMPLERS", "TrialSeededSampler", "count_states", "default_storage_url", "make_sampler", "make_storage",
    "open_study", "run_worker", "trials_ahead", "SweepConfig", "SweepResult", "make_objective", "run_sweep", "study_reports",
]
