"""A filed LL144 bias audit in MLflow: one run holding ``bias_audit.json`` / ``.csv`` / ``.html``,
tagged with the model version it audits, and the version tagged with the summary's sha256 and the
run id (so a published summary can be matched to the exact model)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping

__all__ = ["log_bias_audit"]


def log_bias_audit(experiment: str, summary: Mapping[str, Any], files: Mapping[str, Path], model: str, version: str,
                   sha256: str, *, sha_tag: str, run_tag: str) -> str:
    """Log the run (params: method, k or median, n_individuals; metrics: the worst impact ratio per
    attribute; the three files as artifacts) and tag the version. Returns the run id."""
    import mlflow

    from fairltr.tracking.runs.life_cycle import job_run, log_params

    description = (f"fairltr audit (NYC LL144 summary) of {model} v{version}: {summary['method']}, "
                   f"{summary['n_individuals']} individuals; sha256 {sha256}")
    tags = {"fairltr.model_name": model, "fairltr.model_version": str(version), sha_tag: sha256}
    with job_run(experiment, f"bias audit {model} v{version}", tags=tags, description=description) as run:
        run_id = run.info.run_id
        log_params(run_id, {"method": summary["method"], "k": summary.get("k"), "median": summary.get("median"),
                            "n_individuals": summary["n_individuals"], "data": summary["data_source"]["path"],
                            "data_sha256": summary["data_source"]["sha256"]})
        worst = {f"worst_impact_ratio.{a.replace(':', '_x_')}": b["worst_impact_ratio"]
                 for a, b in summary["attributes"].items() if b["worst_impact_ratio"] is not None}
        if worst:
            mlflow.log_metrics(worst)
        for path in files.values():
            mlflow.log_artifact(str(path))
    client = mlflow.MlflowClient()
    client.set_model_version_tag(model, str(version), sha_tag, sha256)
    client.set_model_version_tag(model, str(version), run_tag, run_id)
    return run_id
