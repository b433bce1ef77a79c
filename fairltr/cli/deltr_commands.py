"""``fairltr train deltr``, ``evaluate``, ``quickstart`` and ``reproduce deltr``: parse options,
call one workflow, print."""

from __future__ import annotations

import sys

import click

from fairltr.cli.app import cli, reproduce, train
from fairltr.cli.formatting import metrics_table, warn_constant_model
from fairltr.cli.option_rules import (
    audit_rules, fair_preprocess_rules, given, option_rules, reading_rules, tracking_rules, used_when,
)
from fairltr.cli.options import (
    audit_config, audit_options, data_options, fair_preprocess_from, fair_preprocess_options, feature_options,
    parse_features, parse_ks, ranker_output_options, ranking_source, tracking_from, tracking_options,
    train_test_options, train_test_sources, wide_option, conventions_of, conventions_options,
)

KEY_METRICS = ["exposure_ratio", "exposure_disparity", "selection_ratio_at_10", "kendall_tau", "ndcg_at_10",
               "precision_at_10"]


def audit_columns(metrics, k: int, rest: list[str] | None = None) -> list[str]:
    """Table columns, the reader's order: the audit's worst cases (impact ratio at the audit's
    cut-off, worst exposure ratio), then exposure parity and relevance (``rest``, default
    :data:`KEY_METRICS`), then the per-attribute impact ratios (with several attributes), the
    disparate-treatment ratio and NDKL. Present keys only."""
    rest = KEY_METRICS if rest is None else rest
    per_attr = sorted(key for key in metrics if key.startswith(f"impact_ratio_at_{k}.")
                      and not key.endswith(("_ci_low", "_ci_high", "_n_queries")))
    if len(per_attr) < 2:  # one attribute: its figure is the headline's
        per_attr = []
    cols = [f"impact_ratio_at_{k}", "exposure_ratio_worst", *rest, *per_attr, "disparate_treatment_ratio",
            f"ndkl_at_{k}"]
    return [c for c in dict.fromkeys(cols) if c in metrics]


def _echo_err(msg: str) -> None:
    click.echo(msg, err=True)


def _tracked_line(run_id: str | None, uri: str | None, register: str | None = None, version: str | None = None) -> None:
    from fairltr.redaction import redact_uri

    if run_id:
        _echo_err(f"MLflow run {run_id} logged to {redact_uri(uri or '')}"
                  + (f"; registered as {register!r} version {version}" if register else ""))


def _lightning(values) -> bool:
    return values["engine"] == "lightning"


def _estimator_only(option: str, instead: str):
    return used_when(lambda v: not _lightning(v),
                     f"{option} applies to --engine estimator; --engine lightning {instead}")


def _lightning_only(option: str, instead: str):
    return used_when(_lightning, f"{option} applies to --engine lightning; the estimator engine {instead}")


TRAIN_DELTR_RULES = {
    "gamma": used_when(lambda v: v["gamma"] == 0 or v["fairness_loss"] != "none",
                       "--gamma weighs the fairness loss, and --fairness-loss none has none: use --gamma 0"),
    "fairness_loss": used_when(lambda v: v["gamma"] != 0 or v["fairness_loss"] == "none",
                               "--fairness-loss is weighted by --gamma; with --gamma 0 (ListNet) it is not trained"),
    "max_iter": _estimator_only("--max-iter", "takes --epochs"),
    "device": _estimator_only("--device", "takes --accelerator and --devices"),
    "reference_group": _estimator_only("--reference-group", "does not take it"),
    "epochs": _lightning_only("--epochs", "takes --max-iter"),
    "batch_queries": _lightning_only("--batch-queries", "trains on every query at once"),
    "accelerator": _lightning_only("--accelerator", "takes --device"),
    "devices": _lightning_only("--devices", "runs in one process (--device)"),
    # --num-nodes N > 1 without lightning: RankerSpec's one-line refusal (exit 1, before any file)
    "num_nodes": used_when(lambda v: _lightning(v) or v["num_nodes"] > 1,
                           "--num-nodes applies to --engine lightning; the estimator engine runs in one process"),
    "ddp_timeout": used_when(lambda v: _lightning(v) and v["num_nodes"] > 1,
                             "--ddp-timeout applies to --engine lightning with --num-nodes > 1 (the wait for the "
                             "other nodes)"),
    **fair_preprocess_rules(),
    **audit_rules(lambda v: bool(v["test_path"]), "no test metrics are computed without --test"),
    "wide": used_when(lambda v: bool(v["test_path"]), "--wide prints the test metrics; there are none without --test"),
    **tracking_rules(register=True, serve_rerank=True),
    **reading_rules(lambda v: (v["train_path"], v["test_path"])),
}
"""When each option of ``train deltr`` applies (:mod:`fairltr.cli.option_rules`)."""


@train.command("deltr")
@train_test_options("training ranking file (--engine lightning streams a .parquet file)")
@click.option("--gamma", type=float, required=True, help="weight of the exposure penalty (0 = standard ListNet)")
@feature_options()
@click.option("--fairness-loss", default="exposure_hinge", show_default=True, help="registered ranking fairness loss")
@click.option("--optimizer", type=click.Choice(["lbfgs", "adam"]), default="lbfgs", show_default=True,
              help="optimizer (--engine lightning: default lbfgs on full batches, else adam)")
@click.option("--max-iter", type=int, default=None, help="estimator: iterations (default 200 lbfgs / 3000 adam)")
@click.option("--lr", type=float, default=None, help="learning rate (default 1.0 lbfgs / 0.01 adam)")
@click.option("--l2", type=float, default=0.0, show_default=True, help="L2 penalty on the weights")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--device", default="auto", show_default=True, help="estimator: auto, cpu, cuda, cuda:1 ...")
@click.option("--engine", type=click.Choice(["estimator", "lightning"]), default="estimator", show_default=True,
              help="estimator: full-batch in memory; lightning: mini-batches of whole queries (Parquet streamed), DDP")
@click.option("--epochs", type=int, default=None, help="lightning: passes over the training queries")
@click.option("--batch-queries", type=int, default=None, help="lightning: queries per mini-batch (default: all)")
@click.option("--accelerator", default="auto", show_default=True, help="lightning: cpu, gpu, auto")
@click.option("--devices", type=int, default=1, show_default=True, help="lightning: processes (DDP when > 1)")
@click.option("--num-nodes", type=int, default=1, show_default=True,
              help="lightning: hosts of one DDP run, one process each; every host runs this command with "
                   "MASTER_ADDR, MASTER_PORT and NODE_RANK set")
@click.option("--ddp-timeout", type=float, default=None,
              help="lightning, --num-nodes > 1: seconds to wait for the other nodes (to join, or in one "
                   "all-reduce) before exiting with an error naming the node  [default: 600]")
@fair_preprocess_options()
@click.option("--reference-group", default=None,
              help="the first --group's reference category for DELTR's exposure hinge (default: 0 for integer "
                   "categories, the most frequent string category); e.g. --reference-group Caucasian")
@ranker_output_options("outputs/deltr")
@audit_options(what="the test metrics")
@wide_option()
@tracking_options("fairltr", register=True, serve_rerank=True)
@data_options()
@option_rules(TRAIN_DELTR_RULES, always=(
    "train_path", "test_path", "colorblind", "features", "optimizer", "lr", "l2", "seed", "engine", "fair_p",
    "out_dir", "model_format", "no_track", "fmt", "query", "group", "judgment", "item"))
def train_deltr(train_path, test_path, gamma, colorblind, features, fairness_loss, optimizer, max_iter, lr, l2, seed,
                device, engine, epochs, batch_queries, accelerator, devices, num_nodes, ddp_timeout, fair_p,
                fair_alpha, reference_group, out_dir, model_format, ci, min_category_share, n_boot, ci_seed, wide,
                experiment, no_track, register, serve_rerank, fmt, query, group, judgment, item):
    """Train a DELTR ranker; print test metrics; write model, ranked predictions and metrics to --out."""
    from pathlib import Path

    from fairltr.workflows import LightningOptions, RankerSpec, TrainRankerConfig, train_ranker

    spec = RankerSpec(
        gamma=gamma, colorblind=colorblind, fairness_loss=fairness_loss, features=parse_features(features),
        optimizer=optimizer, max_iter=max_iter, lr=lr, l2=l2, seed=seed, device=device,
        fair_pre=fair_preprocess_from(fair_p, fair_alpha), engine=engine,
        lightning=LightningOptions(epochs=epochs, batch_queries=batch_queries, accelerator=accelerator,
                                   devices=devices, num_nodes=num_nodes, ddp_timeout=ddp_timeout, lr=lr,
                                   # the engine picks its optimizer by batch shape unless one is given
                                   optimizer=optimizer if given(click.get_current_context(), "optimizer") else None),
        reference_group=(int(reference_group) if reference_group and reference_group.lstrip("-").isdigit()
                         else reference_group),
    )
    from fairltr.workflows.audit import default_audit_cutoff

    audit_k = default_audit_cutoff()
    audit = audit_config(audit_k, ci, min_category_share, n_boot, ci_seed)
    train_source, test_source = train_test_sources(train_path, test_path, fmt, query, group, judgment, item)
    cfg = TrainRankerConfig(
        train=train_source, spec=spec, test=test_source, out_dir=Path(out_dir), model_format=model_format,
        tracking=tracking_from(experiment, no_track, register, serve_rerank=serve_rerank),
        progress=sys.stderr.isatty(), audit=audit,
    )
    res = train_ranker(cfg, echo=_echo_err)
    if res.node_rank:
        return
    if res.metrics is not None:
        click.echo(metrics_table({"test": res.metrics}, audit_columns(res.metrics, audit_k), wide=wide))
        warn_constant_model(res.metrics)
    model = res.model
    click.echo(f"model: {res.model_path}  ({model.n_iter_} iterations, objective {model.history[-1]['total']:.6g})")
    _tracked_line(res.run_id, res.tracking_uri, register, res.registered_version)


@cli.command("evaluate")
@click.option("--model", "model_path", required=True, type=click.Path(dir_okay=False), help="model.json / .safetensors")
@click.option("--data", "data_path", required=True, type=click.Path(dir_okay=False), help="ranking file to evaluate on")
@click.option("--out", "out_path", type=click.Path(dir_okay=False), help="write metrics JSON here")
@click.option("--predictions", type=click.Path(dir_okay=False), help="write the ranked data here (.csv/.parquet)")
@click.option("--k", "ks", default="1,5,10,20,100", show_default=True,
              help="cut-offs for ndcg/precision; the audit's selection cut-off is 10 when listed, else the first")
@click.option("--audit", "audit_path", type=click.Path(dir_okay=False),
              help="write the audit table here (CSV): per attribute, category and intersection the counts, pooled "
                   "selection rates, impact ratios, exposure, merit, exclusions and their intervals")
@audit_options()
@conventions_options()
@wide_option()
@data_options()
@option_rules({**audit_rules(), **reading_rules(lambda v: (v["data_path"],))},
              always=("model_path", "data_path", "out_path", "predictions", "ks", "audit_path", "wide", "fmt",
                      "query", "group", "judgment", "item", "empty_queries", "linear_ndcg"))
def evaluate_cmd(model_path, data_path, out_path, predictions, ks, audit_path, ci, min_category_share, n_boot, ci_seed,
                 empty_queries, linear_ndcg, wide, fmt, query, group, judgment, item):
    """Score a ranking file with a saved DELTR model and print the metrics (with the group
    columns, SPEC 3b's audit too: impact ratios, worst-case exposure ratio, NDKL)."""
    from pathlib import Path

    from fairltr.workflows import EvaluateRankerConfig, evaluate_ranker
    from fairltr.workflows.audit import audit_cutoff

    k = parse_ks(ks)
    audit = audit_config(audit_cutoff(k), ci, min_category_share, n_boot, ci_seed)
    conventions = conventions_of(empty_queries, linear_ndcg)
    res = evaluate_ranker(EvaluateRankerConfig(
        Path(model_path), ranking_source(data_path, fmt, query, group, judgment, item), k=k,
        metrics_out=Path(out_path) if out_path else None, predictions_out=Path(predictions) if predictions else None,
        audit=audit, audit_out=Path(audit_path) if audit_path else None, conventions=conventions))
    linear = [f"ndcg_linear_at_{x}" for x in k] if linear_ndcg else []
    cols = audit_columns(res.metrics, audit.k, KEY_METRICS + [f"ndcg_at_{x}" for x in k if x != 10] + linear)
    click.echo(metrics_table({Path(data_path).name: res.metrics}, cols, wide=wide))
    click.echo(conventions.describe())
    warn_constant_model(res.metrics)
    if res.audit is not None and res.audit.interval:
        iv = res.audit.interval
        click.echo(f"intervals: {iv['level']:.0%} {iv.get('method', 'percentile')} bootstrap, {iv['n_boot']} resamples "
                   f"of {iv['unit']}, seed {iv['seed']}")
    if "audit" in res.files:
        click.echo(f"audit table: {res.files['audit']}")


@cli.command("quickstart")
@click.option("--queries", type=int, default=60, show_default=True, help="number of synthetic queries")
@click.option("--candidates", type=int, default=40, show_default=True, help="candidates per query")
@click.option("--protected-share", type=float, default=0.3, show_default=True)
@click.option("--bias", type=float, default=1.0, show_default=True, help="how far protected are pushed down in training")
@click.option("--gamma", type=float, default=1e3, show_default=True, help="DELTR's gamma")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="outputs/quickstart", show_default=True)
@tracking_options("fairltr-quickstart")
@option_rules(tracking_rules(), always=("queries", "candidates", "protected_share", "bias", "gamma", "seed", "out_dir",
                                        "no_track"))
def quickstart(queries, candidates, protected_share, bias, gamma, seed, out_dir, experiment, no_track):
    """The main job on embedded defaults: synthetic biased data -> standard, colorblind and DELTR -> comparison."""
    from pathlib import Path

    from fairltr.redaction import redact_uri
    from fairltr.workflows import QuickstartConfig, quickstart as run_quickstart

    cfg = QuickstartConfig(queries=queries, candidates=candidates, protected_share=protected_share, bias=bias,
                           gamma=gamma, seed=seed, out_dir=Path(out_dir),
                           tracking=tracking_from(experiment, no_track), progress=sys.stderr.isatty())
    res = run_quickstart(cfg, echo=click.echo)
    click.echo(f"wrote {', '.join(sorted(p.name for p in res.files.values()))} to {out_dir}")
    click.echo(metrics_table(res.results, KEY_METRICS))
    std, fair = res.standard, res.fair
    click.echo(f"\nDELTR moved exposure_ratio {std['exposure_ratio']:.3f} -> {fair['exposure_ratio']:.3f} "
               f"(1.0 = parity) at kendall_tau {std['kendall_tau']:.3f} -> {fair['kendall_tau']:.3f}.")
    if res.tracking_uri:
        from pathlib import Path as _Path

        mlflow_bin = _Path(sys.executable).with_name("mlflow")
        ui = f"{mlflow_bin if mlflow_bin.exists() else 'mlflow'} ui --backend-store-uri {redact_uri(res.tracking_uri)}"
        click.echo(f"Runs are in MLflow ({redact_uri(res.tracking_uri)}); browse them with: {ui}")


@reproduce.command("deltr")
@click.option("--data", "data_dir", required=True, type=click.Path(file_okay=False),
              help="the paper's layout (e.g. ../shared/data/deltr-experiments)")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="outputs/reproduce-deltr", show_default=True)
@click.option("--datasets", default="law-gender,law-race,trec", show_default=True)
@click.option("--no-fair", is_flag=True, help="skip the FA*IR pre/post-processing rows")
@click.option("--fair-alpha", type=float, default=0.1, show_default=True)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--track/--no-track", default=False, show_default=True, help="log the table and figure to MLflow")
@click.option("--experiment", default="fairltr-reproduce", show_default=True, help="MLflow experiment")
@option_rules({
    "fair_alpha": used_when(lambda v: not v["no_fair"], "--fair-alpha is the FA*IR rows' significance; --no-fair "
                                                        "skips those rows"),
    "experiment": used_when(lambda v: v["track"], "--experiment names the MLflow experiment; nothing is logged "
                                                  "without --track"),
}, always=("data_dir", "out_dir", "datasets", "no_fair", "seed", "track"))
def reproduce_deltr(data_dir, out_dir, datasets, no_fair, fair_alpha, seed, track, experiment):
    """Reproduce the DELTR paper's table (ours beside the paper's numbers) as CSV + Markdown."""
    from pathlib import Path

    from fairltr.workflows import ReproduceConfig, TrackingOptions, reproduce_deltr as run_reproduce

    cfg = ReproduceConfig(Path(data_dir), Path(out_dir), tuple(d.strip() for d in datasets.split(",") if d.strip()),
                          with_fair=not no_fair, fair_alpha=fair_alpha, seed=seed,
                          tracking=TrackingOptions(enabled=track, experiment=experiment))
    res = run_reproduce(cfg, echo=_echo_err)
    click.echo(res.markdown)
    click.echo("written: " + ", ".join(str(p) for p in res.files.values()))
    if res.run_id:
        _echo_err(f"MLflow run {res.run_id}")
    if not res.passed:
        raise click.ClickException("some of the paper's qualitative results did not hold (see the table)")
