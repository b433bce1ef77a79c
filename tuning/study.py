"""Optuna studies for Pareto sweeps: storages, samplers, create-or-resume, and the worker loop
that stops every cooperating worker at exactly ``n_trials`` COMPLETE trials.

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

Crash safety: every finished trial is written to the storage when it ends. RDB storages run a
heartbeat (``heartbeat_interval``); a RUNNING trial whose heartbeat is older than ``grace_period``
is failed by the next worker and re-queued with the same parameters by
:class:`optuna.storages.RetryHeartbeatStaleTrialCallback` (Optuna 5's name for the former
``RetryFailedTrialCallback``). Journal files have no heartbeat in Optuna:
there a worker fails RUNNING trials that started more than ``grace_period`` seconds ago (when it
starts, and while it waits for the last trials; set it above the longest trial when several
workers share a journal).
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import logging
import time
import warnings
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator, Mapping, Sequence

import optuna

from fairltr.errors import ConfigError, FairltrError

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

_log = logging.getLogger(__name__)

SAMPLERS = ("nsga2", "tpe", "gp")
CREATED_AT_ATTR = "fairltr_created_at"


def default_storage_url(out: str | Path | None = None) -> str:
    """``sqlite:///<out or cwd>/optuna.db`` (absolute path)."""
    base = Path(out) if out is not None else Path.cwd()
    base.mkdir(parents=True, exist_ok=True)
    return f"sqlite:///{(base / 'optuna.db').resolve()}"


def make_storage(url: str | None, *, out: str | Path | None = None, heartbeat_interval: int = 10,
                 grace_period: int = 30, max_retry: int = 2):
    """Optuna storage for ``url``: ``sqlite:///F``, ``postgresql://...`` (RDB with heartbeat and
    retry of stale trials) or ``journal:PATH`` (append-only journal file)."""
    from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback

    url = url or default_storage_url(out)
    if heartbeat_interval < 1 or grace_period <= heartbeat_interval:
        raise ConfigError(f"need heartbeat_interval >= 1 and grace_period > heartbeat_interval, "
                          f"got {heartbeat_interval} and {grace_period}")
    if url.startswith("journal:"):
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        path = Path(url[len("journal:"):]).expanduser()
        if not path.name:
            raise ConfigError(f"journal storage needs a file path: 'journal:PATH', got {url!r}")
        path.parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(str(path)))
    if "://" not in url:
        raise ConfigError(f"storage {url!r}: use sqlite:///FILE, postgresql://USER:PW@HOST/DB or journal:FILE")
    url = _postgres_driver(url)
    engine_kwargs: dict[str, Any] = {"connect_args": {"timeout": 60}} if url.startswith("sqlite") else {"pool_pre_ping": True}
    import sqlalchemy.exc

    from fairltr.tracking.config import redact_text, redact_uri

    try:
        with _schema_lock(url), warnings.catch_warnings():  # heartbeat + retry callback are experimental
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            storage = RDBStorage(url, engine_kwargs=engine_kwargs, heartbeat_interval=heartbeat_interval,
                                 grace_period=grace_period, skip_compatibility_check=True,
                                 heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback(max_retry=max_retry))
            current, head = storage.get_current_version(), storage.get_head_version()
    except (optuna.exceptions.StorageInternalError, sqlalchemy.exc.SQLAlchemyError, ImportError, ValueError) as exc:
        reason = redact_text(" ".join(str(exc).split("\n")[0].split()))[:300]
        raise ConfigError(f"cannot open Optuna storage {redact_uri(url)}: {reason}") from None
    if current != head:  # Optuna's own check, done here to tell the two cases apart without reading its message
        if current in storage.get_all_versions():
            raise ConfigError(f"Optuna storage {redact_uri(url)} has an older Optuna schema ({current}); upgrade it "
                              "with `optuna storage upgrade --storage URL`")
        raise ConfigError(f"cannot open Optuna storage {redact_uri(url)}: its alembic_version table holds another "
                          "schema (e.g. MLflow's tracking store in the same database); give Optuna a database of "
                          "its own")
    if url.startswith("sqlite"):
        _sqlite_wal(storage.engine)
    return storage


@contextmanager
def _schema_lock(url: str) -> Iterator[None]:
    """Serialise the first use of a storage, whose table creation is not safe under concurrency
    (N workers on a fresh database): a file lock beside a SQLite file, a PostgreSQL advisory lock
    (held by one connection for the block) on a server. Other backends: no lock."""
    if url.startswith("sqlite:///") and ":memory:" not in url:
        from fairltr.files import file_lock

        db = Path(url[len("sqlite:///"):])
        with file_lock(db.with_name(db.name + ".lock")):
            yield
        return
    if url.startswith("postgresql"):
        import sqlalchemy

        engine = sqlalchemy.create_engine(url, poolclass=sqlalchemy.pool.NullPool)
        try:
            with engine.connect() as conn:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:key)"), {"key": _PG_SCHEMA_LOCK})
                try:
                    yield
                finally:
                    conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:key)"), {"key": _PG_SCHEMA_LOCK})
        finally:
            engine.dispose()
        return
    yield


# a fixed key for pg_advisory_lock ("optuna" in ASCII; any constant shared by all workers works)
_PG_SCHEMA_LOCK = 0x6F70_7475_6E61


def _sqlite_wal(engine) -> None:
    """SQLite in WAL mode with ``synchronous=NORMAL``: a commit no longer waits for an fsync of
    the whole database (7 ms -> well under 1 ms here), readers and the writer do not block each
    other, and a killed process still loses no committed trial (only a power cut can drop the
    last commits). The mode is stored in the file; the pool is recycled so every connection
    gets the pragmas."""
    from sqlalchemy import event

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record) -> None:
        cur = dbapi_connection.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute("PRAGMA synchronous=NORMAL")
        cur.close()

    engine.dispose()


def _postgres_driver(url: str) -> str:
    """SQLAlchemy 2.1 maps ``postgresql://`` to the psycopg 3 driver; use psycopg2 (what fairltr
    installs) when psycopg 3 is absent: ``postgresql+psycopg2://``."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            try:
                import psycopg  # noqa: F401
                return "postgresql://" + url[len(prefix):]
            except ImportError:
                return "postgresql+psycopg2://" + url[len(prefix):]
    return url


def worker_seed(seed: int, first_trial: int) -> int:
    """Seed of a worker's sampler: a hash of (``seed``, the number of the worker's first trial)
    in [0, 2**32)."""
    digest = hashlib.blake2b(f"{int(seed)}:{int(first_trial)}".encode(), digest_size=4).digest()
    return int.from_bytes(digest, "little")


def _base_sampler(name: str, seed: int | None, population_size: int, n_startup_trials: int):

    if name == "nsga2":
        # SBX crossover (always, every gene) + polynomial mutation: children near good parents,
        # never an exact copy of one. Optuna's defaults (uniform crossover, mutation = random
        # resampling with probability 1/n_params) make NSGA-II a random search on the 1-2
        # continuous parameters these sweeps have.
        from optuna.samplers.nsgaii import PolynomialMutation, SBXCrossover

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            return optuna.samplers.NSGAIISampler(population_size=population_size, seed=seed, crossover_prob=1.0,
                                                 crossover=SBXCrossover(use_child_gene_prob=1.0),
                                                 mutation=PolynomialMutation())
    if name == "tpe":
        return optuna.samplers.TPESampler(seed=seed, n_startup_trials=n_startup_trials, multivariate=True)
    if name == "gp":
        return optuna.samplers.GPSampler(seed=seed, n_startup_trials=n_startup_trials)
    raise ConfigError(f"unknown sampler {name!r}; choose one of {list(SAMPLERS)}")


class WorkerSampler(optuna.samplers.BaseSampler):
    """One sampler (NSGA-II, TPE or GP) for a worker's whole life, created at the worker's first
    trial and seeded with :func:`worker_seed(seed, that trial's number) <worker_seed>`; every later
    trial of the worker uses the same instance (its random stream and caches, e.g. the GP
    sampler's fitted kernel, carry over).

    Why created lazily: Optuna numbers trials under a lock, so the first trial number is the only
    identity a worker gets that is unique among the workers of a study and the same for the same
    study state. One worker on a fresh study is therefore reproducible for a seed (first trial 0),
    while workers started with the same ``--seed`` never replay one random stream. Optuna's
    samplers take a seed only at construction, so this class holds the sampler until it can be
    built.
    """

    def __init__(self, name: str, seed: int, population_size: int = 10, n_startup_trials: int = 10) -> None:
        _base_sampler(name, 0, population_size, n_startup_trials)  # validates name and arguments
        self.name, self.seed = name, int(seed)
        self.population_size, self.n_startup_trials = population_size, n_startup_trials
        self.base: Any = None
        self.first_trial: int | None = None

    def _sampler(self, trial) -> Any:
        if self.base is None:
            self.first_trial = trial.number
            self.base = _base_sampler(self.name, worker_seed(self.seed, trial.number), self.population_size,
                                      self.n_startup_trials)
        return self.base

    # optuna.samplers.BaseSampler protocol (the base sampler exists once before_trial has run)
    def before_trial(self, study, trial) -> None:
        self._sampler(trial).before_trial(study, trial)

    def infer_relative_search_space(self, study, trial):
        return self._sampler(trial).infer_relative_search_space(study, trial)

    def sample_relative(self, study, trial, search_space):
        return self._sampler(trial).sample_relative(study, trial, search_space)

    def sample_independent(self, study, trial, param_name, param_distribution):
        return self._sampler(trial).sample_independent(study, trial, param_name, param_distribution)

    def after_trial(self, study, trial, state, values) -> None:
        self._sampler(trial).after_trial(study, trial, state, values)

    def reseed_rng(self) -> None:
        if self.base is not None:
            self.base.reseed_rng()


def make_sampler(name: str = "nsga2", seed: int = 0, *, n_trials: int = 50, population_size: int | None = None):
    """A worker's sampler by name (``nsga2`` default, ``tpe``, ``gp``): :class:`WorkerSampler`.

    NSGA-II's population defaults to ``clip(n_trials // 5, 4, 50)`` so that a 30-50 trial budget
    runs several generations (Optuna's default of 50 would keep the whole budget random).
    """
    if name not in SAMPLERS:
        raise ConfigError(f"unknown sampler {name!r}; choose one of {list(SAMPLERS)}")
    pop = population_size if population_size is not None else min(50, max(4, n_trials // 5))
    if pop < 2:
        raise ConfigError(f"population size must be >= 2, got {pop}")
    return WorkerSampler(name, seed, population_size=pop, n_startup_trials=min(10, max(2, n_trials // 3)))


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


def count_states(study) -> dict[str, int]:
    """Number of trials per state name (COMPLETE, RUNNING, WAITING, FAIL, PRUNED)."""
    from collections import Counter

    return dict(Counter(t.state.name for t in study.get_trials(deepcopy=False)))


class InterruptGuard:
    """Ctrl-C (SIGINT) during a sweep, made reliable. While a trial's objective runs (training),
    the handler raises ``KeyboardInterrupt`` at once: Optuna catches it there and marks the trial
    FAIL. Anywhere else in the worker loop (Optuna's own bookkeeping, whose clean-up code breaks on
    an exception at the wrong line) the interrupt is only recorded, and :meth:`check` raises it at
    the next safe point, a fraction of a second later. Outside the main thread it does nothing."""

    def __init__(self) -> None:
        self.interrupted = False
        self._immediate = False
        self._previous: Any = None

    def __enter__(self) -> "InterruptGuard":
        import signal
        import threading

        if threading.current_thread() is threading.main_thread():
            self._previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._handle)
            _ACTIVE_GUARDS.append(self)
        return self

    def __exit__(self, *exc) -> None:
        import signal

        if self._previous is not None:
            signal.signal(signal.SIGINT, self._previous)
            self._previous = None
        if self in _ACTIVE_GUARDS:
            _ACTIVE_GUARDS.remove(self)

    def _handle(self, signum, frame) -> None:
        self.interrupted = True
        if self._immediate:
            raise KeyboardInterrupt

    @contextmanager
    def immediate(self) -> Iterator[None]:
        """Inside this block an interrupt raises at once (and one that came before raises now)."""
        self.check()
        self._immediate = True
        try:
            yield
        finally:
            self._immediate = False

    def check(self) -> None:
        """Raise ``KeyboardInterrupt`` when an interrupt arrived."""
        if self.interrupted:
            raise KeyboardInterrupt


_ACTIVE_GUARDS: list[InterruptGuard] = []  # the guard of the worker running in the main thread


@contextmanager
def interruptible() -> Iterator[None]:
    """Inside a sweep worker, Ctrl-C raises at once in this block (training, evaluation); in the
    rest of an objective that uses it (Optuna and MLflow writes) the interrupt waits for the next
    safe point, a fraction of a second later, so no storage write is cut in half (a write cut
    in half can keep the database locked while the clean-up waits for it). Outside a worker it
    does nothing. An objective that uses it says so with ``objective.scopes_interrupts = True``;
    other objectives are interruptible as a whole."""
    if not _ACTIVE_GUARDS:
        yield
        return
    with _ACTIVE_GUARDS[-1].immediate():
        yield


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
    from optuna.storages import JournalStorage

    if n_trials < 1:
        raise ConfigError(f"--trials must be >= 1, got {n_trials}")
    report = WorkerReport()
    t0 = time.perf_counter()
    current: dict[str, int | None] = {"number": None}
    guard = InterruptGuard()

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

    def fail_stale() -> None:
        if isinstance(storage, JournalStorage):  # no heartbeat: fail trials RUNNING for > grace_period
            stale = _fail_old_running(study, storage, grace_period, max_retry)
            if stale:
                _log.warning("failed abandoned RUNNING trials %s (no heartbeat in this storage; "
                             "running longer than %ss)", stale, grace_period)
            return
        with warnings.catch_warnings():  # RDB with heartbeat; a no-op for other storages
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)  # (Optuna also does this before each trial it runs)

    with guard:
        try:
            _worker_loop(study, guarded, n_trials, report, fail_stale, guard, poll_seconds,
                         max_consecutive_failures, on_progress)
        except BaseException:
            fail_if_running(study, current["number"])  # e.g. Ctrl-C: that trial is FAIL at once
            raise
    report.seconds = time.perf_counter() - t0
    return report


def _worker_loop(study, guarded, n_trials, report, fail_stale, guard, poll_seconds,
                 max_consecutive_failures, on_progress) -> None:
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
