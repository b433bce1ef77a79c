"""``fairltr audit``: an NYC Local Law 144 bias audit summary (parse, call the workflow, print)."""

from __future__ import annotations

import click

from fairltr.cli.app import cli
from fairltr.cli.option_rules import option_rules, used_when

__all__ = ["audit_command"]

_SCORING = lambda v: v["method"] == "scoring"  # noqa: E731
_TRACKED = lambda v: v["model_uri"] is not None and not v["no_track"]  # noqa: E731

AUDIT_RULES = {
    "k": used_when(lambda v: not _SCORING(v), "--k is the selection cut-off; --method scoring uses the median"),
    "median": used_when(_SCORING, "--median applies to --method scoring"),
    "n_boot": used_when(lambda v: bool(v["ci"]), "--n-boot sets the bootstrap resamples; no interval is drawn "
                                                 "with --ci 0"),
    "ci_seed": used_when(lambda v: bool(v["ci"]), "--ci-seed seeds the bootstrap; no interval is drawn with --ci 0"),
    "allow_unverified": used_when(lambda v: v["model_uri"] is not None,
                                  "--allow-unverified accepts --model-uri's model without a digest; give --model-uri"),
    "experiment": used_when(_TRACKED, "--experiment names the MLflow run of a --model-uri audit; nothing is logged "
                                      "without --model-uri or with --no-track"),
    "no_track": used_when(lambda v: v["model_uri"] is not None,
                          "--no-track: only a --model-uri audit is logged to MLflow"),
}
"""When each option of ``audit`` applies (:mod:`fairltr.cli.option_rules`)."""


@cli.command("audit")
@click.option("--data", "data_path", required=True, type=click.Path(dir_okay=False),
              help="table of candidates (CSV or Parquet; a Parquet table with a score or rank column is streamed)")
@click.option("--score-column", default=None, help="score of each row (higher = ranked first)")
@click.option("--rank-column", default=None, help="rank of each row in its ranking (1 = top)")
@click.option("--model-uri", default=None,
              help="score the table with this model (models:/NAME/V or models:/NAME@ALIAS; verified as promote does)")
@click.option("--allow-unverified", is_flag=True, help="accept a model without a recorded digest")
@click.option("--query", default="qid", show_default=True, help="ranking id column (a job posting, a requisition)")
@click.option("--group", "group", multiple=True, required=True,
              help="group attribute column, repeatable: --group sex --group race (their intersection is sex:race)")
@click.option("--judgment", default=None, help="outcome column (optional; not part of the LL144 summary)")
@click.option("--method", type=click.Choice(["selection", "scoring"]), default="selection", show_default=True,
              help="selection: selection rate in the top --k; scoring: share scoring above the median")
@click.option("--k", "k", type=int, default=10, show_default=True, help="selection cut-off per ranking")
@click.option("--median", type=click.Choice(["whole", "per-query"]), default="whole", show_default=True,
              help="the scoring rate's median: of the whole audited sample, or of each ranking")
@click.option("--unknown-value", "unknown_values", multiple=True,
              help="group value counted as unknown, repeatable: --unknown-value '' (empty cells) "
                   "--unknown-value 'Decline to state'")
@click.option("--exclude-small-categories", "exclusion_reason", default=None, metavar="REASON",
              help="leave categories under --min-category-share out of the impact ratios, for this stated reason "
                   "(without it they stay in, flagged); their counts and rates are always reported")
@click.option("--min-category-share", type=float, default=0.02, show_default=True,
              help="share of the audited individuals under which a category is small (the rule's 2%)")
@click.option("--time-column", default=None, help="date or time of each row (ISO 8601): the audit's period")
@click.option("--ci", "ci", type=float, default=0.95, show_default=True,
              help="confidence level of the bootstrap intervals over rankings (0 = none)")
@click.option("--n-boot", type=int, default=2000, show_default=True, help="bootstrap resamples (with --ci)")
@click.option("--ci-seed", type=int, default=0, show_default=True, help="bootstrap seed (with --ci)")
@click.option("--out", "out_dir", default="outputs/bias_audit", show_default=True, help="output folder")
@click.option("--experiment", default="fairltr-bias-audit", show_default=True, help="MLflow experiment")
@click.option("--no-track", is_flag=True, help="do not log the audit to MLflow nor tag the model version")
@option_rules(AUDIT_RULES, always=("data_path", "score_column", "rank_column", "model_uri", "query", "group",
                                   "judgment", "method", "unknown_values", "exclusion_reason", "min_category_share",
                                   "time_column", "ci", "out_dir"))
def audit_command(data_path, score_column, rank_column, model_uri, allow_unverified, query, group, judgment, method,
                  k, median, unknown_values, exclusion_reason, min_category_share, time_column, ci, n_boot, ci_seed,
                  out_dir, experiment, no_track):
    """Write an NYC Local Law 144 bias audit summary (bias_audit.json, .csv, .html): selection or
    scoring rates and impact ratios per sex, race and their intersection; the categories kept in the
    ratios with an impact ratio under 0.8 are named (the summary is written either way)."""
    from pathlib import Path

    from fairltr.cli.options import ranking_columns
    from fairltr.workflows.bias_audit import BiasAuditConfig, bias_audit

    cfg = BiasAuditConfig(
        data=Path(data_path), columns=ranking_columns(query, group, judgment), method="scoring" if method == "scoring"
        else "selection@k", k=k, median=median, score_column=score_column, rank_column=rank_column,
        model_uri=model_uri, allow_unverified=allow_unverified, unknown_values=tuple(unknown_values),
        exclusion_reason=exclusion_reason, min_category_share=min_category_share, time_column=time_column, ci=ci,
        n_boot=n_boot, seed=ci_seed, out_dir=Path(out_dir), experiment=experiment, track=not no_track)
    res = bias_audit(cfg)
    for line in res.below:
        click.echo(f"impact ratio under 0.8: {line}")
    for attribute in res.undefined:
        click.echo(f"impact ratio undefined for {attribute}: no category has a {'scoring' if method == 'scoring' else 'selection'}"
                   " rate above 0")
    verdict = (f"{len(res.below)} categories under 0.8" if res.below else
               f"UNDEFINED for {', '.join(res.undefined)}" if res.undefined else "PASS")
    click.echo(f"{res.summary['n_individuals']} individuals, {res.summary['method']}: {verdict}; "
               f"summary sha256 {res.sha256}; outputs in {cfg.out_dir}")
    if res.run_id:
        click.echo(f"MLflow run {res.run_id}; tagged {res.summary['model']['name']} version "
                   f"{res.summary['model']['version']}")
