"""Sweep workers on several hosts over a real network (slow): PostgreSQL (a private instance) in
one network namespace, an MLflow tracking server in another, three worker hosts running
``fairltr sweep`` on one study. One worker host is killed (every process SIGKILLed, nothing
cleans up) while it runs a trial: the trial is failed by the Optuna heartbeat, re-run with its
parameters by another host, and the study ends with exactly N COMPLETE trials, one parent run
and one nested run per COMPLETE trial. Then promotions race from two hosts against the server
with the guarantees they have on one host."""

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
DELAY = 1.5  # seconds added to every trial: the kill lands mid-trial


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


def nested_trials(client, parent: str) -> list[int]:
    exp = client.get_run(parent).info.experiment_id
    runs = client.search_runs([exp], filter_string=f"tags.mlflow.parentRunId = '{parent}'")
    return sorted(int(r.data.tags["fairltr.sweep.trial"]) for r in runs)


def test_three_worker_hosts_lose_one_and_lose_no_trial(netns_cluster, ranking_files, tmp_path):
    from mlflow import MlflowClient

    from tuning.study import make_storage
    from tuning.tracking import PARENT_ATTR

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
        logs = [tmp_path / f"w{i}.log" for i in range(len(workers))]
        procs = [h.popen(argv, log=logs[i], env=worker_env(SWEEP_TEST_READY=str(ready[i]), SWEEP_TEST_GO=str(go)))
                 for i, h in enumerate(workers)]
        deadline = time.monotonic() + 240
        while not all(r.exists() for r in ready):  # every host imported: release them together
            assert time.monotonic() < deadline and all(p.poll() is None for p in procs), "workers did not start"
            time.sleep(0.1)
        go.touch()
        t_go = time.monotonic()

        # kill the last host while it runs a trial, after every host has completed one
        victim = workers[-1]
        storage = make_storage(storage_uri)
        killed = None
        deadline = time.monotonic() + 240
        while killed is None:
            assert time.monotonic() < deadline, "\n---\n".join(log.read_text() for log in logs)
            time.sleep(0.2)
            try:
                trials = optuna.load_study(study_name=study_name, storage=storage).get_trials()
            except KeyError:
                continue
            done_by = {t.user_attrs.get("worker", "").rsplit(":", 1)[-1] for t in trials if t.state == TrialState.COMPLETE}
            pids = {str(p) for p in victim.pids()}
            running = [t for t in trials if t.state == TrialState.RUNNING
                       and t.user_attrs.get("worker", "").rsplit(":", 1)[-1] in pids]
            if pids & done_by and len({w for w in done_by}) >= len(workers) and running:
                victim.kill()
                t_kill, wall_kill = time.monotonic(), time.time()
                killed = running[0].number
        # the other hosts finish the study
        for p in procs[:-1]:
            p.wait(timeout=240)
        t_end = time.monotonic()
        texts = [log.read_text() for log in logs]
        assert [p.returncode for p in procs[:-1]] == [0, 0], "\n---\n".join(texts)
        assert procs[-1].wait(timeout=10) == -9  # the killed host's worker died of SIGKILL

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
        hosts_done = {t.user_attrs["worker"] for t in complete}
        assert len(hosts_done) >= len(workers), hosts_done  # every host completed trials (the victim before)
        client = MlflowClient(server.uri)
        parent = study.user_attrs[PARENT_ATTR]
        exp = client.get_experiment_by_name(experiment)
        parents = client.search_runs([exp.experiment_id], filter_string="tags.`fairltr.sweep.role` = 'study'")
        assert [r.info.run_id for r in parents] == [parent]  # one parent run
        assert nested_trials(client, parent) == sorted(t.number for t in complete)
        recovered = retried[0].datetime_complete.timestamp() - wall_kill
        failed_after = trials[killed].datetime_complete.timestamp() - wall_kill
        print(f"{N_TRIALS} trials on {len(workers)} hosts in {t_end - t_go:.1f} s "
              f"({N_TRIALS / (t_end - t_go) * 60:.1f} trials/min, one host lost); killed trial {killed} "
              f"failed {failed_after:.1f} s after the kill, re-run as {retried[0].number}, COMPLETE {recovered:.1f} s after the kill")
    finally:
        for p in procs:
            stop_group(p, grace=2)
        if server is not None:
            server.stop()
        pg.stop()
