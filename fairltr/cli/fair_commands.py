"""``fairltr rerank`` (FA*IR or Geyik et al.'s re-rankers on a scored table) and ``fairltr fair mtable``: parse
options, call one workflow, print."""

from __future__ import annotations

import math
from pathlib import Path

import click

from fairltr.cli.app import FairltrGroup, cli
from fairltr.cli.option_rules import option_rules, reading_rules, used_when
from fairltr.cli.options import data_options, ranking_columns, read_settings


def _echo_shares(res, label: str) -> None:
    """Each category's top-k share before and after the re-ranking, with ``label`` (the target
    or minimum share) beside them."""
    width = max(len(key) for key in res.before) + 2
    click.echo(f"{'':{width}s}{'before':>10s}{'after':>10s}{label:>10s}")
    for key in res.before:
        click.echo(f"{key:{width}s}{_fmt(res.before[key]):>10s}{_fmt(res.after[key]):>10s}{_fmt(res.target[key]):>10s}")


def _fmt(x: float) -> str:
    return "n/a" if isinstance(x, float) and math.isnan(x) else f"{x:.4f}"


def _fair(values) -> bool:
    return values["method"] == "fair"


def _one_group(values) -> str | None:
    groups = values["group"] or ()
    if len(groups) <= 1:
        return None
    return (f"--group: --method {values['method']} re-ranks on one group attribute, got {len(groups)} "
            f"({', '.join(groups)}); give one --group (for their intersection, add a column that combines them)")


RERANK_RULES = {
    "p": used_when(_fair, lambda v: f"--p applies to --method fair; {v['method']} takes --target"),
    "alpha": used_when(_fair, lambda v: f"--alpha applies to --method fair (FA*IR's significance); {v['method']} "
                                        "takes --target"),
    "no_adjust": used_when(_fair, lambda v: f"--no-adjust applies to --method fair (FA*IR's multiple-testing "
                                            f"adjustment); {v['method']} runs no test"),
    "target": used_when(lambda v: not _fair(v), "--target applies to the Geyik methods; FA*IR takes --p"),
    "judgment": used_when(_fair, lambda v: f"--judgment feeds FA*IR's before/after exposure metrics; {v['method']} "
                                           "reports category shares only"),
    "group": _one_group,
    **reading_rules(lambda v: (v["input_path"],)),
}
"""When each option of ``rerank`` applies (:mod:`fairltr.cli.option_rules`)."""


@cli.command("rerank")
@click.option("--input", "input_path", required=True, type=click.Path(dir_okay=False),
              help="scored ranking table (CSV with header, Parquet, DELTR CSV or LETOR)")
@click.option("--scores-col", default="score", show_default=True, help="column with the model's scores")
@click.option("--method", type=click.Choice(["fair", "detgreedy", "detcons", "detrelaxed", "detconstsort"]),
              default="fair", show_default=True,
              help="fair: FA*IR on a binary group (>= 1 protected); the others: Geyik et al. (KDD 2019) on any "
                   "number of categories")
@click.option("--p", "p", default=None,
              help="FA*IR: target proportion of protected candidates, in (0, 1), on a binary group (required with "
                   "--method fair); or, for a group with several protected categories, their minimum shares: "
                   "'A=0.2,B=0.1' (multinomial FA*IR, in (0, 1), together below 1)")
@click.option("--alpha", type=float, default=0.1, show_default=True, help="FA*IR: significance of the fairness test, in (0, 1)")
@click.option("--target", default=None,
              help="Geyik methods: target shares, e.g. 'race=Black:0.3,White:0.5,Asian:0.2' (default: each "
                   "query's own category mix)")
@click.option("--k", type=int, default=None, help="re-rank each query's top k (default: the whole list)")
@data_options("input format", group_help="group column: FA*IR reads >= 1 as protected (binary, one --group); the "
                                         "Geyik methods take any category values",
              judgment_help="judgment column (only for the summary's metrics; optional)",
              item_help="item id column (duplicates per query are an error)")
@click.option("--no-adjust", is_flag=True, help="use alpha as is (no multiple-testing adjustment)")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="output table (.csv or .parquet): every row, re-ranked, with score, rank, fair_feasible")
@option_rules(RERANK_RULES, always=("input_path", "scores_col", "method", "k", "query", "item", "fmt", "out_path"))
def rerank_command(input_path, scores_col, method, p, alpha, target, k, query, group, judgment, item, fmt, no_adjust,
                   out_path) -> None:
    """Re-rank every query of a scored table: FA*IR (default) or DetGreedy / DetCons / DetRelaxed /
    DetConstSort."""
    from fairltr.workflows import RerankConfig, rerank_file

    if method == "fair" and p is None:
        raise click.UsageError("--p is required with --method fair")
    res = rerank_file(RerankConfig(Path(input_path), Path(out_path), p, alpha, k, scores_col, fmt,
                                   ranking_columns(query, group, judgment, item), adjust=not no_adjust,
                                   method=method, target=target, **read_settings()))
    if method == "fair" and res.target is not None:  # multinomial FA*IR: category shares, minimums beside
        click.echo(f"method: fair (multinomial)  queries: {res.n_queries}  infeasible (a protected category ran "
                   f"out): {res.n_infeasible}")
        _echo_shares(res, "minimum")
    elif method == "fair":
        click.echo(f"queries: {res.n_queries}  infeasible (protected ran out): {res.n_infeasible}")
        click.echo(f"{'':24s}{'before':>10s}{'after':>10s}")
        for key in res.before:
            click.echo(f"{key:24s}{_fmt(res.before[key]):>10s}{_fmt(res.after[key]):>10s}")
    else:
        click.echo(f"method: {method}  queries: {res.n_queries}  infeasible (target not met at some prefix): "
                   f"{res.n_infeasible}")
        _echo_shares(res, "target")
    click.echo(f"wrote {res.n_rows} rows to {res.out_path}")


@cli.group("fair", cls=FairltrGroup)
def fair_group() -> None:
    """FA*IR tools: the ranked group fairness test's mtable."""


@fair_group.command("mtable")
@click.option("--k", type=int, required=True, help="ranking length (positions 1..k)")
@click.option("--p", "p", type=float, required=True, help="target proportion of protected candidates, in (0, 1)")
@click.option("--alpha", type=float, default=0.1, show_default=True, help="significance, in (0, 1)")
@click.option("--no-adjust", is_flag=True, help="use alpha as is (no multiple-testing adjustment)")
@option_rules({}, always=("k", "p", "alpha", "no_adjust"))
def mtable_command(k, p, alpha, no_adjust) -> None:
    """Print m(1..k), alpha_c and the exact fail probability."""
    from fairltr.workflows import mtable_report

    r = mtable_report(k, p, alpha, adjust=not no_adjust)
    click.echo(f"k = {k}  p = {p:g}  alpha = {alpha:g}  adjusted = {'yes' if r['adjusted'] else 'no'}")
    click.echo(f"alpha_c = {r['alpha_c']!r}")
    click.echo(f"fail probability = {r['fail_probability']:.6f}")
    click.echo("m = " + " ".join(str(int(v)) for v in r["mtable"]))
