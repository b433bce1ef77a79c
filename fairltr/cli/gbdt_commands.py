"""``fairltr train lambdamart``: LightGBM's lambdarank through the same workflow, evaluator,
outputs and MLflow logging as ``train deltr``: parse options, call one workflow, print."""

from __future__ import annotations

import click

from fairltr.cli.app import train
from fairltr.cli.deltr_commands import KEY_METRICS, _echo_err, _tracked_line
from fairltr.cli.formatting import metrics_table, warn_constant_model
from fairltr.cli.option_rules import fair_preprocess_rules, option_rules, reading_rules, tracking_rules
from fairltr.cli.options import (
    data_options, fair_preprocess_from, fair_preprocess_options, feature_options, parse_features,
    ranker_output_options, tracking_from, tracking_options, train_test_options, train_test_sources,
)


@train.command("lambdamart")
@train_test_options()
@feature_options()
@click.option("--num-leaves", type=int, default=31, show_default=True, help="leaves per tree")
@click.option("--learning-rate", type=float, default=0.1, show_default=True, help="shrinkage")
@click.option("--n-estimators", type=int, default=100, show_default=True, help="boosting rounds (trees)")
@click.option("--min-data-in-leaf", type=int, default=20, show_default=True, help="minimum rows per leaf")
@click.option("--grades", type=int, default=5, show_default=True,
              help="relevance grades for judgments that are not integers 0..30 (training-set quantiles)")
@click.option("--threads", "num_threads", type=int, default=1, show_default=True, help="LightGBM threads (0: all)")
@click.option("--seed", type=int, default=0, show_default=True)
@fair_preprocess_options()
@ranker_output_options("outputs/lambdamart", model_format=False)
@tracking_options("fairltr", register=True, serve_rerank=True)
@data_options()
@option_rules({
    **fair_preprocess_rules(),
    **tracking_rules(register=True, serve_rerank=True),
    **reading_rules(lambda v: (v["train_path"], v["test_path"])),
}, always=("train_path", "test_path", "colorblind", "features", "num_leaves", "learning_rate", "n_estimators",
           "min_data_in_leaf", "grades", "num_threads", "seed", "fair_p", "out_dir", "no_track", "fmt", "query",
           "group", "judgment", "item"))
def train_lambdamart(train_path, test_path, colorblind, features, num_leaves, learning_rate, n_estimators,
                     min_data_in_leaf, grades, num_threads, seed, fair_p, fair_alpha, out_dir, experiment, no_track,
                     register, serve_rerank, fmt, query, group, judgment, item):
    """Train a LambdaMART ranker (LightGBM lambdarank; needs fairltr[gbdt]); print test metrics; write
    model.json + LightGBM's model.txt, ranked predictions and metrics to --out."""
    from pathlib import Path

    from fairltr.workflows import GBDTParams, RankerSpec, TrainRankerConfig, train_ranker

    spec = RankerSpec(
        ranker="lambdamart", colorblind=colorblind, seed=seed, features=parse_features(features),
        gbdt=GBDTParams(num_leaves=num_leaves, learning_rate=learning_rate, n_estimators=n_estimators,
                        min_data_in_leaf=min_data_in_leaf, grades=grades, num_threads=num_threads),
        fair_pre=fair_preprocess_from(fair_p, fair_alpha), device="cpu",
    )
    train_source, test_source = train_test_sources(train_path, test_path, fmt, query, group, judgment, item)
    cfg = TrainRankerConfig(
        train=train_source, spec=spec, test=test_source, out_dir=Path(out_dir), tracking=tracking_from(experiment, no_track, register, serve_rerank=serve_rerank),
    )
    res = train_ranker(cfg, echo=_echo_err)
    if res.metrics is not None:
        click.echo(metrics_table({"test": res.metrics}, KEY_METRICS))
        warn_constant_model(res.metrics)
    model = res.model
    last = model.history[-1]["ndcg_at_10"] if model.history else float("nan")
    click.echo(f"model: {res.model_path} + {Path(res.model_path).with_suffix('.txt').name}  "
               f"({model.n_iter_} trees, {model.label_mode_} labels, training ndcg@10 {last:.4g})")
    _tracked_line(res.run_id, res.tracking_uri, register, res.registered_version)
