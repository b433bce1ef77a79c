"""Console script ``fairltr``. Each command family lives in its own module and registers on
:data:`fairltr.cli.app.cli`; a command parses its options, calls one workflow
(:mod:`fairltr.workflows`) and prints. Heavy libraries are imported inside the workflows only."""

from __future__ import annotations

from fairltr.cli import deltr_commands, dpr_commands, fair_commands, sweep_commands, tracking_commands  # noqa: F401
from fairltr.cli.app import cli, run


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``fairltr`` console script."""
    run(argv)


__all__ = ["cli", "main"]
