"""Options shared by the data commands, and their translation into workflow inputs."""

from __future__ import annotations

from pathlib import Path
from typing import Callable

import click

from fairltr.columns import DEFAULT_COLUMNS

__all__ = ["data_options", "ranking_source", "parse_ks", "tracking_options", "tracking_from"]


def data_options(format_help: str = "input format (auto: by suffix / first line)", item: bool = True) -> Callable:
    """Decorator adding ``--format``, ``--query``, ``--group``, ``--judgment`` (and ``--item``)."""
    options = [
        click.option("--format", "fmt", type=click.Choice(["auto", "deltr", "letor", "csv", "parquet"]),
                     default="auto", show_default=True, help=format_help),
        click.option("--query", default=DEFAULT_COLUMNS.query, show_default=True, help="query id column"),
        click.option("--group", default=DEFAULT_COLUMNS.group, show_default=True,
                     help="group column (0 = non-protected)"),
        click.option("--judgment", default=DEFAULT_COLUMNS.judgment, show_default=True,
                     help="judgment column (higher is better)"),
    ]
    if item:
        options.append(click.option("--item", default=None,
                                    help="item (document) id column: never a feature; duplicates per query are an error"))

    def decorate(f: Callable) -> Callable:
        for opt in reversed(options):
            f = opt(f)
        return f

    return decorate


def ranking_source(path: str | Path, fmt: str, query: str, group: str, judgment: str, item: str | None = None):
    """A :class:`~fairltr.workflows.options.RankingSource` from the data options."""
    from fairltr.columns import RankingColumns
    from fairltr.workflows.options import RankingSource

    return RankingSource(Path(path), fmt, RankingColumns(query, group, judgment, item or None))


def parse_ks(text: str, option: str = "--k") -> tuple[int, ...]:
    """``"1,5,10"`` -> (1, 5, 10); every cut-off an integer >= 1."""
    try:
        ks = tuple(int(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise click.BadParameter(f"must be comma-separated integers, got {text!r}", param_hint=option) from None
    if not ks or any(k < 1 for k in ks):
        raise click.BadParameter(f"cut-offs must be integers >= 1, got {text!r}", param_hint=option)
    return ks


def tracking_options(experiment: str, register: bool = False, serve_rerank: bool = False) -> Callable:
    """Decorator adding ``--experiment``, ``--no-track`` (and ``--register NAME``; and
    ``--serve-rerank POLICY`` for rankers)."""
    options = [
        click.option("--experiment", default=experiment, show_default=True, help="MLflow experiment"),
        click.option("--no-track", is_flag=True, help="do not log to MLflow"),
    ]
    if register:
        options.append(click.option("--register", default=None,
                                    help="register the model in the MLflow registry under this name"))
    if serve_rerank:
        options.append(click.option("--serve-rerank", "serve_rerank", default=None, metavar="POLICY",
                                    help="post-processing the logged model applies when served, e.g. "
                                         "'fair:p=0.3,alpha=0.1[,k=10]' (FA*IR) or 'detconstsort:k=10'; "
                                         "request params override it"))

    def decorate(f: Callable) -> Callable:
        for opt in reversed(options):
            f = opt(f)
        return f

    return decorate


def tracking_from(experiment: str, no_track: bool, register: str | None = None, run_name: str | None = None,
                  serve_rerank: str | None = None):
    from fairltr.workflows.options import TrackingOptions

    return TrackingOptions(enabled=not no_track, experiment=experiment, register=register or None, run_name=run_name,
                           serve_rerank=serve_rerank)
