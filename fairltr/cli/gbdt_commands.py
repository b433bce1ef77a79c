"""``fairltr train lambdamart``: LightGBM's lambdarank through the same workflow, evaluator,
outputs and MLflow logging as ``train deltr``: parse options, call one workflow, print."""

from __future__ import annotations

import click

from fairltr.cli.app import train
from fairltr.cli.deltr_commands import KEY_METRICS, _echo_err, _tracked_line
from fairltr.cli.formatting import metrics_table
from fairltr.cli.options import data_options, ranking_source, tracking_from, tracking_options


@train.command("lambdamart")
@click.option("--train", "train_path", required=True, type=click.Path(dir_okay=False), help="training ranking file")
@click.option("--test", "test_path", type=click.Path(dir_okay=False), help="test ranking file (metrics + predictions)")
@click.option("--colorblind", is_flag=True, help="drop the group column from the features")
@click.option("--features", help="comma-separated feature columns (default: every column but query/judgment/item)")
@click.option("--num-leaves", type=int, default=31, show_default=True, help="leaves per tree")
@click.option("--learning-rate", type=float, default=0.1, show_default=True, help="shrinkage")
@click.option("--n-estimators", type=int, default=100, show_default=True, help="boosting rounds (trees)")
@click.option("--min-data-in-leaf", type=int, default=20, show_default=True, help="minimum rows per leaf")
@click.option("--grades", type=int, default=5, show_default=True,
              help="relevance grades for judgments that are not integers 0..30 (training-set quantiles)")
@click.option("--threads", "num_threads", type=int, default=1, show_default=True, help="LightGBM threads (0: all)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--fair-preprocess", "fair_p", type=float, default=None,
              help="FA*IR pre-processing: re-rank every training list with target proportion P first")
@click.option("--fair-alpha", type=float, default=0.1, show_default=True, help="FA*IR significance for --fair-preprocess")
@click.option("--out", "out_dir", type=click.Path(file_okay=False), default="outputs/lambdamart", show_default=True)
@tracking_options("fairltr", register=True, serve_rerank=True)
@data_options()
def train_lambdamart(train_path, test_path, colorblind, features, num_leaves, learning_rate, n_estimators,
                     min_data_in_leaf, grades, num_threads, seed, fair_p, fair_alpha, out_dir, experiment, no_track,
                     register, serve_rerank, fmt, query, group, judgment, item):
    """Train a LambdaMART ranker (LightGBM lambdarank; needs fairltr[gbdt]); print test metrics; write
    model.json + LightGBM's model.txt, ranked predictions and metrics to --out."""
    from pathlib import Path

    from fairltr.gbdt import GBDTParams
    from fairltr.workflows import FairParams, RankerSpec, TrainRankerConfig, train_ranker

    spec = RankerSpec(
        ranker="lambdamart", colorblind=colorblind, seed=seed,
        features=tuple(f.strip() for f in features.split(",") if f.strip()) if features else None,
        gbdt=GBDTParams(num_leaves=num_leaves, learning_rate=learning_rate, n_estimators=n_estimators,
                        min_data_in_leaf=min_data_in_leaf, grades=grades, num_threads=num_threads),
        fair_pre=FairParams(fair_p, fair_alpha) if fair_p is not None else None, device="cpu",
    )
    cfg = TrainRankerConfig(
        train=ranking_source(train_path, fmt, query, group, judgment, item), spec=spec,
        test=ranking_source(test_path, fmt, query, group, judgment, item) if test_path else None,
        out_dir=Path(out_dir), tracking=tracking_from(experiment, no_track, register, serve_rerank=serve_rerank),
    )
    res = train_ranker(cfg, echo=_echo_err)
    if res.metrics is not None:
        click.echo(metrics_table({"test": res.metrics}, KEY_METRICS))
    model = res.model
    last = model.history[-1]["ndcg_at_10"] if model.history else float("nan")
    click.echo(f"model: {res.model_path} + {Path(res.model_path).with_suffix('.txt').name}  "
               f"({model.n_iter_} trees, {model.label_mode_} labels, training ndcg@10 {last:.4g})")
    _tracked_line(res.run_id, res.tracking_uri, register, res.registered_version)
