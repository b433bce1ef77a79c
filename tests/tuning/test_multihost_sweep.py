"""Sweep workers on several hosts over a real network (slow): PostgreSQL (a private instance) in
one network namespace, an MLflow tracking server in another, three worker hosts running
``fairltr sweep`` on one study. One worker host is killed (every process SIGKILLed, nothing
cleans up) while it trains a trial: the trial is failed by the Optuna heartbeat, re-run with its
parameters by another host, and the study ends with exactly N COMPLETE trials, one parent run
and one nested run per COMPLETE trial.

The kill is deterministic: the victim completes one trial, then holds its next one (parameters
stored, training blocked: ``_slow_worker.py``'s ``SWEEP_TEST_HOLD``) and says which; the other
hosts wait for that before their second trial (``SWEEP_TEST_WAIT``), so the victim always gets
its trial and the SIGKILL always lands mid-training. Promotions racing from two hosts against the
server are ``tests/fairltr/tracking/model_registry/test_promotion_race_hosts.py``."""

from __future__ import annotations

import os
import sys
import time
import uuid
import warnings
from pathlib import Path

import optuna
import pytest
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.trial import TrialState

from netns import start_mlflow_in, start_postgres, stop_group

pytestmark = pytest.mark.slow

HELPER = Path(__file__).with_name("_slow_worker.py")
N_TRIALS = 9
DELAY = 1.5  # seconds added to every trial (the held trial is held regardless)


def sweep_argv(files, out: Path, storage: str, study: str, uri: str, experiment: str) -> list[str]:
    return [sys.executable, str(HELPER), str(DELAY), "sweep", "--method", "deltr", "--train", str(files[0]),
            "--test", str(files[1]), "--out", str(out), "--study", study, "--trials", str(N_TRIALS),
            "--storage", storage, "--tracking-uri", uri, "--experiment", experiment,
            "--heartbeat-interval", "1", "--grace-period", "3", "--max-iter", "30", "--no-progress"]


def worker_env(**extra: str) -> dict:
    env = dict(os.environ, PYTHONUNBUFFERED="1", MLFLOW_DISABLE_TELEMETRY="true", OMP_NUM_THREADS="1", **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("MLFLOW_TRACKING_URI", None)
    return env


def worker_pid(trial) -> str:
    """The pid of the worker that completed ``trial`` (its ``worker`` attribute is ``host:pid``)."""
    return trial.user_attrs.get("worker", "").rsplit(":", 1)[-1]


def nested_trials(client, parent: str) -> list[int]:
    exp = client.get_run(parent).info.experiment_id
    runs = client.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    return sorted(int(r.data.tags["fairltr.sweep.trial"]) for r in runs)


def test_three_worker_hosts_lose_one_and_lose_no_trial(netns_cluster, ranking_files, tmp_path):
    from mlflow import MlflowClient
    from mlflow.entities import ViewType

    from tuning.study import make_storage
    from fairltr.tracking import PARENT_ATTR

    cluster = netns_cluster(5)
    db_host, tracking, *workers = cluster.hosts
    pg = start_postgres(db_host)
    server = None
    procs: list = []
    try:
        storage_uri = pg.create_database("optuna")
        server = start_mlflow_in(tracking, f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "mlflow")
        study_name, experiment = f"hosts-{uuid.uuid4().hex[:6]}", f"multihost-{uuid.uuid4().hex[:6]}"
        argv = sweep_argv(ranking_files, tmp_path / "out", storage_uri, study_name, server.uri, experiment)
        go, ready = tmp_path / "go", [tmp_path / f"ready{i}" for i in range(len(workers))]
        hold = tmp_path / "hold"  # the victim writes the number of the trial it holds here
        logs = [tmp_path / f"w{i}.log" for i in range(len(workers))]
        # the victim completes one trial, then holds the next one until it is killed; the other hosts
        # train their first trial freely and wait for the hold before any later one, so the victim
        # always gets its two trials (2 + 2 < 9: the study cannot end first) and the kill always
        # lands in the middle of the held trial's training
        roles = [dict(SWEEP_TEST_WAIT=str(hold))] * (len(workers) - 1) + [
            dict(SWEEP_TEST_HOLD=str(hold), SWEEP_TEST_HOLD_AFTER="1")]
        procs = [h.popen(argv, log=logs[i], env=worker_env(SWEEP_TEST_READY=str(ready[i]), SWEEP_TEST_GO=str(go),
                                                          **roles[i]))
                 for i, h in enumerate(workers)]
        deadline = time.monotonic() + 240
        while not all(r.exists() for r in ready):  # every host imported: release them together
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "workers did not start"
            time.sleep(0.1)
        go.touch()
        t_go = time.monotonic()

        # wait until the last host holds a trial, then kill every process of that host
        victim = workers[-1]
        deadline = time.monotonic() + 240
        while not hold.exists():
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
                "\n---\n".join(log.read_text() for log in logs)
            time.sleep(0.1)
        killed = int(hold.read_text())
        t_hold = time.monotonic()
        storage = make_storage(storage_uri)
        before = optuna.load_study(study_name=study_name, storage=storage).get_trials()
        victim_pids = {str(pid) for pid in victim.pids()}
        assert before[killed].state == TrialState.RUNNING and before[killed].params  # suggested, stored, training
        victim_done = [t.number for t in before if t.state == TrialState.COMPLETE
                       and worker_pid(t) in victim_pids]
        assert len(victim_done) == 1, victim_done  # the victim completed one trial before the one it holds
        victim.kill()
        t_kill, wall_kill = time.monotonic(), time.time()

        # the other hosts finish the study
        for p in procs[:-1]:
            p.wait(timeout=240)
        t_end = time.monotonic()
        texts = [log.read_text() for log in logs]
        assert [p.returncode for p in procs[:-1]] == [0, 0], "\n---\n".join(texts)
        assert procs[-1].wait(timeout=10) == -9  # the killed host's worker died of SIGKILL
        assert f"holding trial {killed} until killed" in texts[-1]

        study = optuna.load_study(study_name=study_name, storage=make_storage(storage_uri))
        trials = study.get_trials()
        complete = [t for t in trials if t.state == TrialState.COMPLETE]
        assert len(complete) == N_TRIALS  # exactly N
        assert not [t for t in trials if t.state in (TrialState.RUNNING, TrialState.WAITING)]
        assert trials[killed].state == TrialState.FAIL  # failed by heartbeat ...
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            retried = [t for t in trials if RetryHeartbeatStaleTrialCallback.retried_trial_number(t) == killed]
        assert len(retried) == 1 and retried[0].state == TrialState.COMPLETE  # ... and re-run with its params
        assert retried[0].params == trials[killed].params
        assert worker_pid(retried[0]) not in victim_pids  # by another host
        hosts_done = {t.user_attrs["worker"] for t in complete}
        assert len(hosts_done) == len(workers), hosts_done  # every host completed trials (the victim before)
        assert [t.number for t in trials if t.state == TrialState.FAIL] == [killed]  # nothing else failed

        client = MlflowClient(server.uri)
        parent = study.user_attrs[PARENT_ATTR]
        exp = client.get_experiment_by_name(experiment)
        parents = client.search_runs([exp.experiment_id], filter_string="tags.`fairltr.sweep.role` = 'study'")
        assert [r.info.run_id for r in parents] == [parent]  # one parent run
        assert client.get_run(parent).info.status == "FINISHED"  # ended by the hosts that finished the study
        assert nested_trials(client, parent) == sorted(t.number for t in complete)
        # the killed trial has no nested run at all, not even a deleted one: a trial's nested run is
        # created after its training, and the victim died during it
        every_run = client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL, max_results=1000)
        assert not [r for r in every_run if r.data.tags.get("fairltr.sweep.trial") == str(killed)]
        assert not [r.info.run_id for r in every_run if r.info.status == "RUNNING"]  # none left RUNNING
        recovered = retried[0].datetime_complete.timestamp() - wall_kill
        failed_after = trials[killed].datetime_complete.timestamp() - wall_kill
        assert 0 < failed_after < recovered  # failed after the kill (it was training until then), re-run after
        print(f"{N_TRIALS} trials on {len(workers)} hosts in {t_end - t_go:.1f} s "
              f"({N_TRIALS / (t_end - t_go) * 60:.1f} trials/min, one host lost); trial {killed} held "
              f"{t_hold - t_go:.1f} s after the start, killed {t_kill - t_hold:.1f} s later; it failed "
              f"{failed_after:.1f} s after the kill, re-run as {retried[0].number}, COMPLETE {recovered:.1f} s after the kill")
    finally:
        for p in procs:
            stop_group(p, grace=2)
        if server is not None:
            server.stop()
        pg.stop()
