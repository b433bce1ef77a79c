"""The experiment of an ``mlflow run`` of fairltr's MLproject when the user names none.

``mlflow run . -e train_deltr`` creates its run *before* the entry point's command starts, in
the experiment given by ``--experiment-name`` / ``--experiment-id`` / ``MLFLOW_EXPERIMENT_NAME``
/ ``MLFLOW_EXPERIMENT_ID``, else in the one MLflow's default-experiment providers (the plugin
entry point group ``mlflow.default_experiment_provider``) return, else in ``Default``.
:class:`MLprojectExperimentProvider` is such a provider: inside the ``mlflow run`` process of a
local project whose MLproject is named ``fairltr`` it returns (creating it if needed) the
experiment the entry point's ``fairltr`` command uses on its own — its ``--experiment`` default:
``fairltr`` for ``train deltr`` / ``lambdamart`` / ``plrank``, ``fairltr-dpr`` for ``train dpr``,
``fairltr-sweep`` for ``sweep`` ... (:data:`~fairltr.tracking.runs.config.DEFAULT_EXPERIMENT` for a
command without one). So ``-e compare_runs -P experiment=fairltr`` finds the training runs. An
experiment the user names always wins (MLflow asks the providers only when none is named); any
other process is out of its context.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["MLprojectExperimentProvider", "entry_point_experiment", "mlflow_run_arguments", "PROJECT_NAME",
           "COMMAND_EXPERIMENTS"]

PROJECT_NAME = "fairltr"

# the ``--experiment`` default of each fairltr command that has one (the tracking layer may not
# import the CLI; tests/fairltr/tracking/test_mlproject_runs.py checks this against the commands)
COMMAND_EXPERIMENTS = {
    "quickstart": "fairltr-quickstart", "train deltr": "fairltr", "train lambdamart": "fairltr",
    "train plrank": "fairltr", "train dpr": "fairltr-dpr", "reproduce deltr": "fairltr-reproduce",
    "evaluate-model": "fairltr-evaluation", "promote": "fairltr-promotion", "sweep": "fairltr-sweep",
    "audit": "fairltr-bias-audit", "monitor": "fairltr-monitor",
}


def mlflow_run_arguments(argv: list[str] | None = None) -> dict | None:
    """The parsed options of ``mlflow run ...`` when ``argv`` (default ``sys.argv``) is that
    command (``mlflow run`` or ``python -m mlflow run``), else None."""
    argv = list(sys.argv if argv is None else argv)
    if len(argv) < 2 or argv[1] != "run":
        return None
    prog = Path(argv[0])
    if not (prog.name.removesuffix(".exe") == "mlflow" or (prog.name == "__main__.py" and prog.parent.name == "mlflow")):
        return None
    from mlflow.cli import run as run_command

    try:
        ctx = run_command.make_context("run", argv[2:], resilient_parsing=True)
    except Exception:  # not parseable: not ours to decide (mlflow run reports it)
        return None
    return dict(ctx.params)


def entry_point_experiment(project_dir: str | Path, entry_point: str) -> str | None:
    """The ``--experiment`` default of the ``fairltr`` command that ``entry_point`` of the
    MLproject in ``project_dir`` runs; :data:`DEFAULT_EXPERIMENT` when that command has none; None
    when the folder is not fairltr's project or the entry point is not a ``fairltr`` command."""
    from mlflow.projects._project_spec import load_project

    folder = Path(project_dir)
    if not (folder / "MLproject").is_file():
        return None
    try:
        project = load_project(str(folder))
    except Exception:
        return None
    if project.name != PROJECT_NAME or entry_point not in project._entry_points:
        return None
    words = project._entry_points[entry_point].command.split()
    if not words or words[0] != "fairltr":
        return None
    from fairltr.tracking.runs.config import DEFAULT_EXPERIMENT

    path: list[str] = []
    for word in words[1:]:
        if word.startswith(("-", "{", "$")):
            break
        path.append(word)
    return COMMAND_EXPERIMENTS.get(" ".join(path), DEFAULT_EXPERIMENT)


class MLprojectExperimentProvider:
    """MLflow default-experiment provider (``in_context`` / ``get_experiment_id``): fairltr's
    MLproject entry points, run by ``mlflow run`` without an experiment, log into the
    experiment of their ``fairltr`` command (module docstring)."""

    def _experiment(self) -> str | None:
        if os.environ.get("MLFLOW_RUN_ID"):  # a run handed over: its experiment is already fixed
            return None
        args = mlflow_run_arguments()
        if not args or args.get("experiment_name") or args.get("experiment_id"):
            return None
        uri = args.get("uri")
        if not uri or not Path(uri).is_dir():  # a git URI: not a local copy of this project
            return None
        return entry_point_experiment(uri, args.get("entry_point") or "main")

    def in_context(self) -> bool:
        return self._experiment() is not None

    def get_experiment_id(self) -> str:
        from mlflow import MlflowClient

        name = self._experiment()
        client = MlflowClient()
        experiment = client.get_experiment_by_name(name)
        if experiment is not None:
            return experiment.experiment_id
        try:
            return client.create_experiment(name)
        except Exception:  # created meanwhile by another process
            experiment = client.get_experiment_by_name(name)
            if experiment is None:
                raise
            return experiment.experiment_id
