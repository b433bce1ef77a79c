"""Decision records tell the history (issue 31, item 7): each record's ``champion_before`` is
the champion its compare-and-set replaced, read under the lock, not the one read before the
candidate was measured. In one process: a promotion that finishes while another is measuring
its candidate; and (slow) 4 racing promoter processes released together by a barrier file,
whose records must chain from the final champion back to the initial one."""

from __future__ import annotations

import multiprocessing
import random
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from alias_fixtures import log_ranker, promote, register  # noqa: E402


def _records(name: str, versions) -> dict[str, dict]:
    import mlflow

    from fairltr.tracking.model_registry import decision_record

    client = mlflow.MlflowClient()
    return {v: decision_record(client.get_model_version(name, v).tags) for v in versions}


def test_a_promotion_that_lands_meanwhile_is_the_recorded_predecessor(mlflow_tracking, tiny_rankings, monkeypatch):
    """v2's promotion reads @champion unset, then v1 is promoted while v2 waits for the lock:
    v2's record says it replaced v1 (it said None, "first @champion", before)."""
    import fairltr.tracking.model_registry.compare_and_set as cas

    name = register(log_ranker(tiny_rankings), 2, prefix="history")
    real_acquire = cas.acquire_lock
    calls = []

    def acquire_after_a_rival(*args, **kwargs):
        if not calls:  # the first time v2 reaches for the lock, v1's promotion runs to its end
            calls.append(1)
            assert promote(name, "1").exit_code == 0
        return real_acquire(*args, **kwargs)

    monkeypatch.setattr(cas, "acquire_lock", acquire_after_a_rival)
    result = promote(name, "2")
    assert result.exit_code == 0, result.output
    records = _records(name, ["1", "2"])
    assert records["1"]["champion_before"] is None and records["1"]["verdict"] == "promoted"
    assert records["2"]["champion_before"] == "1" and records["2"]["champion_first_read"] is None
    assert records["2"]["champion_after"] == "2"
    import mlflow

    description = mlflow.MlflowClient().get_model_version(name, "2").description
    assert "replaces v1" in description and "first @champion" not in description
    assert "@champion moved from unset to v1" in " ".join(records["2"]["notes"])


# ------------------------------------------------------------------------- 4 racing processes
N_RACERS = 4


@pytest.fixture(scope="module")
def forkserver():
    """A forkserver that imported fairltr, MLflow and torch once (as in test_promotion_race.py)."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "mlflow", "mlflow.pyfunc", "mlflow.models", "mlflow.artifacts", "fairltr.cli",
                                "fairltr.tracking.model_registry", "fairltr.tracking.models.verify",
                                "fairltr.tracking.models.pyfunc", "fairltr.workflows.model_registry"])
    return ctx


def _race(ctx, server_uri: str, version_uris: list[str], initial_uri: str | None, gates: list[str], workdir: Path,
          seed: int) -> dict:
    """One race: versions 1..n of a fresh model from ``version_uris`` promoted by n processes
    released together (in a shuffled start order), from ``@champion`` unset or set to a version
    n+1 of ``initial_uri``; returns what the records say."""
    import uuid

    import mlflow

    from promotion_history_worker import promote_after_barrier

    client = mlflow.MlflowClient()
    name = f"history-race-{seed}-{uuid.uuid4().hex[:6]}"
    for u in version_uris + ([initial_uri] if initial_uri else []):
        mlflow.register_model(u, name)
    versions = [str(v) for v in range(1, len(version_uris) + 1)]
    start = None
    if initial_uri:
        start = str(len(version_uris) + 1)
        client.set_registered_model_alias(name, "champion", start)
    random.Random(seed).shuffle(versions)
    barrier = workdir / f"go-{seed}"
    env = {"MLFLOW_TRACKING_URI": server_uri, "MLFLOW_DISABLE_TELEMETRY": "true"}
    procs = {v: ctx.Process(target=promote_after_barrier,
                            args=(["promote", "--model", name, "--version", v, *gates], env,
                                  str(workdir / f"{seed}-v{v}.txt"), str(barrier)))
             for v in versions}
    for p in procs.values():
        p.start()
    time.sleep(1.0)  # every racer is waiting on the barrier
    barrier.touch()
    for p in procs.values():
        p.join(300)
    outputs = {v: (workdir / f"{seed}-v{v}.txt").read_text() for v in versions}
    codes = {v: p.exitcode for v, p in procs.items()}
    assert set(codes.values()) <= {0, 1}, (codes, outputs)
    records = _records(name, versions)
    final = str(client.get_model_version_by_alias(name, "champion").version)
    return {"name": name, "start": start, "records": records, "codes": codes, "final": final, "outputs": outputs}


def _check_chain(race: dict) -> int:
    """The promoted records chain (module docstring); returns how many replaced a champion."""
    records, start, final = race["records"], race["start"], race["final"]
    promoted = {v: r for v, r in records.items() if r["verdict"] == "promoted"}
    for v, r in records.items():
        assert r["verdict"] in ("promoted", "rejected"), (v, r)
        assert (race["codes"][v] == 0) == (r["verdict"] == "promoted"), (v, race["outputs"][v])
    # in the order the moves were made under the lock (their decision times), each names the one before
    order = sorted(promoted, key=lambda v: promoted[v]["time"])
    previous = start
    for v in order:
        assert promoted[v]["champion_before"] == previous, (v, previous, order, records)
        previous = v
    assert previous == final
    # following champion_before from the final champion visits every accepted version once, ends at the start
    seen, at = [], final
    while at in promoted:
        assert at not in seen
        seen.append(at)
        at = promoted[at]["champion_before"]
    assert at == start and sorted(seen) == sorted(promoted)
    # no two accepted records claim the same predecessor; a rejected one names a version that held the alias
    befores = [r["champion_before"] for r in promoted.values()]
    assert len(set(befores)) == len(befores)
    for v, r in records.items():
        if r["verdict"] == "rejected":
            assert r["champion_before"] in set(promoted) | {start}, (v, r)
    return sum(r["champion_before"] is not None for r in promoted.values())


@pytest.mark.slow
def test_four_racing_promoters_record_a_consistent_chain(mlflow_tracking, tiny_rankings, forkserver, tmp_path):
    """Three races of 4 processes: an absolute gate from an unset alias and from a set champion
    (all four are promoted, one after another), and a champion-relative gate from a middle
    champion (the two worse versions rejected, the best one ends as champion)."""
    started = time.monotonic()
    uri = log_ranker(tiny_rankings, exposure=0.9)
    absolute = ["--gate", "exposure_ratio>=0.5"]
    replaced = 0
    for seed, initial in enumerate((None, uri)):
        race = _race(forkserver, mlflow_tracking, [uri] * N_RACERS, initial, absolute, tmp_path, seed)
        assert all(r["verdict"] == "promoted" for r in race["records"].values()), race["outputs"]
        replaced += _check_chain(race)
    assert replaced == 2 * N_RACERS - 1  # every promotion but the very first one replaced a champion

    ndcgs = [0.5, 0.55, 0.6, 0.65]  # versions 1-4; the initial champion (v5) has 0.575
    uris = [log_ranker(tiny_rankings, exposure=0.9, ndcg=x) for x in ndcgs]
    initial = log_ranker(tiny_rankings, exposure=0.9, ndcg=0.575)
    race = _race(forkserver, mlflow_tracking, uris, initial, ["--gate", "ndcg_at_10>=champion", *absolute],
                 tmp_path, 2)
    _check_chain(race)
    assert race["final"] == "4" and race["codes"]["1"] == race["codes"]["2"] == 1, race["outputs"]
    print(f"3 races of {N_RACERS} promoters in {time.monotonic() - started:.0f} s")
