"""Racing promotions (slow): 20 rounds of 6-7 concurrent ``fairltr promote`` processes on one
registered model, against a real server, gated ``ndcg_at_10>=champion`` and
``exposure_ratio>=0.5``. Every round: no process crashes or loses to contention, each alias move
was checked against the champion it replaced (the decision's champion values are those of the
previous champion), the champion's ndcg_at_10 never decreases, and the best eligible version
(or the initial champion, when nobody beats it) ends as champion. Half of the rounds start
from an unset alias, half from a champion set beforehand."""

from __future__ import annotations

import json
import multiprocessing
import random
import sys
import time
import uuid
from pathlib import Path

import pytest

from fairltr import DELTR

N_MODELS = 9
ROUNDS = 20
GATES = ["--gate", "ndcg_at_10>=champion", "--gate", "exposure_ratio>=0.5"]


@pytest.fixture(scope="module")
def race_models(mlflow_server, tiny_rankings):
    """Logged rankers whose training runs carry chosen metrics: distinct ndcg_at_10 values, and
    exposure_ratio below 0.5 (ineligible) for a third of them."""
    return make_race_models(mlflow_server.uri, tiny_rankings)


def make_race_models(server_uri: str, tiny_rankings) -> list[dict]:
    """The race's models logged to the server at ``server_uri`` (see ``race_models``)."""
    import mlflow

    from fairltr.tracking import log_deltr_run

    train, test = tiny_rankings
    rng = random.Random(7)
    ndcgs = rng.sample([round(0.5 + 0.01 * i, 4) for i in range(40)], N_MODELS)
    models = []
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("MLFLOW_TRACKING_URI", server_uri)
        mlflow.set_tracking_uri(server_uri)
        model = DELTR(gamma=0.0, max_iter=5).fit(train)
        for i, ndcg in enumerate(ndcgs):
            exposure = 0.3 if i % 3 == 2 else 0.9
            run_id = log_deltr_run(model, train_df=train, test_df=test, experiment="test-promotion-race",
                                   test_metrics={"ndcg_at_10": ndcg, "exposure_ratio": exposure})
            uri = mlflow.MlflowClient().get_run(run_id).data.tags["fairltr.model_uri"]
            models.append({"uri": uri, "ndcg": ndcg, "eligible": exposure >= 0.5})
    return models


@pytest.fixture(scope="module")
def forkserver(tmp_path_factory):
    """A forkserver that imported fairltr, MLflow and torch once (see promotion_race_worker).
    The preload names importable packages: Python 3.11's forkserver ignores the parent's
    sys.path when preloading (the children get it, and import the small worker module)."""
    here = str(Path(__file__).resolve().parent)
    if here not in sys.path:
        sys.path.insert(0, here)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(["torch", "mlflow", "mlflow.pyfunc", "mlflow.models", "mlflow.artifacts", "fairltr.cli",
                                "fairltr.tracking.model_registry", "fairltr.tracking.models.verify", "fairltr.tracking.model_registry.lock",
                                "fairltr.tracking.models.pyfunc", "fairltr.workflows.model_registry"])
    return ctx


def _round(ctx, models, server_uri: str, r: int, workdir: Path, launch=None) -> dict:
    """One round; ``launch(r, jobs)`` (default: forkserver processes here) runs the racers, each
    job ``(version, argv, env, out_path)``, concurrently and returns {version: exit code}."""
    import mlflow

    client = mlflow.MlflowClient()
    rng = random.Random(1000 + r)
    name = f"race-{r}-{uuid.uuid4().hex[:6]}"
    n_racers = 6 + r % 2
    chosen = rng.sample(range(len(models)), n_racers + (r % 2 == 1))
    initial = chosen.pop() if r % 2 == 1 else None
    order = chosen + ([initial] if initial is not None else [])
    version_of = {}
    for idx in order:
        mv = mlflow.register_model(models[idx]["uri"], name)
        version_of[idx] = str(mv.version)
    if initial is not None:
        client.set_registered_model_alias(name, "champion", version_of[initial])

    from promotion_race_worker import promote_process

    env = {"MLFLOW_TRACKING_URI": server_uri, "MLFLOW_DISABLE_TELEMETRY": "true"}
    jobs = [(version_of[idx], ["promote", "--model", name, "--version", version_of[idx], *GATES], env,
             str(workdir / f"r{r}-v{version_of[idx]}.txt")) for idx in chosen]
    t0 = time.monotonic()
    if launch is None:
        procs = [(v, ctx.Process(target=promote_process, args=(argv, e, out))) for v, argv, e, out in jobs]
        for _, p in procs:
            p.start()
        for _, p in procs:
            p.join(300)
        codes = {v: p.exitcode for v, p in procs}
    else:
        codes = launch(r, jobs)
    print(f"round {r}: {time.monotonic() - t0:.1f} s")
    outputs = {v: Path(out).read_text() for v, _, _, out in jobs}
    assert set(codes.values()) <= {0, 1}, (codes, outputs)

    ndcg = {version_of[i]: models[i]["ndcg"] for i in order}
    eligible = {version_of[i] for i in chosen if models[i]["eligible"]}
    pool = eligible | ({version_of[initial]} if initial is not None else set())
    best = max(pool, key=lambda v: ndcg[v]) if pool else None
    final = client.get_model_version_by_alias(name, "champion").version if best else None
    assert str(final) == best, (r, final, best, codes, outputs)

    # the alias moves, in the order they were recorded under the lock
    moves = []
    for v in codes:
        tags = client.get_model_version(name, v).tags
        assert tags["fairltr.promotion.verdict"] in ("promoted", "rejected"), tags
        if tags["fairltr.promotion.verdict"] == "promoted":
            from fairltr.tracking.model_registry import decision_record

            champ = decision_record(tags)["champion_values"]  # None: no champion was measured
            moves.append((tags["fairltr.promotion.time"], v, champ))
        else:
            assert codes[v] == 1 and v != best
    moves.sort()
    current = version_of[initial] if initial is not None else None
    for _, v, champion_values in moves:
        assert v in eligible
        if current is None:
            assert champion_values is None  # the first move from an unset alias
        else:
            # checked against the champion it replaced, which it does not make worse
            assert champion_values["ndcg_at_10"] == pytest.approx(ndcg[current]), (r, moves, outputs)
            assert ndcg[v] >= ndcg[current]
        current = v
    assert current == best
    decisions = [k for k in client.get_registered_model(name).tags if k.startswith("fairltr.decision.")]
    assert len(decisions) == n_racers
    return {"racers": n_racers, "moves": len(moves), "from": "set" if initial is not None else "unset"}


@pytest.mark.slow
def test_racing_promotions_keep_the_best_eligible_champion(mlflow_tracking, race_models, forkserver, tmp_path):
    started = time.monotonic()
    stats = [_round(forkserver, race_models, mlflow_tracking, r, tmp_path) for r in range(ROUNDS)]
    elapsed = time.monotonic() - started
    assert len(stats) == ROUNDS and all(s["racers"] >= 6 for s in stats)
    assert sum(s["moves"] for s in stats) > ROUNDS  # contention happened: several moves per round
    print(f"{ROUNDS} rounds, {sum(s['racers'] for s in stats)} promotions, "
          f"{sum(s['moves'] for s in stats)} alias moves in {elapsed:.0f} s")
