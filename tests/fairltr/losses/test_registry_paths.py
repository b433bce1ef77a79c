"""The loss registry split to break its import circle (issue 33, item 6): every name stays at
``fairltr.losses.registry``, the registry object is one, and the built-ins import the declaration
module, never the lookups that import them."""

from __future__ import annotations

import ast
from pathlib import Path

LOSSES = Path(__file__).resolve().parents[3] / "fairltr" / "losses"
BEFORE = ["HyperParam", "FairnessLoss", "register_loss", "unregister_loss", "get_loss", "available_losses",
          "reload_entry_points", "temporary_loss", "registry_snapshot", "ENTRY_POINT_GROUP", "FUSED_VARIANTS",
          "RETRIEVAL_INPUTS", "LOSSES"]


def test_every_name_keeps_its_path_and_the_registry_is_one():
    from fairltr.losses import declaration, registry

    assert [n for n in BEFORE if not hasattr(registry, n)] == []
    assert registry.LOSSES is declaration.LOSSES and registry._REGISTRY is declaration.LOSSES._items
    assert {"none", "exposure_hinge", "plrank", "lakda_kl"} <= set(registry.available_losses())


def test_the_builtins_never_import_the_lookups():
    tree = ast.parse((LOSSES / "builtin.py").read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imported & {"fairltr.losses.registry", "fairltr.losses.plugins"} == set()  # the lookups, either name
