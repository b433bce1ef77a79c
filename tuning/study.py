"""Optuna studies for Pareto sweeps: create-or-resume (:func:`open_study`), and the public face of
the sweep's study machinery, re-exported here: storages (:mod:`tuning.storage`), samplers
(:mod:`tuning.samplers`), the interrupt guard (:mod:`tuning.interrupts`) and the worker loop that
stops every cooperating worker at exactly ``n_trials`` COMPLETE trials (:mod:`tuning.worker`).
"""

from __future__ import annotations

import time
import warnings
from typing import Any, Mapping, Sequence

import optuna

from fairltr.errors import ConfigError
from fairltr.tracking import CREATED_AT_ATTR  # the MLflow mirror reads it (a lazy name: no MLflow import)
from tuning.interrupts import InterruptGuard, interruptible
from tuning.samplers import SAMPLERS, WorkerSampler, make_sampler, worker_seed
from tuning.storage import default_storage_url, make_storage
from tuning.worker import WorkerReport, count_states, fail_if_running, run_worker, trials_ahead

__all__ = [
    "SAMPLERS",
    "default_storage_url",
    "make_storage",
    "make_sampler",
    "WorkerSampler",
    "open_study",
    "WorkerReport",
    "run_worker",
    "interruptible",
    "count_states",
    "worker_seed",
    "fail_if_running",
    "InterruptGuard",
    "trials_ahead",
]


def open_study(name: str, storage, directions: Sequence[str], sampler, config: Mapping[str, Any],
               metric_names: Sequence[str] | None = None):
    """Create the study, or load it when it exists (resume). Returns ``(study, created)``.

    ``config`` (method, objectives, ...) is stored as study user attributes on creation; a
    resumed study must have the same values for every key, else :class:`ConfigError`.
    ``metric_names`` name the objectives (``study.set_metric_names``: optuna-dashboard and
    ``trials_dataframe`` show them). Creation is atomic in the storage, so exactly one of several
    simultaneous workers gets ``created=True``.
    """

    try:
        study = optuna.create_study(study_name=name, storage=storage, directions=list(directions),
                                    sampler=sampler, load_if_exists=False)
        created = True
    except optuna.exceptions.DuplicatedStudyError:
        study = optuna.load_study(study_name=name, storage=storage, sampler=sampler)
        created = False
    if created:
        study.set_user_attr(CREATED_AT_ATTR, time.time())  # lets resumed workers tell a dead creator from a slow one
        for k, v in config.items():
            study.set_user_attr(k, v)
        if metric_names is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                study.set_metric_names(list(metric_names))
    else:
        have = [d.name.lower() for d in study.directions]
        if have != [d.lower() for d in directions]:
            raise ConfigError(f"study {name!r} exists with directions {have}, not {list(directions)}")
        stored = study.user_attrs
        diff = {k: (stored.get(k), v) for k, v in config.items() if k in stored and stored[k] != v}
        if diff:
            detail = "; ".join(f"{k}: stored {a!r}, now {b!r}" for k, (a, b) in diff.items())
            raise ConfigError(f"study {name!r} exists with a different configuration ({detail}); "
                              f"use another --study name to start a new sweep")
    return study, created
