"""Racing promotions from two hosts (slow): the rounds of ``test_promotion_race.py``, with the
racers of each round split between two network-namespace hosts and the MLflow tracking server
(SQLite backend) in a third, so the registry lock and the alias moves are contended over a real
network. Every round keeps the one-host guarantees: no crash, each alias move checked against the
champion it replaced, the champion's ndcg_at_10 never decreasing, the best eligible version
ending as champion."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from netns import start_mlflow_in, stop_group

pytestmark = pytest.mark.slow

HERE = Path(__file__).resolve().parent
ROUNDS = 2  # one round from an unset alias, one from a set champion (each ~75 s on a loaded 2-core machine)
HOST_SCRIPT = HERE / "promotion_race_host.py"


def test_racing_promotions_from_two_hosts(netns_cluster, tiny_rankings, tmp_path, monkeypatch):
    import mlflow

    if str(HERE) not in sys.path:
        sys.path.insert(0, str(HERE))
    import test_promotion_race as race

    cluster = netns_cluster(3)
    tracking, *racers = cluster.hosts
    server = start_mlflow_in(tracking, f"sqlite:///{tmp_path / 'mlflow.db'}", tmp_path / "mlflow")
    work = tmp_path / "race"
    work.mkdir()
    env = dict(os.environ, MLFLOW_DISABLE_TELEMETRY="true", OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    names = [f"host{i}" for i in range(len(racers))]
    hosts = [h.popen([sys.executable, str(HOST_SCRIPT), str(work), n], log=tmp_path / f"{n}.log", env=env)
             for h, n in zip(racers, names)]
    try:
        monkeypatch.setenv("MLFLOW_TRACKING_URI", server.uri)
        mlflow.set_tracking_uri(server.uri)
        models = race.make_race_models(server.uri, tiny_rankings)
        deadline = time.monotonic() + 240
        while not all((work / f"ready-{n}").exists() for n in names):
            assert time.monotonic() < deadline and all(p.poll() is None for p in hosts), "racing hosts did not start"
            time.sleep(0.1)

        def launch(r: int, jobs) -> dict[str, int]:
            """Deal the round's racers alternately to the hosts; all start on one signal each."""
            split = {n: jobs[i::len(names)] for i, n in enumerate(names)}
            for n, mine in split.items():
                tmp = work / f"round-{r}-{n}.tmp.json"
                tmp.write_text(json.dumps([[argv, e, out] for _, argv, e, out in mine]))
                tmp.rename(work / f"round-{r}-{n}.json")
            codes = {}
            for n, mine in split.items():
                done = work / f"round-{r}-{n}.done"
                end = time.monotonic() + 300
                while not done.exists():
                    assert time.monotonic() < end and all(p.poll() is None for p in hosts), f"host {n} round {r}"
                    time.sleep(0.05)
                codes.update({v: c for (v, _, _, _), c in zip(mine, json.loads(done.read_text()))})
            return codes

        started = time.monotonic()
        stats = [race._round(None, models, server.uri, r, work, launch=launch) for r in range(ROUNDS)]
        print(f"{ROUNDS} rounds from 2 hosts, {sum(s['racers'] for s in stats)} promotions, "
              f"{sum(s['moves'] for s in stats)} alias moves in {time.monotonic() - started:.0f} s")
    finally:
        (work / "stop").touch()
        for p in hosts:
            try:
                p.wait(timeout=10)
            except Exception:
                stop_group(p, grace=2)
        server.stop()
        from mlflow.tracking._tracking_service import utils as _tracking_utils

        _tracking_utils._tracking_uri = None  # back to "unset" for the next test (as mlflow_tracking does)
