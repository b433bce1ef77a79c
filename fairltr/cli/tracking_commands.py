"""``fairltr promote`` (fairness-gated alias move) and ``fairltr evaluate-model`` (the
``fair_ranking`` MLflow evaluator on a registered or logged model). MLflow is imported inside
the commands only."""

from __future__ import annotations

import os
import sys

import click

from fairltr.cli.app import cli
from fairltr.cli.options import data_options, read_data

def _mlflow_errors():
    """Turn MLflow's errors (unknown model/version, unreachable server) into one-line CLI errors."""
    from contextlib import contextmanager

    from mlflow.exceptions import MlflowException

    @contextmanager
    def guard():
        try:
            yield
        except MlflowException as exc:
            raise click.ClickException(f"MLflow: {exc.message}") from None

    return guard()


@cli.command("promote")
@click.option("--model", "model_name", required=True, help="registered model name")
@click.option("--version", required=True, help="candidate version")
@click.option("--gate", "gates", multiple=True,
              help="'<metric> <op> <bound>', op in >= <= > <, bound a number or champion[+-*]x; repeatable. "
                   "e.g. --gate 'exposure_ratio>=0.9' --gate 'ndcg_at_10>=champion-0.01'")
@click.option("--gates", "gate_list", default="", help="several gates separated by ';' (used by the MLproject)")
@click.option("--data", "data_path", default="",
              help="evaluate candidate and champion on this ranking file (default: metrics logged at training)")
@click.option("--alias", default="champion", show_default=True, help="alias to move on success")
@click.option("--no-champion", type=click.Choice(["pass", "fail"]), default="pass", show_default=True,
              help="relative gates when no model holds the alias yet")
@click.option("--experiment", default="fairltr-promotion", show_default=True, help="MLflow experiment of the evaluations")
@data_options("format of --data")
def promote_cmd(model_name, version, gates, gate_list, data_path, alias, no_champion, experiment, fmt, query, group, judgment):
    """Check fairness/relevance gates on a model version and move the alias only if all pass.

    Exit status 0 when promoted, 1 when a gate failed (alias untouched). The decision (gates,
    values, verdict, UTC time) is recorded as tags on the model version either way.
    """
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from fairltr.tracking.promotion import parse_gate, promote

    texts = list(gates) + [g for g in gate_list.split(";") if g.strip()]
    if not texts:
        raise click.UsageError("give at least one --gate (or --gates 'a;b')")
    parsed = [parse_gate(g) for g in texts]  # fail on a typo before any evaluation
    data = read_data(data_path, fmt, query, group, judgment) if data_path else None
    with _mlflow_errors():
        decision = promote(model_name, version, parsed, data=data, query=query, group=group, judgment=judgment,
                           alias=alias, no_champion=no_champion, experiment=experiment)
    click.echo(decision.summary())
    if not decision.promoted:
        failed = [r for r in decision.results if not r.passed]
        for r in failed:
            click.echo(f"gate failed: {r.describe()}", err=True)
        if not failed:
            click.echo("not promoted: " + "; ".join(decision.notes), err=True)
        sys.exit(1)


@cli.command("evaluate-model")
@click.option("--model-uri", required=True, help="models:/NAME@champion, models:/NAME/3, runs:/<id>/model, models:/m-<id>")
@click.option("--data", "data_path", required=True, type=click.Path(dir_okay=False), help="ranking file")
@click.option("--k", "ks", default="1,5,10,20,100", show_default=True, help="cut-offs for ndcg/precision")
@click.option("--experiment", default="fairltr-evaluation", show_default=True, help="MLflow experiment")
@click.option("--run-name", default=None, help="name of the evaluation run")
@data_options("format of --data")
def evaluate_model_cmd(model_uri, data_path, ks, experiment, run_name, fmt, query, group, judgment):
    """Evaluate a logged/registered ranker with MLflow's evaluate and the fair_ranking evaluator
    (metrics, exposure-by-position chart, HTML report logged to a new run)."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from fairltr.cli.formatting import metrics_table
    from fairltr.tracking.config import configure
    from fairltr.tracking.promotion import evaluate_model_uri

    try:
        k = [int(x) for x in ks.split(",")]
    except ValueError:
        raise click.BadParameter(f"--k must be comma-separated integers, got {ks!r}") from None
    configure(experiment)
    df = read_data(data_path, fmt, query, group, judgment)
    with _mlflow_errors():
        metrics, run_id = evaluate_model_uri(model_uri, df, {"query": query, "group": group, "judgment": judgment,
                                                             "k": k}, run_name=run_name or f"evaluate {model_uri}")
    cols = ["exposure_protected", "exposure_nonprotected", "exposure_ratio", "exposure_gap", "kendall_tau"]
    cols += [f"ndcg_at_{x}" for x in k] + [f"precision_at_{x}" for x in k]
    click.echo(metrics_table({model_uri: metrics}, cols))
    click.echo(f"MLflow run {run_id}", err=True)


@cli.command("compare-runs")
@click.option("--experiment", required=True, help="MLflow experiment whose finished runs to compare")
@click.option("--relevance", default="kendall_tau", show_default=True, help="x axis (SPEC metric key)")
@click.option("--fairness", default="exposure_ratio", show_default=True, help="y axis (SPEC metric key)")
@click.option("--out", "out_path", default=None, type=click.Path(dir_okay=False), help="also write the PNG here")
def compare_runs_cmd(experiment, relevance, fairness, out_path):
    """The DELTR paper's Figure 1 from tracked runs: relevance vs exposure ratio of every finished run
    of an experiment, logged as a 'comparison' run (PNG, CSV, HTML)."""
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    from fairltr.tracking.compare import log_runs_comparison

    with _mlflow_errors():
        run_id, table = log_runs_comparison(experiment, relevance=relevance, fairness=fairness, out=out_path)
    click.echo(table.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    click.echo(f"MLflow run {run_id}: relevance_vs_exposure.png, runs.csv, fairness_report.html", err=True)
