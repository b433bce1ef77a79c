"""Studies: exactly N COMPLETE trials with racing workers, one seeded sampler per worker, resume,
storages."""

from __future__ import annotations

import threading
import time

import optuna
import pytest
from optuna.trial import TrialState

from fairltr.errors import ConfigError, FairltrError
from tuning.space import loss_space
from tuning.study import (
    WorkerSampler,
    count_states,
    make_sampler,
    make_storage,
    open_study,
    run_worker,
    trials_ahead,
    worker_seed,
)

optuna.logging.set_verbosity(optuna.logging.WARNING)
# these tests drive trials with study.ask() (other workers' trials) on heartbeat storages on purpose
pytestmark = pytest.mark.filterwarnings("ignore:Heartbeat of storage is supposed to be used:UserWarning")
DIRS = ["maximize", "minimize"]
SPACE = loss_space("exposure_hinge")


def toy_objective(delay: float = 0.0):
    def objective(trial):
        g = SPACE.suggest(trial)["gamma"]
        if delay:
            time.sleep(delay)
        x = 0.0 if g == 0 else 1.0 / (1.0 + g / 1e4)
        return [x, x * x]
    return objective


def _worker(url, name, n, seed, results, delay):
    storage = make_storage(url, heartbeat_interval=1, grace_period=3)
    study, _ = open_study(name, storage, DIRS, make_sampler("nsga2", seed, n_trials=n), {"method": "toy"})
    results.append(run_worker(study, toy_objective(delay), n, storage=storage, poll_seconds=0.05))


@pytest.mark.parametrize("backend", ["sqlite", "journal"])
def test_racing_workers_stop_at_exactly_n(tmp_path, backend):
    url = f"sqlite:///{tmp_path / 'o.db'}" if backend == "sqlite" else f"journal:{tmp_path / 'o.log'}"
    make_storage(url)  # create tables once before the race
    n, results = 9, []
    threads = [threading.Thread(target=_worker, args=(url, "race", n, 0, results, 0.05)) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert len(results) == 3
    study = optuna.load_study(study_name="race", storage=make_storage(url))
    states = count_states(study)
    assert states.get("COMPLETE") == n
    assert states.get("RUNNING", 0) == 0 and states.get("WAITING", 0) == 0
    assert sorted(sum((r.completed for r in results), [])) == sorted(
        t.number for t in study.get_trials(states=(TrialState.COMPLETE,)))
    # the same --seed on every worker, yet no repeated proposals (each worker's sampler is seeded
    # from its first trial's number)
    coords = [t.params["gamma"] for t in study.get_trials(states=(TrialState.COMPLETE,))]
    assert len(set(coords)) == len(coords)


def test_surplus_trial_is_pruned_not_counted(tmp_path):
    """A trial started while N earlier trials are RUNNING/WAITING/COMPLETE does no work."""
    storage = make_storage(f"sqlite:///{tmp_path / 'o.db'}")
    study, _ = open_study("s", storage, DIRS, make_sampler("tpe", 0, n_trials=3), {})
    ahead = [study.ask() for _ in range(2)]  # two trials "running elsewhere"
    study.enqueue_trial({"gamma": 1e3})  # and one waiting: 3 ahead of the next trial
    calls = []
    obj = toy_objective()

    def counting(trial):
        calls.append(trial.number)
        return obj(trial)

    # finish the other workers' trials shortly after our worker starts waiting
    def finish():
        time.sleep(0.5)
        for t in ahead:
            study.tell(t, [0.5, 0.25])
    threading.Thread(target=finish).start()
    rep = run_worker(study, counting, 3, storage=storage, poll_seconds=0.05)
    assert count_states(study)["COMPLETE"] == 3
    assert calls == [2]  # only the enqueued trial ran here; nothing beyond N
    assert rep.surplus == []


def test_guard_counts_waiting_running_complete_but_not_failed(tmp_path):
    storage = make_storage(f"sqlite:///{tmp_path / 'o.db'}")
    study, _ = open_study("g", storage, DIRS, None, {})
    t0, t1, t2 = study.ask(), study.ask(), study.ask()  # three workers started at once, N = 2
    study.tell(t0, [0.5, 0.2])
    assert trials_ahead(study, t1.number) == 1  # t1 may run
    assert trials_ahead(study, t2.number) == 2  # t2 is surplus: t0 done, t1 running
    study.tell(t1, state=TrialState.FAIL)  # t1's worker crashed: t2 is needed after all
    assert trials_ahead(study, t2.number) == 1
    study.enqueue_trial({"gamma": 1e3})  # a retry waits: it counts for later trials
    assert trials_ahead(study, 10) == 3  # t0 COMPLETE, t2 RUNNING, the retry WAITING


def test_one_worker_is_reproducible_for_a_seed():
    def proposals(seed):
        st = optuna.create_study(directions=DIRS, sampler=make_sampler("nsga2", seed, n_trials=20))
        st.optimize(toy_objective(), n_trials=12)
        return [t.params["gamma"] for t in st.trials]

    a, b, c = proposals(3), proposals(3), proposals(4)
    assert a == b and a != c
    assert worker_seed(3, 0) != worker_seed(3, 1) != worker_seed(4, 1)
    assert worker_seed(3, 0) == worker_seed(3, 0) and 0 <= worker_seed(3, 0) < 2 ** 32


@pytest.mark.parametrize("name", ["nsga2", "tpe", "gp"])
def test_one_sampler_lives_for_the_whole_worker(name):
    """The base sampler is built once, at the worker's first trial, and serves every later one
    (its random stream and caches carry over), seeded from that first trial's number."""
    sampler = make_sampler(name, 5, n_trials=8)
    st = optuna.create_study(directions=DIRS, sampler=sampler)
    assert sampler.base is None
    st.optimize(toy_objective(), n_trials=1)
    base = sampler.base
    assert base is not None and sampler.first_trial == 0
    st.optimize(toy_objective(), n_trials=7)
    assert sampler.base is base
    assert len(st.best_trials) >= 1


def test_workers_sharing_a_study_do_not_replay_one_stream():
    """Two workers with the same --seed join one study one after the other, both inside NSGA-II's
    random first generation: the second one's first trial has another number, so its sampler has
    another seed and proposes other points."""
    storage = optuna.storages.InMemoryStorage()
    w1 = make_sampler("nsga2", 0, population_size=10)
    s1, _ = open_study("shared", storage, DIRS, w1, {})
    s1.optimize(toy_objective(), n_trials=3)
    w2 = make_sampler("nsga2", 0, population_size=10)
    s2, created = open_study("shared", storage, DIRS, w2, {})
    s2.optimize(toy_objective(), n_trials=3)
    assert not created and (w1.first_trial, w2.first_trial) == (0, 3)
    g = [t.params["gamma"] for t in s2.trials]
    assert len(set(g)) == 6
    # what the second worker would have proposed with the first one's seed: the first one's points
    alone = optuna.create_study(directions=DIRS, sampler=make_sampler("nsga2", 0, population_size=10))
    alone.optimize(toy_objective(), n_trials=3)
    assert [t.params["gamma"] for t in alone.trials] == g[:3]


def test_open_study_refuses_a_changed_configuration(tmp_path):
    storage = make_storage(f"sqlite:///{tmp_path / 'o.db'}")
    s1, created1 = open_study("c", storage, DIRS, None, {"method": "deltr", "objectives": ["a", "b"]})
    s2, created2 = open_study("c", storage, DIRS, None, {"method": "deltr", "objectives": ["a", "b"]})
    assert created1 and not created2 and s2.user_attrs["method"] == "deltr"
    with pytest.raises(ConfigError, match="method: stored 'deltr', now 'fair-post'"):
        open_study("c", storage, DIRS, None, {"method": "fair-post"})
    with pytest.raises(ConfigError, match="directions"):
        open_study("c", storage, ["minimize", "minimize"], None, {})


def test_storage_errors(tmp_path):
    with pytest.raises(ConfigError, match="sqlite:///FILE"):
        make_storage("just-a-name")
    with pytest.raises(ConfigError, match="grace_period"):
        make_storage(f"sqlite:///{tmp_path / 'x.db'}", heartbeat_interval=10, grace_period=5)
    with pytest.raises(ConfigError, match="sampler"):
        make_sampler("cmaes")
    assert isinstance(make_sampler("gp"), WorkerSampler)


def test_failing_trials_do_not_count_and_config_errors_stop(tmp_path):
    storage = make_storage(f"sqlite:///{tmp_path / 'o.db'}")
    study, _ = open_study("f", storage, DIRS, make_sampler("nsga2", 0, n_trials=4), {})
    obj = toy_objective()

    def flaky(trial):
        if trial.number % 3 == 1:
            raise FloatingPointError("diverged")
        return obj(trial)

    rep = run_worker(study, flaky, 4, storage=storage, poll_seconds=0.01)
    assert count_states(study)["COMPLETE"] == 4 and len(rep.failed) >= 1
    failed = study.get_trials(states=(TrialState.FAIL,))
    assert "diverged" in failed[0].user_attrs["fairltr_error"]

    def always(trial):
        raise RuntimeError("broken")
    with pytest.raises(FairltrError, match="5 trials failed in a row.*broken"):
        run_worker(study, always, 10, storage=storage, poll_seconds=0.01)

    def config(trial):
        raise ConfigError("bad column")
    with pytest.raises(ConfigError, match="bad column"):
        run_worker(study, config, 10, storage=storage, poll_seconds=0.01)


def test_journal_storage_fails_and_retries_abandoned_trials(tmp_path):
    """No heartbeat in journal files: a trial RUNNING longer than grace_period is failed and its
    parameters re-queued, even when it blocks the last slot of the budget."""
    storage = make_storage(f"journal:{tmp_path / 'j.log'}")
    study, _ = open_study("j", storage, DIRS, make_sampler("nsga2", 0, n_trials=3), {})
    abandoned = study.ask()  # a worker that died mid-trial
    abandoned.suggest_float("gamma", *SPACE.params[0].bounds, log=True)
    study.tell(study.ask(), [0.1, 0.01])
    study.tell(study.ask(), [0.2, 0.04])
    t0 = time.monotonic()
    run_worker(study, toy_objective(), 3, storage=storage, grace_period=1.0, poll_seconds=0.05)
    trials = study.get_trials()
    assert time.monotonic() - t0 >= 0.5  # it had to wait for the grace period
    assert trials[abandoned.number].state == TrialState.FAIL
    assert count_states(study)["COMPLETE"] == 3
    retried = [t for t in trials if t.state == TrialState.COMPLETE and t.number > abandoned.number + 2]
    assert [t.params for t in retried] == [trials[abandoned.number].params]


def test_interrupts_wait_outside_interruptible_sections():
    # a sweep objective marks training interruptible; Ctrl-C during its storage / MLflow writes
    # waits for the next safe point, so no write is cut in half
    import os
    import signal
    import time as _time

    from tuning.study import InterruptGuard, interruptible

    with interruptible():  # outside a worker it does nothing
        pass
    with InterruptGuard() as guard:
        os.kill(os.getpid(), signal.SIGINT)  # "during a storage write": recorded, not raised
        _time.sleep(0.05)
        assert guard.interrupted
        with pytest.raises(KeyboardInterrupt):
            with interruptible():  # the next interruptible section raises at once
                pytest.fail("not reached")
    with InterruptGuard() as guard, pytest.raises(KeyboardInterrupt):
        with interruptible():
            os.kill(os.getpid(), signal.SIGINT)  # during training: raised at once
            _time.sleep(5)
    assert guard.interrupted


def test_sweep_objectives_scope_their_interrupts():
    from tuning.sweep import make_objective

    from types import SimpleNamespace

    runner = SimpleNamespace(space=loss_space("exposure_hinge"))
    assert make_objective(runner, [], []).scopes_interrupts is True
