"""MLflow mirror of a sweep: one parent run per study, one nested run per COMPLETE trial.

It lives in the MLflow adapter (the Optuna adapter, ``tuning``, imports no MLflow: it logs through
these public names, ``from fairltr.tracking import SweepTracker``); it reads an Optuna study by
duck typing (``user_attrs``, ``set_user_attr``, ``get_trials`` and each trial's ``state.name``),
so it imports no Optuna either.

The Optuna storage is the source of truth; MLflow mirrors it:

* the worker that creates the study creates the parent run and stores its id in the study's
  user attribute ``mlflow_parent_run_id``; the other workers wait for it (so N workers share
  one parent run);
* a trial's nested run is written (params, objectives, every metric, then FINISHED) *before*
  the trial is told COMPLETE. A crash in between leaves a run whose trial ends FAIL (stale) —
  :meth:`SweepTracker.reconcile` deletes nested runs of FAIL/PRUNED trials, so MLflow ends
  with exactly one nested run per COMPLETE trial;
* the parent gets the summary: Pareto front CSV, plot, JSON, hypervolume and best trade-off.
"""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path
from typing import Any, Mapping, Sequence

from fairltr.errors import ConfigError

__all__ = ["SweepTracker", "PARENT_ATTR", "CREATED_AT_ATTR", "sqlite_wal"]

PARENT_ATTR = "mlflow_parent_run_id"
CREATED_AT_ATTR = "fairltr_created_at"  # the study's creation time (set by tuning.study when it creates one)
TAG_STUDY = "fairltr.sweep.study"
TAG_TRIAL = "fairltr.sweep.trial"
TAG_ROLE = "fairltr.sweep.role"
TAG_WORKER = "fairltr.sweep.worker"
TAG_FRONT = "fairltr.sweep.front"  # "true" on the nested runs of the Pareto-front trials
TAG_BEST = "fairltr.sweep.best_tradeoff"  # "true" on the best trade-off's nested run


def sqlite_wal(uri: str) -> bool:
    """Put a local SQLite MLflow store in WAL mode (persistent in the file; MLflow supports it):
    each logged trial then costs a WAL append instead of a full database fsync, and several local
    workers can log without ``database is locked``. Returns True when the mode was set."""
    if not uri.startswith("sqlite:///"):
        return False
    path = Path(uri[len("sqlite:///"):])
    if not path.exists():
        return False  # MLflow creates it (then the next sweep switches it)
    import sqlite3

    try:
        with sqlite3.connect(str(path), timeout=30) as con:
            return con.execute("PRAGMA journal_mode=WAL").fetchone()[0].lower() == "wal"
    except sqlite3.Error:
        return False


class SweepTracker:
    """Parent/nested MLflow runs of one study (through ``MlflowClient``: 3 calls per trial)."""

    def __init__(self, tracking_uri: str | None, experiment: str, study_name: str) -> None:
        from mlflow import MlflowClient

        from fairltr.tracking.runs.config import init_store, resolve_tracking_uri

        self.tracking_uri = resolve_tracking_uri(tracking_uri)
        init_store(self.tracking_uri)  # a fresh local SQLite store is created once, all-or-nothing
        sqlite_wal(self.tracking_uri)
        self.client = MlflowClient(tracking_uri=self.tracking_uri)
        self.study_name = study_name
        self.experiment_id = self._experiment(experiment)
        self.parent_run_id: str | None = None
        self.worker = f"{socket.gethostname()}:{os.getpid()}"
        self._open_trial_run: str | None = None

    def _experiment(self, name: str) -> str:
        from mlflow.exceptions import MlflowException
        from mlflow.protos.databricks_pb2 import RESOURCE_ALREADY_EXISTS, ErrorCode

        exp = self.client.get_experiment_by_name(name)
        if exp is None:
            try:
                return self.client.create_experiment(name)
            except MlflowException as exc:
                if exc.error_code != ErrorCode.Name(RESOURCE_ALREADY_EXISTS):
                    raise
                exp = self.client.get_experiment_by_name(name)  # another worker created it first
        if exp.lifecycle_stage == "deleted":
            raise ConfigError(f"MLflow experiment {name!r} is deleted; restore it or use --experiment")
        return exp.experiment_id

    # ------------------------------------------------------------------ parent
    def attach(self, study, created: bool, params: Mapping[str, Any], wait_seconds: float = 20.0) -> str:
        """Find (or, for the creating worker, create) the study's parent run; returns its id.

        A worker joining a study without a parent run waits for its creator to make one, but
        only up to ``wait_seconds`` after the study was created: a creator that died (Ctrl-C)
        before making it leaves the job to the next worker, which makes it at once."""
        attrs = study.user_attrs
        run_id = attrs.get(PARENT_ATTR)
        if run_id is None and not created:
            deadline = float(attrs.get(CREATED_AT_ATTR, 0.0)) + wait_seconds
            while run_id is None and time.time() < deadline:
                time.sleep(0.5)
                run_id = study.user_attrs.get(PARENT_ATTR)  # user_attrs re-reads the storage
        if run_id is None:  # creator, or the creator died before writing the attribute
            from fairltr.tracking.runs.life_cycle import log_params

            outer = os.environ.get("MLFLOW_RUN_ID")
            if outer:  # inside `mlflow run`: the run it created is the study's parent
                run_id = outer
                self.client.set_tag(run_id, TAG_STUDY, self.study_name)
                self.client.set_tag(run_id, TAG_ROLE, "study")
            else:
                run = self.client.create_run(self.experiment_id, run_name=self.study_name,
                                             tags={TAG_STUDY: self.study_name, TAG_ROLE: "study",
                                                   TAG_WORKER: self.worker})
                run_id = run.info.run_id
            self.parent_run_id = run_id
            log_params(run_id, params, client=self.client)
            study.set_user_attr(PARENT_ATTR, run_id)
        # known before its status changes: a Ctrl-C from here on (even inside update_run, after its
        # commit) reaches abort(), which ends the parent; the parent may be another worker's run
        self.parent_run_id = run_id
        run = self.client.get_run(run_id)
        if run.info.status != "RUNNING":
            self.client.update_run(run_id, status="RUNNING")
        self.experiment_id = run.info.experiment_id  # nested trial runs live beside their parent
        return run_id

    # ------------------------------------------------------------------ trials
    def log_trial(self, number: int, params: Mapping[str, Any], metrics: Mapping[str, float],
                  tags: Mapping[str, str] | None = None, first: Sequence[str] = ()) -> str:
        """One nested run: params, finite metrics (those named in ``first``, the objectives, in a
        first call so that they head the run page's metric list), FINISHED. Returns its run id."""
        from mlflow.entities import Metric, Param, RunTag

        from fairltr.tracking.runs.life_cycle import finite_metrics

        if self.parent_run_id is None:
            raise RuntimeError("attach() must be called before log_trial()")
        run = self.client.create_run(self.experiment_id, run_name=f"trial-{number}", tags={
            "mlflow.parentRunId": self.parent_run_id, TAG_STUDY: self.study_name,
            TAG_TRIAL: str(number), TAG_ROLE: "trial", TAG_WORKER: self.worker, **(tags or {}),
        })
        rid = run.info.run_id
        self._open_trial_run = rid
        ts = int(time.time() * 1000)
        finite = finite_metrics(metrics)
        head = [k for k in dict.fromkeys(first) if k in finite]
        self.client.log_batch(
            rid,
            metrics=[Metric(k, finite[k], ts, 0) for k in head],
            params=[Param(k, str(v)) for k, v in params.items()],
            tags=[RunTag("optuna.trial_number", str(number))],
        )
        rest = [Metric(k, v, ts, 0) for k, v in finite.items() if k not in head]
        if rest:
            self.client.log_batch(rid, metrics=rest)
        self.client.set_terminated(rid, "FINISHED")
        self._open_trial_run = None
        return rid

    def abort(self, exc: BaseException) -> None:
        """This worker stops on ``exc``: the parent run ends KILLED (Ctrl-C) or FAILED, and a
        trial run it was writing is deleted (its trial ends FAIL). Errors while doing so (the
        server is gone) are reported by the caller's exception, not raised here."""
        from mlflow.exceptions import MlflowException
        from sqlalchemy.exc import SQLAlchemyError

        from fairltr.tracking.runs.life_cycle import end_run_status

        status = end_run_status(exc)
        try:
            # this worker's runs still RUNNING, also one whose create call was cut short before it
            # returned its id: trial runs are deleted (their trials end FAIL), a parent is ended
            mine = self.client.search_runs(
                [self.experiment_id], max_results=100,
                filter_string=f"tags.`{TAG_WORKER}` = '{self.worker}' and attributes.status = 'RUNNING'")
            ids = {r.info.run_id: r.data.tags.get(TAG_ROLE) for r in mine}
            if self._open_trial_run is not None:
                ids[self._open_trial_run] = "trial"
            for run_id, role in ids.items():
                self.client.set_terminated(run_id, status)
                if role == "trial":
                    self.client.delete_run(run_id)
            self._open_trial_run = None
            if self.parent_run_id is not None and self.parent_run_id not in ids:
                self.client.set_terminated(self.parent_run_id, status)
        except (MlflowException, OSError, SQLAlchemyError):  # the store is unreachable or broken
            pass

    def nested_runs(self) -> list:
        """All (not deleted) nested trial runs of the parent."""
        runs, token = [], None
        while True:
            page = self.client.search_runs(
                [self.experiment_id],
                filter_string=f"tags.mlflow.parentRunId = '{self.parent_run_id}' and tags.`{TAG_ROLE}` = 'trial'",
                max_results=1000, page_token=token,
            )
            runs.extend(page)
            token = page.token
            if not token:
                return runs

    def reconcile(self, study) -> int:
        """Delete nested runs of trials that ended FAIL or PRUNED (final states), and duplicate
        runs of one trial; returns the number deleted."""
        state = {t.number: t.state.name for t in study.get_trials(deepcopy=False)}  # optuna's TrialState names
        seen: set[int] = set()
        deleted = 0
        for run in sorted(self.nested_runs(), key=lambda r: r.info.start_time or 0):
            n = int(run.data.tags.get(TAG_TRIAL, -1))
            if state.get(n) in ("FAIL", "PRUNED") or (state.get(n) == "COMPLETE" and n in seen):
                self.client.delete_run(run.info.run_id)
                deleted += 1
            else:
                seen.add(n)
        return deleted

    # ------------------------------------------------------------------ summary
    def _set_tag(self, run_id: str, key: str, value: str) -> None:
        """``set_tag`` that tolerates a racing worker: two workers finishing a study both tag the
        front trials and the parent, and the SQL stores insert a new tag row, so the slower insert
        fails on the unique key ("UNIQUE constraint failed" on SQLite, "duplicate key" on
        PostgreSQL). The row exists then: the same call again updates it."""
        from fairltr.tracking.runs.racing_writes import repeat_on_unique_violation

        repeat_on_unique_violation(lambda: self.client.set_tag(run_id, key, value))

    def log_summary(self, metrics: Mapping[str, float], artifacts: list[Path], finished: bool, *,
                    front_trials: Sequence[int] = (), best_trial: int | None = None,
                    description: str | None = None) -> None:
        """Summary metrics and files on the parent; the parent's description (the run page's
        text) and tags ``fairltr.sweep.n_front`` / ``fairltr.sweep.best_trial``; the nested runs
        of the Pareto-front trials tagged ``fairltr.sweep.front=true`` and the best trade-off's
        ``fairltr.sweep.best_tradeoff=true`` (searchable: ``tags.`fairltr.sweep.front` = 'true'``);
        status FINISHED when the study is complete."""
        from mlflow.entities import Metric

        from fairltr.tracking.runs.life_cycle import finite_metrics

        front = {int(n) for n in front_trials}
        for run in self.nested_runs():
            n = int(run.data.tags.get(TAG_TRIAL, -1))
            on_front, best = n in front, best_trial is not None and n == int(best_trial)
            if run.data.tags.get(TAG_FRONT) != str(on_front).lower():
                self._set_tag(run.info.run_id, TAG_FRONT, str(on_front).lower())
            if best or TAG_BEST in run.data.tags:
                self._set_tag(run.info.run_id, TAG_BEST, str(best).lower())
        self._set_tag(self.parent_run_id, "fairltr.sweep.n_front", str(len(front)))
        if best_trial is not None:
            self._set_tag(self.parent_run_id, "fairltr.sweep.best_trial", str(int(best_trial)))
        if description:
            self._set_tag(self.parent_run_id, "mlflow.note.content", description)
        ts = int(time.time() * 1000)
        self.client.log_batch(self.parent_run_id,
                              metrics=[Metric(k, v, ts, 0) for k, v in finite_metrics(metrics).items()])
        for path in artifacts:
            self.client.log_artifact(self.parent_run_id, str(path))
        if finished:
            self.client.set_terminated(self.parent_run_id, "FINISHED")
