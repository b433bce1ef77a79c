"""The worker loop of a sweep: run trials until the study holds exactly ``n_trials`` COMPLETE
ones, shared with any number of cooperating workers.

Exactly N (the invariant). A trial runs its objective only if fewer than N trials with a smaller
trial number are WAITING, RUNNING or COMPLETE when it starts; otherwise it ends PRUNED without
training (bookkeeping, not early stopping: multi-objective studies cannot prune). Optuna creates
trials under a lock on the study row (RDB) or in one log (journal), so all lower-numbered trials
are visible at that moment, and states only move WAITING -> RUNNING -> COMPLETE/FAIL/PRUNED. If
N + 1 trials completed, the highest-numbered one would have seen the other N as WAITING,
RUNNING or COMPLETE at its start and been pruned: contradiction. Failed trials (objective error,
dead worker) do not count, so workers keep going until N are COMPLETE. Optuna's
``MaxTrialsCallback`` stops a worker's ``optimize`` loop once COMPLETE + RUNNING trials reach N,
but it is checked only after a trial ends, so on its own two workers that both start the N-th
trial would both complete it: the surplus guard above is what makes N exact.

Crash safety: RDB storages fail trials whose heartbeat went stale (:mod:`tuning.storage`).
Journal files have no heartbeat in Optuna: there a worker fails RUNNING trials that started more
than ``grace_period`` seconds ago (when it starts, and while it waits for the last trials; set it
above the longest trial when several workers share a journal).
"""

from __future__ import annotations

import datetime as _dt
import logging
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import optuna

from fairltr.errors import ConfigError, FairltrError
from tuning.interrupts import InterruptGuard

__all__ = ["WorkerReport", "run_worker", "count_states", "fail_if_running", "trials_ahead"]

_log = logging.getLogger(__name__)


def count_states(study) -> dict[str, int]:
    """Number of trials per state name (COMPLETE, RUNNING, WAITING, FAIL, PRUNED)."""
    from collections import Counter

    return dict(Counter(t.state.name for t in study.get_trials(deepcopy=False)))


def fail_if_running(study, number: int | None) -> bool:
    """Mark this worker's trial ``number`` FAIL when it is still RUNNING (an interrupted trial
    must not wait for its heartbeat to go stale). Returns True when this call failed it."""
    from optuna.trial import TrialState

    if number is None:
        return False
    trials = study.get_trials(deepcopy=False)
    if number >= len(trials) or trials[number].state != TrialState.RUNNING:
        return False
    try:
        study.tell(number, state=TrialState.FAIL, skip_if_finished=True)
    except optuna.exceptions.UpdateFinishedTrialError:  # finished meanwhile by a stale-trial check
        return False
    return True


@dataclass
class WorkerReport:
    """What one worker did: trials it completed, failed, skipped as surplus; the final count."""

    completed: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    surplus: list[int] = field(default_factory=list)
    n_complete: int = 0
    seconds: float = 0.0


class _TrialFailed(Exception):
    """An objective error that fails one trial but not the sweep (data/config errors do stop it)."""


def _fail_old_running(study, storage, grace_period: float, max_retry: int) -> list[int]:
    """Journal storages: fail (and re-queue) RUNNING trials started more than ``grace_period`` ago,
    the way :func:`optuna.storages.fail_stale_trials` treats stale heartbeats on RDB storages."""
    from optuna.storages import RetryHeartbeatStaleTrialCallback
    from optuna.trial import TrialState

    now = _dt.datetime.now()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        retry = RetryHeartbeatStaleTrialCallback(max_retry=max_retry)
    study_id = storage.get_study_id_from_name(study.study_name)
    failed = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.RUNNING,)):
        if t.datetime_start is None or (now - t.datetime_start).total_seconds() <= grace_period:
            continue
        trial_id = storage.get_trial_id_from_study_id_trial_number(study_id, t.number)
        try:
            if not storage.set_trial_state_values(trial_id, TrialState.FAIL):
                continue
        except optuna.exceptions.UpdateFinishedTrialError:  # its worker, or another checker, finished it first
            continue
        retry(study, storage.get_trial(trial_id))
        failed.append(t.number)
    return failed


def trials_ahead(study, number: int) -> int:
    """Trials numbered below ``number`` that are WAITING, RUNNING or COMPLETE (they may all
    complete); trial ``number`` is surplus when this reaches ``n_trials``."""
    from optuna.trial import TrialState

    states = (TrialState.COMPLETE, TrialState.RUNNING, TrialState.WAITING)
    return sum(1 for t in study.get_trials(deepcopy=False, states=states) if t.number < number)


def run_worker(
    study,
    objective: Callable[[Any], Sequence[float]],
    n_trials: int,
    *,
    storage=None,
    grace_period: float = 30.0,
    max_retry: int = 2,
    poll_seconds: float = 1.0,
    max_consecutive_failures: int = 5,
    on_progress: Callable[[int, int], None] | None = None,
) -> WorkerReport:
    """Run trials until the study holds ``n_trials`` COMPLETE ones (shared with other workers).

    ``objective(trial) -> values`` is Optuna's objective; :class:`FairltrError` (bad data or
    configuration) stops the sweep, any other exception fails that trial only (after
    ``max_consecutive_failures`` in a row the worker gives up). Ctrl-C fails the running trial
    and re-raises: every finished trial is already stored.
    """
    if n_trials < 1:
        raise ConfigError(f"--trials must be >= 1, got {n_trials}")
    report = WorkerReport()
    t0 = time.perf_counter()
    current: dict[str, int | None] = {"number": None}
    guard = InterruptGuard()
    guarded = _guarded_objective(study, objective, n_trials, report, guard, current)

    def fail_stale() -> None:
        _fail_stale(study, storage, grace_period, max_retry)

    with guard:
        try:
            _worker_loop(study, guarded, n_trials, report, fail_stale, guard, poll_seconds,
                         max_consecutive_failures, on_progress)
        except BaseException:
            fail_if_running(study, current["number"])  # e.g. Ctrl-C: that trial is FAIL at once
            raise
    report.seconds = time.perf_counter() - t0
    return report


def _guarded_objective(study, objective, n_trials: int, report: WorkerReport, guard: InterruptGuard,
                       current: dict[str, int | None]) -> Callable[[Any], Sequence[float]]:
    """``objective`` behind the surplus guard (a trial with ``n_trials`` trials ahead of it ends
    PRUNED without training) and the interrupt guard (the objective runs interruptible unless it
    marks its own interruptible parts); an error that is not a :class:`FairltrError` fails that
    trial only. Records the running trial's number in ``current``."""

    def guarded(trial):
        current["number"] = trial.number
        guard.check()
        ahead = trials_ahead(study, trial.number)
        if ahead >= n_trials:
            report.surplus.append(trial.number)
            trial.set_user_attr("fairltr_surplus", True)
            raise optuna.TrialPruned(f"surplus trial: {ahead} earlier trials already fill --trials {n_trials}")
        try:
            if getattr(objective, "scopes_interrupts", False):  # it marks its interruptible parts
                return objective(trial)
            with guard.immediate():
                return objective(trial)
        except (FairltrError, KeyboardInterrupt, optuna.TrialPruned):
            raise
        except Exception as exc:  # one bad trial (e.g. a diverging fit) must not end the sweep
            trial.set_user_attr("fairltr_error", f"{type(exc).__name__}: {exc}"[:500])
            raise _TrialFailed(f"{type(exc).__name__}: {exc}") from exc

    return guarded


def _fail_stale(study, storage, grace_period: float, max_retry: int) -> None:
    """Fail (and re-queue) abandoned RUNNING trials: by age on journal storages, by stale
    heartbeat on RDB storages (a no-op for storages without either)."""
    from optuna.storages import JournalStorage

    if isinstance(storage, JournalStorage):  # no heartbeat: fail trials RUNNING for > grace_period
        stale = _fail_old_running(study, storage, grace_period, max_retry)
        if stale:
            _log.warning("failed abandoned RUNNING trials %s (no heartbeat in this storage; "
                         "running longer than %ss)", stale, grace_period)
        return
    with warnings.catch_warnings():  # RDB with heartbeat; a no-op for other storages
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)  # (Optuna also does this before each trial it runs)


def _worker_loop(study, guarded, n_trials, report, fail_stale, guard, poll_seconds,
                 max_consecutive_failures, on_progress) -> None:
    """Optimize until ``n_trials`` trials are COMPLETE; while others run the last trials, poll
    every ``poll_seconds`` (one of them may still fail) and fail stale trials. Interrupts raise
    only at the ``guard.check()`` safe points between Optuna calls."""
    from optuna.study import MaxTrialsCallback
    from optuna.trial import TrialState

    consecutive = 0
    surplus = {"seen": False}

    def progress() -> dict[str, int]:
        states = count_states(study)
        report.n_complete = states.get("COMPLETE", 0)
        if on_progress is not None:
            on_progress(report.n_complete, n_trials)
        return states

    def bookkeeping(st, ft) -> None:  # an optimize callback: ft is the trial that just ended
        nonlocal consecutive
        if ft.state == TrialState.COMPLETE:
            report.completed.append(ft.number)
            consecutive = 0
        elif ft.state == TrialState.FAIL:
            report.failed.append(ft.number)
            _log.warning("trial %d failed: %s", ft.number, ft.user_attrs.get("fairltr_error", "see the storage"))
            consecutive += 1
            if consecutive >= max_consecutive_failures:
                raise FairltrError(f"{consecutive} trials failed in a row; last error: "
                                   f"{ft.user_attrs.get('fairltr_error', 'see the log')}")
        elif ft.state == TrialState.PRUNED and ft.user_attrs.get("fairltr_surplus"):
            surplus["seen"] = True
            st.stop()  # wait in the loop below instead of asking for more surplus trials
        progress()
        guard.check()  # between trials: a recorded Ctrl-C ends the worker before the next trial starts

    # stop once COMPLETE + RUNNING fill the budget; WAITING (re-queued) trials are still taken
    enough = MaxTrialsCallback(n_trials, states=(TrialState.COMPLETE, TrialState.RUNNING))
    fail_stale()
    with guard.immediate():  # a read, and no trial of this worker is open yet: Ctrl-C during this
        progress()           # first (slowest: every stored trial) read of the study ends it at once
    while True:
        guard.check()
        states = progress()
        if report.n_complete >= n_trials:
            break
        if states.get("COMPLETE", 0) + states.get("RUNNING", 0) >= n_trials:
            time.sleep(poll_seconds)  # others are running the last trials; one may still fail
            guard.check()
            fail_stale()
            continue
        surplus["seen"] = False
        study.optimize(guarded, catch=(_TrialFailed,), gc_after_trial=False, show_progress_bar=False,
                       callbacks=[bookkeeping, enough])
        guard.check()
        if surplus["seen"]:
            time.sleep(poll_seconds)
            guard.check()
