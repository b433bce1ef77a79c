"""``fairltr monitor`` end to end on a real MLflow server: a synthetic traffic table whose fourth
week is biased against one category exits 1 naming that window and category, logs the
worst-case metrics as time series and the plot, and tags the registered model version; a clean
table exits 0; broken inputs give one line."""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from pathlib import Path

import pandas as pd
import pytest

from fairltr import DELTR
from fairltr.monitoring import make_served_traffic


def _fairltr(args: list[str], env: dict, timeout: float = 300) -> subprocess.CompletedProcess:
    exe = str(Path(sys.executable).with_name("fairltr"))
    return subprocess.run([exe, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def traffic(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("traffic")
    biased = make_served_traffic(6, 120, 20, biased_window=3, seed=0)
    clean = make_served_traffic(6, 120, 20, biased_window=None, seed=1)
    biased.to_csv(root / "biased.csv", index=False)
    clean.to_csv(root / "clean.csv", index=False)
    train = make_served_traffic(2, 60, 20, biased_window=None, seed=2)
    train = train.assign(protected=(train["race"] == "Black").astype(int), judgment=train["hired"])
    train[["query_id", "protected", "x1", "x2", "x3", "judgment"]].to_csv(root / "train.csv", index=False)
    return {"root": root, "biased": root / "biased.csv", "clean": root / "clean.csv", "train": root / "train.csv"}


@pytest.fixture()
def registered(mlflow_tracking, traffic) -> str:
    import mlflow

    from fairltr.tracking.job_logging.ranker_logging import log_ranker_into_run

    train = pd.read_csv(traffic["train"])
    model = DELTR(gamma=0.0, max_iter=20, colorblind=True).fit(train)
    name = f"monitored-{uuid.uuid4().hex[:8]}"
    mlflow.set_experiment("test-monitor")
    with mlflow.start_run() as run:
        log_ranker_into_run(run.info.run_id, model, train_df=train, register=name, title="monitored ranker")
    return name


def test_biased_window_fails_by_name_and_is_logged_and_tagged(mlflow_tracking, traffic, registered, tmp_path):
    import mlflow

    env = {**os.environ, "MLFLOW_TRACKING_URI": mlflow_tracking}
    out = tmp_path / "monitor"
    proc = _fairltr(["monitor", "--data", str(traffic["biased"]), "--model-uri", f"models:/{registered}/1",
                     "--rank-column", "rank", "--time-column", "served_at", "--window", "7d", "--group", "race",
                     "--judgment", "hired", "--gate", "four_fifths@10", "--n-boot", "500", "--out", str(out)], env)
    assert proc.returncode == 1, proc.stderr[-3000:]
    fails = [line for line in proc.stdout.splitlines() if line[:4].isdigit() and " FAIL " in line]
    assert fails and all(line.startswith("2026-01-28 FAIL four_fifths@10 race=Black ") for line in fails), proc.stdout
    assert "[" in fails[0] and "]" in fails[0]  # the value with its interval
    assert "Traceback" not in proc.stderr
    for name in ("windows.csv", "audit_by_window.csv", "shift.csv", "monitor.json", "monitor_over_time.png",
                 "monitor_report.html"):
        assert (out / name).is_file(), name
    windows = pd.read_csv(out / "windows.csv")
    assert len(windows) == 6 and windows.loc[3, "impact_ratio_at_10"] < 0.8 <= windows.drop(index=3)["impact_ratio_at_10"].min()
    client = mlflow.MlflowClient()
    run = client.search_runs([client.get_experiment_by_name("fairltr-monitor").experiment_id],
                             order_by=["attributes.start_time DESC"], max_results=1)[0]
    assert run.info.status == "FINISHED"
    # grouped series (issue 31 item 8): monitor/<metric>[/<attribute>[/<category>]], no interval-end charts
    history = client.get_metric_history(run.info.run_id, "monitor/impact_ratio_at_10")
    assert [m.step for m in sorted(history, key=lambda m: m.step)] == list(range(6))
    logged = set(run.data.metrics)
    assert {"monitor/impact_ratio_at_10/race", "monitor/impact_ratio_at_10/race/Black", "monitor/verdict"} <= logged
    assert not [k for k in logged if "_ci_" in k or not k.startswith("monitor/")], logged
    verdicts = client.get_metric_history(run.info.run_id, "monitor/verdict")
    assert [m.value for m in sorted(verdicts, key=lambda m: m.step)] == [1.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    starts = pd.to_datetime(windows["window_start"])
    assert sorted(m.timestamp for m in history) == [int(t.value // 1_000_000) for t in starts]
    assert {"monitor_over_time.png", "monitor_report.html", "windows.csv"} <= {
        a.path for a in client.list_artifacts(run.info.run_id)}
    assert "FAIL" in run.data.tags["mlflow.note.content"]
    mv = client.get_model_version(registered, "1")
    assert mv.tags["fairltr.monitored_through"].startswith("2026-02-17: FAIL in 1 of 6 windows")
    assert mv.description.count("Monitored through") == 1 and "Registered from run" in mv.description
    # the training profile logged with the model was compared: features only (the model's group is 'protected')
    shift = pd.read_csv(out / "shift.csv")
    assert {"x1", "x2", "x3"} <= set(shift.loc[shift["kind"] == "feature", "name"])

    # a clean month re-tags the version, keeping one monitoring line
    proc = _fairltr(["monitor", "--data", str(traffic["clean"]), "--model-uri", f"models:/{registered}/1",
                     "--rank-column", "rank", "--time-column", "served_at", "--window", "7d", "--group", "race",
                     "--judgment", "hired", "--gate", "four_fifths@10", "--ci", "0", "--out", str(tmp_path / "m2")], env)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-2000:]
    mv = client.get_model_version(registered, "1")
    assert mv.tags["fairltr.monitored_through"].endswith(": PASS")
    assert mv.description.count("Monitored through") == 1


BROKEN = [
    (["--window", "seven days"], "--window must be"),
    (["--time-column", "when"], "missing column(s) ['when']"),
    (["--group", "religion"], "religion"),
    (["--gate", "impact_ratio_at_10>=fast"], "impact_ratio_at_10"),
    (["--gate", "awrf>=0.8"], "'awrf>=0.8' cannot be checked here: awrf is not an audit figure"),  # fails closed
    (["--gate", "iaa<=0.5"], "'iaa<=0.5' cannot be checked here: iaa is not an audit figure"),
    (["--confidence", "1.5"], "--confidence"),
    (["--rank-column", "position"], "position"),
    (["--rank-column", "rank", "--score-column", "score"], "not both"),
]


@pytest.mark.parametrize("extra, needle", BROKEN, ids=[c[1][:24] for c in BROKEN])
def test_broken_monitor_inputs_give_one_line(traffic, tmp_path, extra, needle, monkeypatch):
    from click.testing import CliRunner

    from fairltr.cli import cli

    monkeypatch.chdir(tmp_path)
    options = {"--data": str(traffic["biased"]), "--time-column": "served_at", "--window": "7d",
               "--out": str(tmp_path / "o")}
    for i in range(0, len(extra), 2):
        if extra[i] in options:
            options[extra[i]] = extra[i + 1]
    args = ["monitor", *[x for kv in options.items() for x in kv], "--group", "race", "--no-track"]
    args += [x for i in range(0, len(extra), 2) if extra[i] not in options for x in extra[i:i + 2]]
    result = CliRunner().invoke(cli, args)
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code in (1, 2), result.output
    assert len(lines) == 1 and lines[0].startswith("Error:") and needle in lines[0], result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("gate, needle", [
    ("impact_ratio_at_5.gender>=0.8", "names attribute 'gender', which is not audited here; audited: ['race']"),
    ("ndcg_at_10>=0.5", "ndcg_at_10 is not an audit figure"),
])
def test_a_gate_never_computed_is_a_usage_error_before_any_work(traffic, tmp_path, gate, needle):
    """Issue 29 item 5: one ``Error:`` line naming the gate and the audited attributes, exit 2 (a usage
    error; 1 is a FAIL verdict), before any window is audited or any file written."""
    from click.testing import CliRunner

    from fairltr.cli import cli

    result = CliRunner().invoke(cli, ["monitor", "--data", str(traffic["biased"]), "--time-column", "served_at",
                                      "--window", "7d", "--group", "race", "--gate", gate, "--out",
                                      str(tmp_path / "o"), "--no-track"])
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2, result.output
    assert len(lines) == 1 and lines[0].startswith(f"Error: {gate!r} cannot be checked here: "), result.output
    assert needle in lines[0] and not (tmp_path / "o").exists()
