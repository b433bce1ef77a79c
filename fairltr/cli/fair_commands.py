"""``fairltr rerank`` (FA*IR re-ranking of a scored table) and ``fairltr fair mtable``."""

from __future__ import annotations

import math

import click

from fairltr.cli.app import _Group, cli

EXPOSURE_KEYS = ("exposure_protected", "exposure_nonprotected", "exposure_ratio")


def _exposure(df, scores, query: str, group: str, judgment: str) -> dict[str, float]:
    """Exposure metrics of a ranking (a zero judgment column stands in when there is none)."""
    from fairltr.metrics import evaluate_ranking

    frame = df if judgment in df.columns else df.assign(**{judgment: 0.0})
    m = evaluate_ranking(frame, scores, query=query, group=group, judgment=judgment, k=(1,))
    return {key: m[key] for key in EXPOSURE_KEYS}


def _fmt(x: float) -> str:
    return "n/a" if isinstance(x, float) and math.isnan(x) else f"{x:.4f}"


@cli.command("rerank")
@click.option("--input", "input_path", required=True, type=click.Path(dir_okay=False),
              help="scored ranking table (CSV with header, Parquet, DELTR CSV or LETOR)")
@click.option("--scores-col", default="score", show_default=True, help="column with the model's scores")
@click.option("--p", "p", type=float, required=True, help="target proportion of protected candidates, in (0, 1)")
@click.option("--alpha", type=float, default=0.1, show_default=True, help="significance of the fairness test, in (0, 1)")
@click.option("--k", type=int, default=None, help="re-rank each query's top k (default: the whole list)")
@click.option("--query", default="query_id", show_default=True, help="query id column")
@click.option("--group", default="protected", show_default=True, help="group column (>= 1 = protected)")
@click.option("--judgment", default="judgment", show_default=True,
              help="judgment column (only for the summary's metrics; optional)")
@click.option("--format", "fmt", type=click.Choice(["auto", "deltr", "letor", "csv", "parquet"]), default="auto",
              show_default=True, help="input format")
@click.option("--no-adjust", is_flag=True, help="use alpha as is (no multiple-testing adjustment)")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="output table (.csv or .parquet): every row, re-ranked, with score, rank, fair_feasible")
def rerank_command(input_path, scores_col, p, alpha, k, query, group, judgment, fmt, no_adjust, out_path) -> None:
    """FA*IR re-ranking of every query of a scored table (SPEC §4)."""
    from fairltr.errors import DataError
    from fairltr.fair import check_params, rerank
    from fairltr.io import read_ranking, write_table

    check_params(k, p, alpha)
    df = read_ranking(input_path, fmt, query=query, group=group, judgment=None)
    if scores_col not in df.columns:
        raise DataError(f"{input_path}: score column {scores_col!r} not found; columns: {list(df.columns)}")
    before = _exposure(df, df[scores_col], query, group, judgment)
    out = rerank(df, scores_col, k=k, p=p, alpha=alpha, query=query, group=group, adjust=not no_adjust)
    after = _exposure(out, -out["rank"].to_numpy(dtype=float), query, group, judgment)
    write_table(out, out_path)
    feasible = out.groupby(query, sort=False)["fair_feasible"].first()
    click.echo(f"queries: {len(feasible)}  infeasible (protected ran out): {int((~feasible).sum())}")
    click.echo(f"{'':24s}{'before':>10s}{'after':>10s}")
    for key in EXPOSURE_KEYS:
        click.echo(f"{key:24s}{_fmt(before[key]):>10s}{_fmt(after[key]):>10s}")
    click.echo(f"wrote {len(out)} rows to {out_path}")


@cli.group("fair", cls=_Group)
def fair_group() -> None:
    """FA*IR tools: the ranked group fairness test's mtable."""


@fair_group.command("mtable")
@click.option("--k", type=int, required=True, help="ranking length (positions 1..k)")
@click.option("--p", "p", type=float, required=True, help="target proportion of protected candidates, in (0, 1)")
@click.option("--alpha", type=float, default=0.1, show_default=True, help="significance, in (0, 1)")
@click.option("--no-adjust", is_flag=True, help="use alpha as is (no multiple-testing adjustment)")
def mtable_command(k, p, alpha, no_adjust) -> None:
    """Print m(1..k), alpha_c and the exact fail probability."""
    from fairltr.fair import adjust_alpha, check_params, fail_probability, mtable

    check_params(k, p, alpha)
    alpha_c = alpha if no_adjust else adjust_alpha(k, p, alpha)
    table = mtable(k, p, alpha, adjust=not no_adjust)
    click.echo(f"k = {k}  p = {p:g}  alpha = {alpha:g}  adjusted = {'no' if no_adjust else 'yes'}")
    click.echo(f"alpha_c = {alpha_c!r}")
    click.echo(f"fail probability = {fail_probability(table, p):.6f}")
    click.echo("m = " + " ".join(str(int(v)) for v in table))
