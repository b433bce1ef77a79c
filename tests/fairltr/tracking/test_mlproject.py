"""The MLproject: every entry point calls an existing ``fairltr`` command with options that
command has; ``mlflow run . -e train_deltr`` end to end against the session's server."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import uuid
from pathlib import Path

import click
import pytest

from fairltr.cli import cli

REPO = Path(__file__).resolve().parents[3]
ENTRY_POINTS = ["quickstart", "train_deltr", "train_lambdamart", "train_plrank", "reproduce_deltr", "train_dpr", "evaluate", "evaluate_registered",
                "promote", "compare_runs", "sweep"]


def _project():
    from mlflow.projects._project_spec import load_project

    return load_project(str(REPO))


def _resolve(words: list[str]) -> tuple[click.Command | None, list[str]]:
    """The click command named by the leading words of ``fairltr <words...>``, and the rest."""
    cmd: click.Command = cli
    rest = list(words)
    while rest and isinstance(cmd, click.Group) and not rest[0].startswith("-"):
        sub = cmd.commands.get(rest[0])
        if sub is None:
            return None, rest
        cmd, rest = sub, rest[1:]
    return cmd, rest


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_entry_point_matches_the_cli(entry):
    ep = _project().get_entry_point(entry)
    expansions = re.findall(r"\$\((.*?)\)", ep.command)  # shell expansions: optional flags
    command = re.sub(r"\$\(.*?\)", "", ep.command)
    words = shlex.split(command.replace("{", "").replace("}", ""))
    assert words[0] == "fairltr"
    cmd, rest = _resolve(words[1:])
    if cmd is None:
        pytest.skip(f"`fairltr {' '.join(words[1:3])}` is not implemented in this checkout yet")
    known = {opt for p in cmd.params for opt in getattr(p, "opts", [])}
    used = [w for w in rest if w.startswith("--")]
    assert set(used) <= known, f"{entry}: options {sorted(set(used) - known)} not accepted by the command"
    for name in re.findall(r"{(\w+)}", ep.command):
        assert name in ep.parameters, f"{entry}: {{{name}}} is not a declared parameter"
    for snippet in expansions:  # every flag an expansion echoes is an option of the command
        echoed = set(re.findall(r"echo\s+(--[\w-]+)", snippet))
        assert echoed and echoed <= known, f"{entry}: {snippet!r} echoes {sorted(echoed - known)} unknown to the command"


def test_colorblind_switch_expands_in_bash():
    ep = _project().get_entry_point("train_deltr")
    snippet = re.search(r"\$\(.*?\)", ep.command).group(0)
    for value, expected in (("true", "--colorblind"), ("false", "")):
        out = subprocess.run(["bash", "-c", "echo " + snippet.replace("{colorblind}", value)],
                             capture_output=True, text=True, check=True).stdout.strip()
        assert out == expected


def test_mlflow_run_train_deltr_end_to_end(mlflow_tracking, tiny_rankings, tmp_path):
    import mlflow

    train, test = tiny_rankings
    train.to_csv(tmp_path / "train.csv", index=False)
    test.to_csv(tmp_path / "test.csv", index=False)
    name = f"mlproject-{uuid.uuid4().hex[:8]}"
    experiment = f"test-mlproject-{uuid.uuid4().hex[:6]}"
    env = dict(os.environ, MLFLOW_TRACKING_URI=mlflow_tracking)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for leaked in ("MLFLOW_RUN_ID", "MLFLOW_EXPERIMENT_ID", "MLFLOW_EXPERIMENT_NAME"):  # from earlier tests' runs
        env.pop(leaked, None)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    proc = subprocess.run(
        [str(Path(sys.executable).with_name("mlflow")), "run", str(REPO), "-e", "train_deltr",
         "-P", f"train={tmp_path / 'train.csv'}", "-P", f"test={tmp_path / 'test.csv'}", "-P", "gamma=100",
         "-P", f"out={tmp_path / 'out'}", "-P", f"register={name}", "-P", "max-iter=30",
         "--env-manager", "local", "--experiment-name", experiment],
        capture_output=True, text=True, env=env, timeout=300, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = mlflow.search_runs(experiment_names=[experiment], output_format="list")
    assert len(runs) == 1
    run = runs[0]
    assert run.info.status == "FINISHED"
    assert run.data.tags["mlflow.project.entryPoint"] == "train_deltr"
    assert run.data.params["gamma"] == "100"           # from mlflow run
    assert run.data.params["max_iter"] == "30"         # extra -P passed through as --max-iter
    assert "train_path" in run.data.params             # from fairltr's logging
    contexts = {i.dataset.name: {t.key: t.value for t in i.tags}["mlflow.data.context"]
                for i in run.inputs.dataset_inputs}
    assert contexts == {"train.csv": "training", "test.csv": "testing"}  # the data as MLflow datasets
    assert "exposure_ratio" in run.data.metrics and "train_total" in run.data.metrics
    assert run.data.tags["fairltr.registered_version"] == "1"
    assert (tmp_path / "out" / "model.json").exists()
    loaded = mlflow.pyfunc.load_model(f"models:/{name}/1")
    assert len(loaded.predict(test)) == len(test)
