"""``fairltr rerank`` (FA*IR re-ranking of a scored table) and ``fairltr fair mtable``: parse
options, call one workflow, print."""

from __future__ import annotations

import math
from pathlib import Path

import click

from fairltr.cli.app import FairltrGroup, cli
from fairltr.cli.options import group_option, ranking_columns
from fairltr.columns import DEFAULT_COLUMNS


def _fmt(x: float) -> str:
    return "n/a" if isinstance(x, float) and math.isnan(x) else f"{x:.4f}"


@cli.command("rerank")
@click.option("--input", "input_path", required=True, type=click.Path(dir_okay=False),
              help="scored ranking table (CSV with header, Parquet, DELTR CSV or LETOR)")
@click.option("--scores-col", default="score", show_default=True, help="column with the model's scores")
@click.option("--p", "p", type=float, required=True, help="target proportion of protected candidates, in (0, 1)")
@click.option("--alpha", type=float, default=0.1, show_default=True, help="significance of the fairness test, in (0, 1)")
@click.option("--k", type=int, default=None, help="re-rank each query's top k (default: the whole list)")
@click.option("--query", default=DEFAULT_COLUMNS.query, show_default=True, help="query id column")
@group_option("group column (>= 1 = protected); FA*IR is binary: one --group (repeatable for the commands "
              "that audit several attributes)")
@click.option("--judgment", default=DEFAULT_COLUMNS.judgment, show_default=True,
              help="judgment column (only for the summary's metrics; optional)")
@click.option("--item", default=None, help="item id column (duplicates per query are an error)")
@click.option("--format", "fmt", type=click.Choice(["auto", "deltr", "letor", "csv", "parquet"]), default="auto",
              show_default=True, help="input format")
@click.option("--no-adjust", is_flag=True, help="use alpha as is (no multiple-testing adjustment)")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="output table (.csv or .parquet): every row, re-ranked, with score, rank, fair_feasible")
def rerank_command(input_path, scores_col, p, alpha, k, query, group, judgment, item, fmt, no_adjust, out_path) -> None:
    """FA*IR re-ranking of every query of a scored table."""
    from fairltr.workflows import RerankConfig, rerank_file

    res = rerank_file(RerankConfig(Path(input_path), Path(out_path), p, alpha, k, scores_col, fmt,
                                   ranking_columns(query, group, judgment, item), adjust=not no_adjust))
    click.echo(f"queries: {res.n_queries}  infeasible (protected ran out): {res.n_infeasible}")
    click.echo(f"{'':24s}{'before':>10s}{'after':>10s}")
    for key in res.before:
        click.echo(f"{key:24s}{_fmt(res.before[key]):>10s}{_fmt(res.after[key]):>10s}")
    click.echo(f"wrote {res.n_rows} rows to {res.out_path}")


@cli.group("fair", cls=FairltrGroup)
def fair_group() -> None:
    """FA*IR tools: the ranked group fairness test's mtable."""


@fair_group.command("mtable")
@click.option("--k", type=int, required=True, help="ranking length (positions 1..k)")
@click.option("--p", "p", type=float, required=True, help="target proportion of protected candidates, in (0, 1)")
@click.option("--alpha", type=float, default=0.1, show_default=True, help="significance, in (0, 1)")
@click.option("--no-adjust", is_flag=True, help="use alpha as is (no multiple-testing adjustment)")
def mtable_command(k, p, alpha, no_adjust) -> None:
    """Print m(1..k), alpha_c and the exact fail probability."""
    from fairltr.workflows import mtable_report

    r = mtable_report(k, p, alpha, adjust=not no_adjust)
    click.echo(f"k = {k}  p = {p:g}  alpha = {alpha:g}  adjusted = {'yes' if r['adjusted'] else 'no'}")
    click.echo(f"alpha_c = {r['alpha_c']!r}")
    click.echo(f"fail probability = {r['fail_probability']:.6f}")
    click.echo("m = " + " ".join(str(int(v)) for v in r["mtable"]))
