"""Figure 1 of the DELTR paper from tracked runs: relevance vs exposure ratio of every run of an
experiment, logged as a comparison run (PNG + CSV + HTML report)."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pandas as pd

from fairltr.errors import DataError

__all__ = ["runs_table", "log_runs_comparison"]


def runs_table(experiment: str, relevance: str = "kendall_tau", fairness: str = "exposure_ratio") -> pd.DataFrame:
    """One row per finished run of ``experiment`` that has both metrics: run id, name, the two
    metrics and the fairltr parameters that tell the settings apart (gamma, colorblind, loss)."""
    import mlflow

    exp = mlflow.get_experiment_by_name(experiment)
    if exp is None:
        raise DataError(f"no MLflow experiment named {experiment!r} at {mlflow.get_tracking_uri()}")
    runs = mlflow.search_runs([exp.experiment_id], filter_string="attributes.status = 'FINISHED'")
    cols = [f"metrics.{relevance}", f"metrics.{fairness}"]
    if runs.empty or not set(cols) <= set(runs.columns):
        raise DataError(f"no finished run in {experiment!r} has both {relevance!r} and {fairness!r}")
    runs = runs.dropna(subset=cols)
    if runs.empty:
        raise DataError(f"no finished run in {experiment!r} has both {relevance!r} and {fairness!r}")
    out = pd.DataFrame({
        "run_id": runs["run_id"],
        "label": runs.get("tags.mlflow.runName", runs["run_id"]).fillna(runs["run_id"]),
        relevance: runs[cols[0]].astype(float),
        fairness: runs[cols[1]].astype(float),
    })
    for p in ("gamma", "colorblind", "fairness_loss", "alpha", "fair_preprocess_p"):
        if f"params.{p}" in runs.columns:
            out[p] = runs[f"params.{p}"]
    return out.sort_values(relevance).reset_index(drop=True)


def log_runs_comparison(
    experiment: str,
    *,
    relevance: str = "kendall_tau",
    fairness: str = "exposure_ratio",
    run_name: str = "comparison",
    out: str | Path | None = None,
) -> tuple[str, pd.DataFrame]:
    """Draw relevance (x) vs ``fairness`` (y) of the experiment's runs and log the figure
    (``relevance_vs_exposure.png``), the table (``runs.csv``) and ``fairness_report.html`` as a
    new run ``run_name`` in the same experiment. Also writes the PNG to ``out`` when given.
    Returns (comparison run id, table)."""
    import mlflow

    from fairltr.tracking.runs.config import configure
    from fairltr.tracking.evaluation.plots import figure_to_png, relevance_fairness_scatter
    from fairltr.tracking.evaluation.report import fairness_report_html

    configure()
    table = runs_table(experiment, relevance, fairness)
    png = figure_to_png(relevance_fairness_scatter(table, relevance=relevance, fairness=fairness,
                                                   title=f"{experiment}: {relevance} vs {fairness}"))
    if out is not None:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        Path(out).write_bytes(png)
    if mlflow.active_run() is not None:
        ctx = mlflow.start_run(run_name=run_name, nested=True)
    elif os.environ.get("MLFLOW_RUN_ID"):
        ctx = mlflow.start_run()  # the run `mlflow run` created
    else:
        ctx = mlflow.start_run(experiment_id=mlflow.get_experiment_by_name(experiment).experiment_id,
                               run_name=run_name)
    with ctx as run, tempfile.TemporaryDirectory(prefix="fairltr-compare-") as tmp:
        (Path(tmp) / "relevance_vs_exposure.png").write_bytes(png)
        table.to_csv(Path(tmp) / "runs.csv", index=False)
        report = fairness_report_html(
            f"{experiment}: {relevance} vs {fairness} of {len(table)} runs", metrics={},
            figures={f"{relevance} (x) vs {fairness} (y), DELTR Fig. 1": png}, tables={"Runs": table},
            notes=f"{fairness} = exposure of the protected group / exposure of the non-protected group (1.0 = equal).")
        (Path(tmp) / "fairness_report.html").write_text(report, encoding="utf-8")
        mlflow.set_tags({"fairltr.comparison_of": experiment, "fairltr.n_runs": str(len(table))})
        mlflow.log_artifacts(tmp)
    return run.info.run_id, table
