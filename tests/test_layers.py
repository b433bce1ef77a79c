"""The import-linter contract of the core names every core module: a module added to ``fairltr/``
outside the adapter, workflow and CLI packages must be listed in pyproject's core contract, or
the contract would silently not cover it."""

from __future__ import annotations

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUTSIDE_CORE = {"tracking", "workflows", "cli", "__init__", "__main__"}


def _core_contract() -> dict:
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    (core,) = [c for c in contracts if c["name"].startswith("core imports no adapter")]
    return core


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
