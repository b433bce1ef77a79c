"""``fairltr rerank`` (FA*IR or Geyik et al.'s re-rankers on a scored table) and ``fairltr fair mtable``: parse
options, call one workflow, print."""

from __future__ import annotations

import math
from pathlib import Path

import click

from fairltr.cli.app import FairltrGroup, cli
from fairltr.cli.option_rules import option_rules, reading_rules, used_when
from fairltr.cli.options import DeclaredChoice, data_options, ranking_columns, read_settings


def _echo_shares(res, label: str) -> None:
    """Each category's top-k share before and after the re-ranking, with ``label`` (the target
    or minimum share) beside them."""
    width = max(len(key) for key in res.before) + 2
    click.echo(f"{'':{width}s}{'before':>10s}{'after':>10s}{label:>10s}")
    for key in res.before:
        click.echo(f"{key:{width}s}{_fmt(res.before[key]):>10s}{_fmt(res.after[key]):>10s}{_fmt(res.target[key]):>10s}")


def _fmt(x: float) -> str:
    return "n/a" if isinstance(x, float) and math.isnan(x) else f"{x:.4f}"


def _reranker_names() -> list[str]:
    """The declared re-rankers (:data:`fairltr.fair.rerankers.RERANKERS`, read through the workflow)."""
    from fairltr.workflows.fair import rerank_method_names

    return rerank_method_names()


_CLI_SETTINGS = {"p": "--p", "alpha": "--alpha", "adjust": "--no-adjust", "target": "--target", "k": "--k"}


def _decl(values):
    from fairltr.workflows.fair import rerank_declaration

    return rerank_declaration(values["method"])


def _takes(name: str):
    return lambda values: _decl(values).takes_setting(name)


def _taking(name: str) -> list:
    from fairltr.workflows.fair import rerank_declaration, rerank_method_names

    return [d for d in map(rerank_declaration, rerank_method_names()) if d.takes_setting(name)]


def _names(name: str) -> str:
    return ", ".join(d.name for d in _taking(name))


def _labels(name: str) -> str:
    """Who takes setting ``name`` in words: the shared label (``the Geyik methods``) or the names."""
    decls = _taking(name)
    labels = {d.label for d in decls}
    return labels.pop() if len(labels) == 1 and decls[0].label else "--method " + _names(name)


def _who(values) -> str:
    decl = _decl(values)
    return decl.label_text if sum(d.label == decl.label for d in _taking("k")) == 1 else decl.name


def _main(values) -> str:
    """What the method takes instead, as its option (``--target``, ``--setting NAME=VALUE``)."""
    main = _decl(values).main
    return _CLI_SETTINGS.get(main, f"--setting {main}=VALUE" if main != "no setting" else main)


def _one_group(values) -> str | None:
    groups = values["group"] or ()
    if len(groups) <= 1 or _decl(values).several_attributes:
        return None
    return (f"--group: --method {values['method']} re-ranks on one group attribute, got {len(groups)} "
            f"({', '.join(groups)}); give one --group (for their intersection, add a column that combines them)")


RERANK_RULES = {
    "p": used_when(_takes("p"), lambda v: f"--p applies to --method {_names('p')}; {v['method']} takes {_main(v)}"),
    "alpha": used_when(_takes("alpha"), lambda v: f"--alpha applies to --method {_names('alpha')} (FA*IR's "
                                                  f"significance); {v['method']} takes {_main(v)}"),
    "no_adjust": used_when(_takes("adjust"), lambda v: f"--no-adjust applies to --method {_names('adjust')} (FA*IR's "
                                                       f"multiple-testing adjustment); {v['method']} runs no test"),
    "target": used_when(_takes("target"), lambda v: f"--target applies to {_labels('target')}; {_who(v)} takes "
                                                    f"{_main(v)}"),
    "judgment": used_when(lambda v: not _decl(v).categories,
                          lambda v: f"--judgment feeds FA*IR's before/after exposure metrics; {v['method']} "
                                    "reports category shares only"),
    "group": _one_group,
    **reading_rules(lambda v: (v["input_path"],)),
}
"""When each option of ``rerank`` applies (:mod:`fairltr.cli.option_rules`), read from the
re-rankers' declarations (which settings each takes)."""


def _settings(values: tuple[str, ...], method: str) -> tuple[tuple[str, str], ...]:
    """``--setting NAME=VALUE`` pairs (a plugin re-ranker's declared settings; checked by the workflow)."""
    out = []
    for item in values:
        name, sep, value = item.partition("=")
        if not sep or not name.strip():
            raise click.UsageError(f"--setting takes NAME=VALUE (a setting --method {method} declares), got {item!r}")
        out.append((name.strip(), value.strip()))
    return tuple(out)


def _check_required(method: str, p, settings) -> None:
    from fairltr.workflows.fair import rerank_declaration

    given = {"p": p, **dict(settings)}
    for name in rerank_declaration(method).required:
        if given.get(name) is None:
            raise click.UsageError(f"{_CLI_SETTINGS.get(name, '--setting ' + name + '=VALUE')} is required with "
                                   f"--method {method}")


@cli.command("rerank")
@click.option("--input", "input_path", required=True, type=click.Path(dir_okay=False),
              help="scored ranking table (CSV with header, Parquet, DELTR CSV or LETOR)")
@click.option("--scores-col", default="score", show_default=True, help="column with the model's scores")
@click.option("--method", type=DeclaredChoice(_reranker_names), default="fair", show_default=True,
              help="fair: FA*IR on a binary group (>= 1 protected); detgreedy, detcons, detrelaxed, detconstsort: "
                   "Geyik et al. (KDD 2019) on any number of categories; any other: a plugin's declared re-ranker")
@click.option("--p", "p", default=None,
              help="FA*IR: target proportion of protected candidates, in (0, 1), on a binary group (required with "
                   "--method fair); or, for a group with several protected categories, their minimum shares: "
                   "'A=0.2,B=0.1' (multinomial FA*IR, in (0, 1), together below 1)")
@click.option("--alpha", type=float, default=0.1, show_default=True, help="FA*IR: significance of the fairness test, in (0, 1)")
@click.option("--target", default=None,
              help="Geyik methods: target shares, e.g. 'race=Black:0.3,White:0.5,Asian:0.2' (default: each "
                   "query's own category mix)")
@click.option("--k", type=int, default=None, help="re-rank each query's top k (default: the whole list)")
@click.option("--setting", "setting", multiple=True, metavar="NAME=VALUE",
              help="a plugin re-ranker's declared setting (repeatable)")
@data_options("input format", group_help="group column: FA*IR reads >= 1 as protected (binary, one --group); the "
                                         "Geyik methods take any category values",
              judgment_help="judgment column (only for the summary's metrics; optional)",
              item_help="item id column (duplicates per query are an error)")
@click.option("--no-adjust", is_flag=True, help="use alpha as is (no multiple-testing adjustment)")
@click.option("--out", "out_path", required=True, type=click.Path(dir_okay=False),
              help="output table (.csv or .parquet): every row, re-ranked, with score, rank, fair_feasible")
@option_rules(RERANK_RULES, always=("input_path", "scores_col", "method", "k", "setting", "query", "item", "fmt",
                                    "out_path"))
def rerank_command(input_path, scores_col, method, p, alpha, target, k, setting, query, group, judgment, item, fmt,
                   no_adjust, out_path) -> None:
    """Re-rank every query of a scored table: FA*IR (default), DetGreedy / DetCons / DetRelaxed /
    DetConstSort, or a plugin's re-ranker."""
    from fairltr.workflows import RerankConfig, rerank_file

    settings = _settings(setting, method)
    _check_required(method, p, settings)
    res = rerank_file(RerankConfig(Path(input_path), Path(out_path), p, alpha, k, scores_col, fmt,
                                   ranking_columns(query, group, judgment, item), adjust=not no_adjust,
                                   method=method, target=target, settings=settings, **read_settings()))
    _echo_result(res, method)


def _echo_result(res, method: str) -> None:
    if res.target is None:  # a binary re-ranker (FA*IR): the exposure metrics
        click.echo(f"queries: {res.n_queries}  infeasible (protected ran out): {res.n_infeasible}")
        click.echo(f"{'':24s}{'before':>10s}{'after':>10s}")
        for key in res.before:
            click.echo(f"{key:24s}{_fmt(res.before[key]):>10s}{_fmt(res.after[key]):>10s}")
    elif method == "fair":  # multinomial FA*IR: category shares, minimums beside
        click.echo(f"method: fair (multinomial)  queries: {res.n_queries}  infeasible (a protected category ran "
                   f"out): {res.n_infeasible}")
        _echo_shares(res, "minimum")
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
