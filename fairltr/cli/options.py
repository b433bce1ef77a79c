"""Options and input reading shared by the data commands."""

from __future__ import annotations

from typing import Callable

import click

__all__ = ["data_options", "read_data"]


def data_options(format_help: str = "input format (auto: by suffix / first line)") -> Callable:
    """Decorator adding ``--format``, ``--query``, ``--group`` and ``--judgment``."""
    options = [
        click.option("--format", "fmt", type=click.Choice(["auto", "deltr", "letor", "csv", "parquet"]),
                     default="auto", show_default=True, help=format_help),
        click.option("--query", default="query_id", show_default=True, help="query id column"),
        click.option("--group", default="protected", show_default=True, help="group column (0 = non-protected)"),
        click.option("--judgment", default="judgment", show_default=True, help="judgment column (higher is better)"),
    ]

    def decorate(f: Callable) -> Callable:
        for opt in reversed(options):
            f = opt(f)
        return f

    return decorate


def read_data(path: str, fmt: str, query: str, group: str, judgment: str):
    """Read a ranking file; a header-less DELTR CSV's fixed names are renamed to the chosen ones."""
    from fairltr.io import read_ranking

    df = read_ranking(path, fmt, query=query, group=group, judgment=judgment)
    if "query_id" in df.columns and query not in df.columns:
        df = df.rename(columns={"query_id": query, "protected": group, "judgment": judgment})
    return df
