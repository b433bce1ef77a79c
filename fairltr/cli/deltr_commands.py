"""``fairltr train deltr``, ``evaluate``, ``quickstart`` and ``reproduce deltr``."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path

import click

from fairltr.cli.app import cli, reproduce, train
from fairltr.cli.formatting import metrics_table
from fairltr.cli.options import data_options, read_data

KEY_METRICS = ["exposure_protected", "exposure_nonprotected", "exposure_ratio", "exposure_gap",
               "kendall_tau", "ndcg_at_10", "precision_at_10"]


def _echo_err(msg: str) -> None:
    click.echo(msg, err=True)


def _track(model, *, train_df, test_df, test_metrics, params, data_paths, register, run_name, experiment,
           track: bool) -> str | None:
    """Log a training run to MLflow (the embedded SQLite store unless MLFLOW_TRACKING_URI is set)."""
    if not track:
        if register:
            raise click.UsageError("--register needs tracking; drop --no-track")
        return None
    os.environ.setdefault("MLFLOW_DISABLE_TELEMETRY", "true")
    os.environ.setdefault("MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR", "false")
    os.environ.setdefault("MLFLOW_LOGGING_LEVEL", "WARNING")
    try:
        from fairltr.tracking import log_deltr_run
    except ImportError as exc:  # pragma: no cover - the tracking adapter ships with the package
        raise click.ClickException(f"MLflow tracking is unavailable ({exc}); use --no-track") from None
    run_id = log_deltr_run(model, train_df=train_df, test_df=test_df, test_metrics=test_metrics, params=params,
                           data_paths=data_paths, register=register, run_name=run_name, experiment=experiment)
    _echo_err(f"MLflow run {run_id} logged to {_tracking_uri()}" + (f"; registered as {register!r}" if register else ""))
    return run_id


def _tracking_uri() -> str:
    import mlflow

    return mlflow.get_tracking_uri()


@train.command("deltr")
@click.option("--train", "train_path", required=True, type=click.Path(dir_okay=False), help="training ranking file")
@click.option("--test", "test_path", type=click.Path(dir_okay=False), help="test ranking file (metrics + predictions)")
@click.option("--gamma", type=float, required=True, help="weight of the exposure penalty (0 = standard ListNet)")
@click.option("--colorblind", is_flag=True, help="drop the group column from the features")
@click.option("--features", help="comma-separated feature columns (default: every numeric column but query/judgment)")
@click.option("--fairness-loss", default="exposure_hinge", show_default=True, help="registered ranking fairness loss")
@click.option("--optimizer", type=click.Choice(["lbfgs", "adam"]), default="lbfgs", show_default=True)
@click.option("--max-iter", type=int, default=None, help="iterations (default 200 lbfgs / 3000 adam)")
@click.option("--lr", type=float, default=None, help="learning rate (default 1.0 lbfgs / 0.01 adam)")
@click.option("--l2", type=float, default=0.0, show_default=True, help="L2 penalty on the weights")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda, cuda:1 ...")
@click.option("--fair-preprocess", "fair_p", type=float, default=None,
              help="FA*IR pre-processing: re-rank every training list with target proportion P first")
@click.option("--fair-alpha", type=float, default=0.1, show_default=True, help="FA*IR significance for --fair-preprocess")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="outputs/deltr", show_default=True)
@click.option("--model-format", type=click.Choice(["json", "safetensors"]), default="json", show_default=True)
@click.option("--register", default=None, help="register the model in the MLflow registry under this name")
@click.option("--experiment", default="fairltr", show_default=True, help="MLflow experiment")
@click.option("--no-track", is_flag=True, help="do not log to MLflow")
@data_options()
def train_deltr(train_path, test_path, gamma, colorblind, features, fairness_loss, optimizer, max_iter, lr, l2, seed,
                device, fair_p, fair_alpha, out_dir, model_format, register, experiment, no_track, fmt, query, group,
                judgment):
    """Train a DELTR ranker; print test metrics; write model, ranked predictions and metrics to --out."""
    from fairltr.deltr import DELTR
    from fairltr.io import write_table
    from fairltr.metrics import evaluate_ranking

    train_df = read_data(train_path, fmt, query, group, judgment)
    if fair_p is not None:
        from fairltr.fair import fair_preprocess

        train_df = fair_preprocess(train_df, fair_p, fair_alpha, query=query, group=group, judgment=judgment)
    feats = [f.strip() for f in features.split(",")] if features else None
    model = DELTR(gamma, protected=group, colorblind=colorblind, l2=l2, optimizer=optimizer, max_iter=max_iter,
                  lr=lr, seed=seed, device=device, fairness_loss=fairness_loss)
    model.fit(train_df, query=query, judgment=judgment, features=feats, progress=sys.stderr.isatty())
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    model_path = model.save(out / f"model.{model_format}")
    metrics = None
    test_df = None
    if test_path:
        test_df = read_data(test_path, fmt, query, group, judgment)
        metrics = evaluate_ranking(test_df, model.predict(test_df), query=query, group=group, judgment=judgment)
        write_table(model.rank(test_df, query=query), out / "predictions.csv")
        (out / "metrics.json").write_text(json.dumps(metrics, indent=1))
        click.echo(metrics_table({"test": metrics}, KEY_METRICS))
    click.echo(f"model: {model_path}  ({model.n_iter_} iterations, objective {model.history[-1]['total']:.6g})")
    params = {"fair_preprocess_p": fair_p, "fair_alpha": fair_alpha if fair_p is not None else None}
    _track(model, train_df=train_df, test_df=test_df, test_metrics=metrics, params=params,
           data_paths={"train": train_path, "test": test_path}, register=register,
           run_name=f"deltr gamma={gamma:g}" + (" colorblind" if colorblind else ""), experiment=experiment,
           track=not no_track)


@cli.command("evaluate")
@click.option("--model", "model_path", required=True, type=click.Path(dir_okay=False), help="model.json / .safetensors")
@click.option("--data", "data_path", required=True, type=click.Path(dir_okay=False), help="ranking file to evaluate on")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), help="write metrics JSON here")
@click.option("--predictions", type=click.Path(dir_okay=False), help="write the ranked data here (CSV/Parquet)")
@click.option("--k", "ks", default="1,5,10,20,100", show_default=True, help="cut-offs for ndcg/precision")
@data_options()
def evaluate_cmd(model_path, data_path, out_path, predictions, ks, fmt, query, group, judgment):
    """Score a ranking file with a saved DELTR model and print SPEC's metrics."""
    from fairltr.deltr import DELTR
    from fairltr.io import write_table
    from fairltr.metrics import evaluate_ranking

    model = DELTR.load(model_path)
    df = read_data(data_path, fmt, query, group, judgment)
    try:
        k = tuple(int(x) for x in ks.split(","))
    except ValueError:
        raise click.BadParameter(f"--k must be comma-separated integers, got {ks!r}") from None
    metrics = evaluate_ranking(df, model.predict(df), query=query, group=group, judgment=judgment, k=k)
    click.echo(metrics_table({Path(data_path).name: metrics}, KEY_METRICS + [f"ndcg_at_{x}" for x in k if x != 10]))
    if out_path:
        Path(out_path).parent.mkdir(parents=True, exist_ok=True)
        Path(out_path).write_text(json.dumps(metrics, indent=1))
    if predictions:
        write_table(model.rank(df, query=query), predictions)


@cli.command("quickstart")
@click.option("--queries", type=int, default=60, show_default=True, help="number of synthetic queries")
@click.option("--candidates", type=int, default=40, show_default=True, help="candidates per query")
@click.option("--protected-share", type=float, default=0.3, show_default=True)
@click.option("--bias", type=float, default=1.0, show_default=True, help="how far protected are pushed down in training")
@click.option("--gamma", type=float, default=1e3, show_default=True, help="DELTR's gamma")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="outputs/quickstart", show_default=True)
@click.option("--experiment", default="fairltr-quickstart", show_default=True, help="MLflow experiment")
@click.option("--no-track", is_flag=True, help="do not log to MLflow")
def quickstart(queries, candidates, protected_share, bias, gamma, seed, out_dir, experiment, no_track):
    """The main job on embedded defaults: synthetic biased data -> standard, colorblind and DELTR -> comparison."""
    from fairltr.deltr import DELTR
    from fairltr.io import write_table
    from fairltr.metrics import evaluate_ranking
    from fairltr.synthetic import make_biased_rankings

    train_df, test_df = make_biased_rankings(queries, candidates, protected_share, bias=bias, seed=seed)
    out = Path(out_dir)
    write_table(train_df, out / "train.csv")
    write_table(test_df, out / "test.csv")
    click.echo(f"synthetic data: {queries} queries x {candidates} candidates, protected share {protected_share}, "
               f"training bias {bias} (equal merit, protected placed below) -> {out}/train.csv, test.csv")
    models = {
        "standard (gamma=0)": DELTR(0.0, seed=seed),
        "colorblind": DELTR(0.0, colorblind=True, seed=seed),
        f"DELTR (gamma={gamma:g})": DELTR(gamma, seed=seed),
    }
    results = {}
    for name, model in models.items():
        model.fit(train_df, progress=sys.stderr.isatty())
        metrics = evaluate_ranking(test_df, model.predict(test_df))
        results[name] = metrics
        slug = name.split(" ")[0].lower()
        model.save(out / f"model_{slug}.json")
        write_table(model.rank(test_df), out / f"predictions_{slug}.csv")
        _track(model, train_df=train_df, test_df=test_df, test_metrics=metrics, params={"synthetic_bias": bias},
               data_paths=None, register=None, run_name=name, experiment=experiment, track=not no_track)
    click.echo(metrics_table(results, KEY_METRICS))
    (out / "comparison.json").write_text(json.dumps(results, indent=1))
    std, fair = results["standard (gamma=0)"], results[f"DELTR (gamma={gamma:g})"]
    click.echo(f"\nDELTR moved exposure_ratio {std['exposure_ratio']:.3f} -> {fair['exposure_ratio']:.3f} "
               f"(1.0 = equal exposure) at kendall_tau {std['kendall_tau']:.3f} -> {fair['kendall_tau']:.3f}.")
    if not no_track:
        click.echo(f"Runs are in MLflow ({_tracking_uri()}); browse them with: "
                   f"mlflow ui --backend-store-uri {_tracking_uri()}")


@reproduce.command("deltr")
@click.option("--data", "data_dir", required=True, type=click.Path(file_okay=False),
              help="the paper's layout (e.g. ../shared/data/deltr-experiments)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="outputs/reproduce-deltr", show_default=True)
@click.option("--datasets", default="law-gender,law-race,trec", show_default=True)
@click.option("--no-fair", is_flag=True, help="skip the FA*IR pre/post-processing rows")
@click.option("--fair-alpha", type=float, default=0.1, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--track/--no-track", default=False, show_default=True, help="log the table and figure to MLflow")
def reproduce_deltr(data_dir, out_dir, datasets, no_fair, fair_alpha, seed, track):
    """Reproduce the DELTR paper's table (ours beside the paper's numbers) as CSV + Markdown."""
    from fairltr.reproduce import check_bounds, run_reproduction, to_markdown

    table = run_reproduction(data_dir, [d.strip() for d in datasets.split(",") if d.strip()],
                             with_fair=not no_fair, fair_alpha=fair_alpha, seed=seed, progress=_echo_err)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    table.to_csv(out / "reproduction.csv", index=False)
    md = to_markdown(table)
    checks = check_bounds(table)
    md += "\n| required result | holds | measured |\n|---|---|---|\n" + "".join(
        f"| {c} | {'yes' if ok else 'NO'} | {m} |\n" for c, ok, m in checks)
    (out / "reproduction.md").write_text(md)
    click.echo(md)
    from fairltr.reproduce import figure1

    fig = figure1(table)
    fig.savefig(out / "relevance_vs_exposure.png", dpi=120, bbox_inches="tight")
    click.echo(f"written: {out / 'reproduction.csv'}, {out / 'reproduction.md'}, {out / 'relevance_vs_exposure.png'}")
    if track:
        import mlflow

        from fairltr.tracking import configure

        configure("fairltr-reproduce")
        with mlflow.start_run(run_name="reproduce deltr", nested=mlflow.active_run() is not None):
            mlflow.log_artifact(str(out / "reproduction.csv"))
            mlflow.log_artifact(str(out / "reproduction.md"))
            mlflow.log_figure(fig, "relevance_vs_exposure.png")
            for _, r in table.iterrows():
                key = f"{r['dataset']}/{r['setting'].split(' (')[0]}".replace(" ", "_").replace("*", "").replace("=", "")
                for c in ("exposure_ratio", "kendall_tau"):
                    if math.isfinite(r[c]):
                        mlflow.log_metric(f"{key}/{c}", float(r[c]))
    if not all(ok for _, ok, _ in checks):
        raise click.ClickException("some of the paper's qualitative results did not hold (see the table)")
