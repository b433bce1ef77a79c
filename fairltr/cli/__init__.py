"""Console script ``fairltr``. Each command family lives in its own module and registers on
:data:`fairltr.cli.app.cli`; heavy libraries are imported inside the commands only."""

from __future__ import annotations

import importlib

from fairltr.cli.app import cli, run

# command modules, one per area; each adds its commands to ``cli`` when imported
_COMMAND_MODULES = (
    "fairltr.cli.deltr_commands",   # train deltr, evaluate, quickstart, reproduce
    "fairltr.cli.fair_commands",    # rerank (FA*IR)
    "fairltr.cli.tracking_commands",  # promote, MLflow helpers
    "fairltr.cli.dpr_commands",     # train dpr, evaluate-retrieval
    "fairltr.cli.sweep_commands",   # sweep (Optuna)
)

for _name in _COMMAND_MODULES:
    try:
        importlib.import_module(_name)
    except ModuleNotFoundError as _exc:  # an area not installed yet must not break the others
        if _exc.name != _name:
            raise


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``fairltr`` console script."""
    run(argv)


__all__ = ["cli", "main"]
