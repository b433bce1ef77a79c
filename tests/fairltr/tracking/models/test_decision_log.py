"""The decision log's two stores: records round trip, crash safety (a writer SIGKILLed mid-write
leaves nothing that breaks reading), several writer processes at once, unusable logs refused."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from fairltr.errors import ConfigError, DataError
from fairltr.fair.policy import parse_policy
from fairltr.tracking.models.decision_log import (COLUMNS, ENV_VAR, DecisionContext, check_recordable_uri,
                                                  decision_records, open_decision_log, read_decision_log,
                                                  resolve_decision_log)

CTX = DecisionContext(model_name="ranker", model_version="3", model_digest="sha256:" + "ab" * 32, query="qid",
                      item="doc", groups=("race", "sex"))
POLICY = parse_policy("fair:p=0.4,alpha=0.05,k=5")


def _request(seed: int, n: int = 7) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    frame = pd.DataFrame({"qid": rng.integers(1, 4, n), "doc": [f"d{seed}-{i}" for i in range(n)],
                          "race": rng.choice(["a", "b"], n), "sex": rng.integers(0, 2, n), "x": rng.random(n)})
    served = pd.DataFrame({"score": rng.random(n), "rank": rng.permutation(n) + 1, "fair_feasible": rng.random(n) > 0.3})
    return frame, served


def _expected(frame: pd.DataFrame, served: pd.DataFrame, request_id: str, t: pd.Timestamp) -> list[dict]:
    """The records of one request, built row by row (independent of decision_records)."""
    out = []
    for i in range(len(frame)):
        out.append({"request_id": request_id, "time": t, "model_name": "ranker", "model_version": "3",
                    "model_digest": CTX.model_digest, "policy": "fair:p=0.4,alpha=0.05,adjust=true,k=5",
                    "policy_method": "fair", "policy_p": 0.4, "policy_alpha": 0.05, "policy_adjust": True, "policy_k": 5,
                    "query_id": str(int(frame["qid"].iloc[i])), "item_id": frame["doc"].iloc[i], "row": i,
                    "score": float(served["score"].iloc[i]), "rank": int(served["rank"].iloc[i]),
                    "fair_feasible": bool(served["fair_feasible"].iloc[i]),
                    "race": frame["race"].iloc[i], "sex": int(frame["sex"].iloc[i])})
    return out


def _compare(got: pd.DataFrame, want: list[dict]) -> None:
    want_df = pd.DataFrame(want).sort_values(["time", "request_id", "row"]).reset_index(drop=True)
    assert list(got.columns) == [*COLUMNS, "race", "sex"]
    assert len(got) == len(want_df)
    for col in want_df.columns:
        if col == "time":
            assert (pd.DatetimeIndex(got[col]) == pd.DatetimeIndex(want_df[col]).as_unit("us")).all()
        elif col in ("score", "policy_p", "policy_alpha"):
            np.testing.assert_allclose(got[col].to_numpy(float), want_df[col].to_numpy(float), rtol=0, atol=0)
        else:
            assert got[col].tolist() == want_df[col].tolist(), col
    assert got["policy_target"].isna().all()
    assert [json.loads(g) for g in got["groups"]] == [{"race": r, "sex": s} for r, s in zip(want_df["race"], want_df["sex"])]


def _append_requests(log, seeds) -> list[dict]:
    want = []
    for seed in seeds:
        frame, served = _request(seed)
        t = pd.Timestamp("2026-03-01 12:00", tz="UTC") + pd.Timedelta(seconds=seed)
        log.append(decision_records(frame, served, POLICY, CTX, f"req{seed:04d}", t))
        want += _expected(frame, served, f"req{seed:04d}", t)
    return want


def test_parquet_records_round_trip(tmp_path):
    log = open_decision_log(str(tmp_path / "log"))
    want = _append_requests(log, range(5))
    got = read_decision_log(str(tmp_path / "log"))
    _compare(got, want)
    shards = sorted((tmp_path / "log").rglob("*.parquet"))
    assert len(shards) == 5 and all(p.parent.name == "date=2026-03-01" for p in shards)
    assert got.attrs["incomplete_shards"] == []
    # only the named group columns when asked
    assert list(read_decision_log(str(tmp_path / "log"), groups=["race"]).columns)[-1] == "race"


def test_unfinished_shards_are_skipped_and_reported(tmp_path, capsys):
    root = tmp_path / "log"
    log = open_decision_log(str(root))
    want = _append_requests(log, range(3))
    shard = next(root.rglob("*.parquet"))
    data = shard.read_bytes()
    for cut in (0, len(data) // 2, len(data) - 8):  # what a writer killed mid-write leaves: a hidden temp file
        (shard.parent / f".{cut:08x}.tmp.{shard.name}").write_bytes(data[:cut])
    got = read_decision_log(str(root))
    _compare(got, want)
    assert len(got.attrs["incomplete_shards"]) == 3
    assert "skipped 3 unfinished shard(s)" in capsys.readouterr().err
    # a visible shard that does not read is named, never silently dropped (it was fsynced complete)
    shard.write_bytes(data[: len(data) // 2])
    with pytest.raises(DataError, match=shard.name):
        read_decision_log(str(root))


_KILL_WRITER = """
import sys, pandas as pd
sys.path.insert(0, {tests!r})
from test_decision_log import CTX, POLICY, _request
from fairltr.tracking.models.decision_log import decision_records, open_decision_log
log = open_decision_log({root!r})
i = 0
while True:
    frame, served = _request(i, n=400)
    log.append(decision_records(frame, served, POLICY, CTX, f"{attempt}-{{i:06d}}", pd.Timestamp.now(tz="UTC")))
    print(f"{attempt}-{{i:06d}}", flush=True)
    i += 1
"""


def test_a_writer_killed_mid_write_loses_at_most_its_request_in_flight(tmp_path):
    """SIGKILL a process appending large requests as fast as it can, several times: every request it
    acknowledged (printed after append returned) is complete in the log, what it had in flight is
    either complete or absent, and reading never fails."""
    root = tmp_path / "log"
    acknowledged: set[str] = set()
    for attempt in range(3):
        script = _KILL_WRITER.format(tests=str(Path(__file__).parent), root=str(root), attempt=attempt)
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True,
                                start_new_session=True)
        lines = []
        deadline = time.monotonic() + 120
        while len(lines) < 5 + 3 * attempt and time.monotonic() < deadline:
            lines.append(proc.stdout.readline().strip())
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        acknowledged |= {x for x in lines if x}
    got = read_decision_log(str(root))
    sizes = got.groupby("request_id").size()
    assert set(acknowledged) <= set(sizes.index)  # nothing acknowledged is lost
    assert (sizes == 400).all()  # no request is half there
    # at most the one request in flight per kill beyond the acknowledged ones
    assert len(set(sizes.index) - acknowledged) <= 3


def _worker(root: str, worker: int, n: int) -> None:
    log = open_decision_log(root)
    for i in range(n):
        frame, served = _request(1000 * worker + i, n=5)
        log.append(decision_records(frame, served, POLICY, CTX, f"w{worker}-{i}", pd.Timestamp.now(tz="UTC")))


def test_several_processes_append_at_once_without_collisions(tmp_path):
    root = str(tmp_path / "log")
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(root, w, 25)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    got = read_decision_log(root)
    assert got.groupby("request_id").size().to_dict() == {f"w{w}-{i}": 5 for w in range(4) for i in range(25)}
    assert len(list(Path(root).rglob("*.parquet"))) == 100


def test_unusable_logs_are_refused_in_one_line(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(ConfigError, match="cannot be written") as err:
        open_decision_log(str(blocker / "log"))
    assert "\n" not in str(err.value)
    with pytest.raises(ConfigError, match="may not hold a password"):
        check_recordable_uri("postgresql://u:secret@h/db")
    with pytest.raises(ConfigError, match="folder .Parquet shards. or a postgresql"):
        check_recordable_uri("s3://bucket/log")
    assert check_recordable_uri("relative/log") == str(Path("relative/log").resolve())
    assert check_recordable_uri(None) is None
    with pytest.raises(DataError, match="no such folder"):
        read_decision_log(str(tmp_path / "nothing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no records yet"):
        read_decision_log(str(tmp_path / "empty"))


def test_the_environment_overrides_the_recorded_log_but_cannot_switch_it_off(tmp_path, monkeypatch):
    monkeypatch.delenv(ENV_VAR, raising=False)
    assert resolve_decision_log("/recorded") == ("/recorded", "recorded with the model")
    assert resolve_decision_log(None) == (None, "recorded with the model")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "elsewhere"))
    assert resolve_decision_log("/recorded") == (str(tmp_path / "elsewhere"), ENV_VAR)
    for off in ("none", "OFF", "0"):
        monkeypatch.setenv(ENV_VAR, off)
        with pytest.raises(ConfigError, match="cannot be switched off"):
            resolve_decision_log("/recorded")


@pytest.fixture
def postgres_log_uri():
    """A fresh schema's decision-log URI (psycopg2 form, password included) on the test server."""
    from mlflow_fixtures import fresh_postgres_database

    with fresh_postgres_database("fairltr_decisions_test") as uri:
        yield uri.replace("postgresql+psycopg2://", "postgresql://", 1) + "&table=decisions"


@pytest.mark.postgres
def test_postgres_records_round_trip_and_concurrent_writers(postgres_log_uri):
    log = open_decision_log(postgres_log_uri)
    assert "***" in log.uri or "@" not in log.uri  # the password never appears in messages
    want = _append_requests(log, range(4))
    _compare(read_decision_log(postgres_log_uri), want)
    ctx = mp.get_context("spawn")
    procs = [ctx.Process(target=_worker, args=(postgres_log_uri, w, 10)) for w in range(3)]  # each creates the table
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    sizes = read_decision_log(postgres_log_uri).groupby("request_id").size()
    assert len(sizes) == 4 + 30 and (sizes[[f"w{w}-{i}" for w in range(3) for i in range(10)]] == 5).all()


@pytest.mark.postgres
def test_postgres_log_that_cannot_be_used_is_refused(postgres_log_uri):
    import psycopg2

    from fairltr.tracking.models.decision_log_postgres import parse_postgres_uri

    dsn, _ = parse_postgres_uri(postgres_log_uri)
    conn = psycopg2.connect(dsn)
    with conn, conn.cursor() as cur:
        cur.execute('CREATE TABLE "other" (request_id TEXT)')
    conn.close()
    with pytest.raises(ConfigError, match="lacks column"):
        open_decision_log(postgres_log_uri.replace("table=decisions", "table=other"))
    with pytest.raises(ConfigError, match="not a plain"):
        open_decision_log(postgres_log_uri.replace("table=decisions", "table=x;drop"))
    with pytest.raises(ConfigError, match="cannot be reached"):
        open_decision_log("postgresql://nobody@127.0.0.1:1/db")
