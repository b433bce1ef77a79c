"""``fairltr train plrank``: parse options, call :func:`fairltr.workflows.train_plrank`, print."""

from __future__ import annotations

import sys

import click

from fairltr.cli.app import train
from fairltr.cli.deltr_commands import KEY_METRICS, _echo_err, _tracked_line
from fairltr.cli.formatting import metrics_table, warn_constant_model
from fairltr.cli.option_rules import option_rules, reading_rules, tracking_rules, used_when
from fairltr.cli.options import (
    data_options, feature_options, parse_features, ranker_output_options, tracking_from, tracking_options,
    train_test_options, train_test_sources,
)
from fairltr.losses.builtin import LAMBDA


@train.command("plrank")
@train_test_options()
@click.option("--lambda", "lam", type=float, default=LAMBDA.default, show_default=True,  # the declaration's
              help="fairness weight: E[DCG] - lambda x disparity (0 = plain E[DCG])")
@click.option("--samples", type=int, default=16, show_default=True, help="rankings sampled per query and iteration")
@click.option("--cutoff", type=int, default=None,
              help="optimise DCG@K: positions past K get no DCG weight and no exposure (default: the whole ranking)")
@click.option("--estimator", type=click.Choice(["plrank", "plrank_plain", "reinforce"]), default="plrank",
              show_default=True, help="gradient estimator: PL-Rank-2 with the position baseline, PL-Rank-2 as "
              "published, or REINFORCE with a leave-one-out baseline")
@click.option("--disparity", type=click.Choice(["squared", "hinge"]), default="squared", show_default=True,
              help="squared: (a0 - ap)^2; hinge: max(0, a0 - ap) (only a protected deficit)")
@click.option("--merit", is_flag=True,
              help="exposure per unit of merit (mean judgment >= 0): merit-proportional exposure")
@feature_options()
@click.option("--optimizer", type=click.Choice(["adam", "sgd"]), default="adam", show_default=True)
@click.option("--max-iter", type=int, default=None, help="iterations (default 300)")
@click.option("--lr", type=float, default=None, help="learning rate (default 0.05 adam / 0.01 sgd)")
@click.option("--l2", type=float, default=0.0, show_default=True, help="L2 penalty on the weights")
@click.option("--eval-samples", type=int, default=100, show_default=True,
              help="rankings sampled per test query for the policy's figures (seeded by --seed)")
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--device", default="auto", show_default=True, help="auto, cpu, cuda, cuda:1 ...")
@click.option("--serve-sample", is_flag=True,
              help="the logged pyfunc serves a ranking sampled from the policy per request, seeded by the "
                   "request's request_id param (replays give the same ranking) instead of the mean-score ranking")
@ranker_output_options("outputs/plrank")
@tracking_options("fairltr", register=True, serve_rerank=True)
@data_options()
@option_rules({
    "disparity": used_when(lambda v: v["lam"] != 0, "--disparity shapes the fairness term --lambda weighs; with "
                                                    "--lambda 0 it is not trained"),
    "merit": used_when(lambda v: v["lam"] != 0, "--merit shapes the fairness term --lambda weighs; with --lambda 0 "
                                                "it is not trained"),
    **tracking_rules(register=True, serve_rerank=True),
    "serve_sample": used_when(lambda v: not v["no_track"],
                              "--serve-sample is recorded with the logged model; nothing is logged with --no-track"),
    **reading_rules(lambda v: (v["train_path"], v["test_path"])),
}, always=("train_path", "test_path", "lam", "samples", "cutoff", "estimator", "colorblind", "features", "optimizer",
           "max_iter", "lr", "l2", "eval_samples", "seed", "device", "out_dir", "model_format", "no_track", "fmt",
           "query", "group", "judgment", "item"))
def train_plrank_cmd(train_path, test_path, lam, samples, cutoff, estimator, disparity, merit, colorblind, features,
                     optimizer, max_iter, lr, l2, eval_samples, seed, device, serve_sample, out_dir, model_format, experiment,
                     no_track, register, serve_rerank, fmt, query, group, judgment, item):
    """Train a Plackett-Luce ranking policy (PL-Rank / Fair-PG-Rank) for E[DCG] - lambda x disparity of
    expected exposure; print the test metrics of its mean-score ranking and of the policy itself
    (from --eval-samples sampled rankings per query); write model, predictions and metrics."""
    from pathlib import Path

    from fairltr.workflows import PLRankSpec, TrainPLRankConfig, train_plrank
    from fairltr.workflows.train_plrank import POLICY_METRIC_KEYS

    spec = PLRankSpec(
        lam=lam, samples=samples, cutoff=cutoff, estimator=estimator, disparity=disparity, merit=merit,
        colorblind=colorblind, features=parse_features(features), optimizer=optimizer, max_iter=max_iter, lr=lr, l2=l2,
        seed=seed, device=device, eval_samples=eval_samples,
    )
    train_source, test_source = train_test_sources(train_path, test_path, fmt, query, group, judgment, item)
    cfg = TrainPLRankConfig(
        train=train_source, spec=spec, test=test_source, out_dir=Path(out_dir), model_format=model_format,
        tracking=tracking_from(experiment, no_track, register, serve_rerank=serve_rerank,
                               serve_sample=serve_sample),
        progress=sys.stderr.isatty(),
    )
    res = train_plrank(cfg, echo=_echo_err)
    if res.metrics is not None:
        click.echo(metrics_table({"test": res.metrics}, KEY_METRICS))
        click.echo(f"the policy ({eval_samples} sampled rankings per query):")
        click.echo(metrics_table({"policy": res.metrics}, POLICY_METRIC_KEYS))
        warn_constant_model(res.metrics)
    model = res.model
    last = model.history[-1]
    click.echo(f"model: {res.model_path}  ({model.n_iter_} iterations, sampled objective {last['total']:.6g}: "
               f"E[DCG] {last['dcg']:.6g}, disparity {last['disparity']:.4g})")
    _tracked_line(res.run_id, res.tracking_uri, register, res.registered_version)
