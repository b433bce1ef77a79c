"""The import-linter contract of the core names every core module: a module added to ``fairltr/``
outside the adapter, workflow and CLI packages must be listed in pyproject's core contract, or
the contract would silently not cover it. The CLI contract forbids every core module but the
few it may import (:data:`CLI_MAY_IMPORT`), and lets through only a registry's declarations."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE_CORE = {"tracking", "workflows", "cli", "__init__", "__main__"}


def _contract(name_start: str) -> dict:
    """The one import-linter contract of pyproject whose name starts with ``name_start``."""
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (found,) = [c for c in contracts if c["name"].startswith(name_start)]
    return found


def _core_contract() -> dict:
    return _contract("core imports no adapter")


def test_the_core_contract_lists_every_core_module():
    listed = set(_core_contract()["source_modules"])
    present = {f"fairltr.{p.stem}" for p in (ROOT / "fairltr").glob("*.py")}
    present |= {f"fairltr.{p.parent.name}" for p in (ROOT / "fairltr").glob("*/__init__.py")}
    core = {m for m in present if m.split(".")[1] not in OUTSIDE_CORE}
    assert core - listed == set(), f"add to pyproject's core contract: {sorted(core - listed)}"
    assert listed - core == set(), f"listed but not in fairltr/: {sorted(listed - core)}"


def test_the_core_contract_forbids_every_adapter_and_engine():
    forbidden = set(_core_contract()["forbidden_modules"])
    assert {"fairltr.tracking", "fairltr.workflows", "fairltr.cli", "lightning_modules", "tuning",
            "mlflow", "lightning", "optuna", "transformers", "click"} <= forbidden


# what the CLI may import of the core besides the workflows: the plugin declarations and the neutral
# modules a console script needs (errors, start-up and Ctrl-C handling, URI redaction, column names)
CLI_MAY_IMPORT = {"fairltr.plugins", "fairltr.errors", "fairltr.startup", "fairltr.interrupts",
                  "fairltr.redaction", "fairltr.columns"}
CLI_DECLARATIONS = {"fairltr.losses.builtin", "fairltr.losses.plugins"}  # a registry's declaration modules


def _cli_contract() -> dict:
    return _contract("CLI imports only workflows")


def test_the_cli_contract_forbids_every_other_core_module_adapter_and_engine():
    forbidden = set(_cli_contract()["forbidden_modules"])
    core = set(_core_contract()["source_modules"])
    assert core - CLI_MAY_IMPORT - forbidden == set(), "add to the CLI contract's forbidden_modules"
    assert forbidden & CLI_MAY_IMPORT == set()
    assert {"fairltr.tracking", "lightning_modules", "tuning", "torch", "mlflow", "optuna", "lightning",
            "pytorch_lightning", "transformers"} <= forbidden


def test_the_cli_contract_lets_through_only_declarations():
    ignored = {rule.split("->")[1].strip() for rule in _cli_contract().get("ignore_imports", [])}
    assert ignored <= CLI_DECLARATIONS, sorted(ignored - CLI_DECLARATIONS)
