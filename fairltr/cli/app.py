"""The ``fairltr`` click group and its error policy: user mistakes print one line, no traceback."""

from __future__ import annotations

import sys

import click

from fairltr.errors import FairltrError

__all__ = ["cli", "run", "train", "reproduce"]


class _Group(click.Group):
    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except FairltrError as exc:
            raise click.ClickException(str(exc)) from None
        except FileNotFoundError as exc:
            raise click.ClickException(f"file not found: {exc.filename or exc}") from None
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            sys.exit(130)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(package_name="fairltr")
def cli() -> None:
    """fairltr: fair learning to rank (DELTR, FA*IR, LaKDA) with MLflow, Optuna and Lightning."""


def run(argv: list[str] | None = None) -> None:
    cli.main(args=argv, prog_name="fairltr")


@cli.group(cls=_Group)
def train() -> None:
    """Train a ranker (deltr: linear DELTR; dpr: bi-encoder retrieval)."""


@cli.group(cls=_Group)
def reproduce() -> None:
    """Reproduce a paper's experiments on its own data."""
