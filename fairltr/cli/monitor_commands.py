"""``fairltr monitor``: the audit of served rankings over time windows (parse, call the
workflow, print)."""

from __future__ import annotations

import sys

import click

from fairltr.cli.app import cli
from fairltr.cli.option_rules import audit_rules, option_rules, reading_rules, tracking_rules, used_when
from fairltr.cli.options import (audit_config, audit_options, group_option, ranking_columns, read_settings,
                                 reading_options, stack, tracking_from)

__all__ = ["monitor_command"]


MONITOR_RULES = {
    **audit_rules(intervals=lambda v: bool(v["ci"]) or v["confidence"] is not None,
                  intervals_need="--ci or --confidence"),
    "ci": used_when(lambda v: v["confidence"] is None,
                    "--ci: --confidence sets the interval level the gates are checked at"),
    "confidence": used_when(lambda v: bool(v["gates"]),
                            "--confidence checks the --gate bounds on their intervals; without --gate give --ci"),
    "allow_unverified": used_when(lambda v: v["model_uri"] is not None,
                                  "--allow-unverified accepts --model-uri's model without a digest; give --model-uri"),
    **tracking_rules(),
    **reading_rules(lambda v: (v["data_path"],), fmt=None),
}
"""When each option of ``monitor`` applies (:mod:`fairltr.cli.option_rules`)."""


@cli.command("monitor")
@click.option("--data", "data_path", default=None, type=click.Path(dir_okay=False),
              help="table of served rankings (CSV or Parquet; Parquet is read in batches)")
@click.option("--decision-log", "decision_log", default=None, metavar="URI",
              help="audit a served model's decision log (a folder of Parquet shards or postgresql://...?table=NAME) "
                   "instead of --data: columns time, query_id, rank and the logged group columns")
@click.option("--model-uri", default=None,
              help="score raw candidates with this model (models:/NAME/V, models:/NAME@ALIAS; verified before use); "
                   "without it the table's --rank-column (or --score-column) is the ranking")
@click.option("--time-column", default=None, help="timestamp of each row (ISO 8601 dates or times); required with "
                                                    "--data ('time' in a decision log)")
@click.option("--time-format", default=None, metavar="FORMAT",
              help="strptime format of dates written with numbers only, which are refused without it "
                   "(07/01/2026: %d/%m/%Y or %m/%d/%Y)")
@click.option("--time-unit", default=None, type=click.Choice(["s", "ms", "us", "ns"]),
              help="what numeric timestamps count since 1970-01-01 UTC (required for them)")
@click.option("--window", required=True, help="window length: 24h, 7d, 2w, 1mo, 1y")
@click.option("--query", default="query_id", show_default=True, help="query (ranking) id column")
@group_option("group attribute column, repeatable: --group race --group sex (integer or string categories; "
              "several give their intersection too)")
@click.option("--judgment", default=None, help="outcome / judgment column (optional: merit figures need it)")
@click.option("--item", default=None, help="candidate id column (unique within a ranking; never a feature)")
@stack(reading_options())
@click.option("--rank-column", default=None, help="served rank (1 = top) of each row [default: rank, unless --model-uri scores]")
@click.option("--score-column", default=None, help="served score of each row (higher = ranked first) instead of ranks")
@click.option("--k", "k", type=int, default=10, show_default=True, help="selection cut-off of the impact ratio")
@audit_options(ci_default=0.95, what="every window's figures")
@click.option("--gate", "gates", multiple=True,
              help="promotion gate checked per window, repeatable: four_fifths@10, 'exposure_ratio_worst>=0.8'")
@click.option("--confidence", type=float, default=None,
              help="control the chance of any false FAIL over the run's windows x gates x categories at this level "
                   "(Holm over one-sided tests of the four-fifths gates; e.g. 0.95); windows the data cannot decide "
                   "say 'insufficient evidence'")
@click.option("--reference", default=None, type=click.Path(dir_okay=False),
              help="training table to compare each window's category mix and feature means with "
                   "(default: the profile recorded with --model-uri's training run)")
@click.option("--allow-unverified", is_flag=True, help="accept a model without a recorded digest")
@click.option("--out", "out_dir", default="outputs/monitor", show_default=True, help="output folder")
@click.option("--experiment", default="fairltr-monitor", show_default=True, help="MLflow experiment")
@click.option("--no-track", is_flag=True, help="do not log to MLflow (and do not tag the model version)")
@option_rules(MONITOR_RULES, always=("data_path", "decision_log", "model_uri", "time_column", "time_format",
                                     "time_unit", "window", "query", "group", "judgment", "item", "rank_column",
                                     "score_column", "k", "gates", "reference", "out_dir", "no_track"))
def monitor_command(data_path, decision_log, model_uri, time_column, time_format, time_unit, window, query, group,
                    judgment, item, rank_column, score_column, k,
                    ci, min_category_share, n_boot, ci_seed, gates, confidence, reference, allow_unverified, out_dir,
                    experiment, no_track):
    """Audit served rankings per time window: each window passes, fails or has insufficient evidence;
    exit 1 naming every failing window and category."""
    from pathlib import Path

    from fairltr.workflows.monitor import MonitorConfig, monitor

    if data_path is not None and decision_log is None and time_column is None:
        raise click.UsageError("--time-column is required with --data")
    cfg = MonitorConfig(
        data=Path(data_path) if data_path else None, decision_log=decision_log, time_column=time_column, window=window,
        time_format=time_format, time_unit=time_unit,
        columns=ranking_columns(query, group, judgment, item),
        audit=audit_config(k, ci, min_category_share, n_boot, ci_seed), out_dir=Path(out_dir), model_uri=model_uri,
        score_column=score_column, rank_column=rank_column, gates=tuple(gates), confidence=confidence,
        reference=Path(reference) if reference else None, allow_unverified=allow_unverified,
        tracking=tracking_from(experiment, no_track), **read_settings(),
    )
    res = monitor(cfg, echo=lambda line: click.echo(line, err=True))
    for failure in res.failures:
        click.echo(failure["line"])
    for line in res.record.get("insufficient", []):
        click.echo(line)
    click.echo(f"{len(res.windows)} windows through {res.record['through']}: {res.record['verdict']}; "
               f"outputs in {cfg.out_dir}")
    if res.run_id:
        click.echo(f"MLflow run {res.run_id}" + (f"; tagged {res.version[0]} version {res.version[1]}" if res.version else ""))
    if not res.passed:
        sys.exit(1)
