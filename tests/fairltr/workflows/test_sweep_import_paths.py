"""The sweep modules split to break their import circle (issue 33, item 6) keep every name at the
path it had, and the declarations never reach the lookups: ``sweep_methods`` and ``sweep_trials``
import ``sweep_declaration``, never ``sweep_registry`` or ``sweep``."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

WORKFLOWS = Path(__file__).resolve().parents[3] / "fairltr" / "workflows"

BEFORE = {  # each module's __all__ before the split
    "sweep": ["RankingTrial", "DprTrial", "PLRankTrial", "RankingPlan", "RankingContext", "ranking_trial", "dpr_trial",
              "run_sweep_job", "mean_over_folds", "RANKING_METHODS"],
    "sweep_registry": ["SweepInputs", "SweepMethod", "RankingContext", "RankingPlan", "register_sweep_method",
                       "unregister_sweep_method", "get_sweep_method", "sweep_method_names", "sweep_methods",
                       "methods_markdown", "DATA_KINDS", "SWEEP_METHODS"],
}


@pytest.mark.parametrize("module", sorted(BEFORE))
def test_every_name_keeps_its_path(module):
    mod = importlib.import_module(f"fairltr.workflows.{module}")
    assert [n for n in BEFORE[module] if not hasattr(mod, n)] == []


def test_the_trials_and_the_registry_are_the_same_objects_under_every_path():
    from fairltr.workflows import sweep, sweep_declaration, sweep_registry, sweep_trials

    assert sweep.RankingTrial is sweep_trials.RankingTrial and sweep.ranking_trial is sweep_trials.ranking_trial
    assert sweep_registry.SWEEP_METHODS is sweep_declaration.SWEEP_METHODS
    assert sweep.RankingPlan is sweep_registry.RankingPlan is sweep_declaration.RankingPlan


@pytest.mark.parametrize("module", ["sweep_declaration", "sweep_methods", "sweep_trials"])
def test_the_declarations_never_import_the_lookups(module):
    tree = ast.parse((WORKFLOWS / f"{module}.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    imported |= {f"{n.module}.{a.name}" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    assert imported & {"fairltr.workflows.sweep", "fairltr.workflows.sweep_registry",
                        "fairltr.workflows.sweep_plugins"} == set()  # the lookups, under either name
