"""Optuna Pareto sweeps over fairness hyper-parameters (DELTR gamma, FA*IR p/alpha, DPR alpha),
mirrored to MLflow, on SQLite, journal-file or PostgreSQL storages (N cooperating workers).

Public API: search spaces from the loss registry (:mod:`tuning.space`), objectives and
constraints by metric name (:mod:`tuning.objectives`), studies (:mod:`tuning.study`, which also
re-exports storages :mod:`tuning.storage`, samplers :mod:`tuning.samplers`, the Ctrl-C guard
:mod:`tuning.interrupts` and the exactly-N worker loop :mod:`tuning.worker`), hypervolume and
best trade-off of Optuna's front (:mod:`tuning.pareto`, :mod:`tuning.report`), plots
(:mod:`tuning.plots`) and :func:`run_sweep` (:mod:`tuning.sweep`; it logs through the MLflow adapter's
public names, e.g. `fairltr.tracking.SweepTracker`, and imports no MLflow). The trial of each method is built by the workflows
(:func:`fairltr.workflows.run_sweep_job`): adapters never import workflows.
"""

from tuning.objectives import (
    DEFAULT_OBJECTIVES,
    Constraint,
    ObjectiveSpec,
    parse_constraint,
    parse_objectives,
)
from tuning.pareto import as_losses, best_tradeoff_index, hypervolume_2d
from tuning.plots import plot_fronts
from tuning.report import (
    FrontReport,
    front_report,
    front_trials,
    nadir_reference,
    parse_reference,
    trials_frame,
    write_report,
)
from tuning.space import SearchSpace, fair_space, loss_space, method_space, protected_share
from tuning.study import (
    SAMPLERS,
    WorkerSampler,
    count_states,
    default_storage_url,
    make_sampler,
    make_storage,
    open_study,
    run_worker,
    trials_ahead,
    worker_seed,
)
from tuning.sweep import SweepConfig, SweepResult, make_objective, run_sweep, study_reports

__all__ = [
    "DEFAULT_OBJECTIVES", "Constraint", "ObjectiveSpec", "parse_constraint", "parse_objectives",
    "as_losses", "best_tradeoff_index", "hypervolume_2d", "plot_fronts",
    "FrontReport", "front_report", "front_trials", "nadir_reference", "parse_reference", "trials_frame",
    "write_report", "SearchSpace", "fair_space", "loss_space", "method_space", "protected_share",
    "SAMPLERS", "WorkerSampler", "count_states", "default_storage_url", "make_sampler", "make_storage",
    "open_study", "run_worker", "trials_ahead", "worker_seed", "SweepConfig", "SweepResult", "make_objective",
    "run_sweep", "study_reports",
]
