"""Lazy package exports: a package names what it re-exports and from which module, and the
module is imported on first use. ``import fairltr`` and the console script's start-up therefore
load neither torch nor pandas until a name that needs them is used."""

from __future__ import annotations

import importlib
import sys
import types
from typing import Any, Mapping

__all__ = ["lazy_exports"]


class _LazyPackage(types.ModuleType):
    """A package whose exports (``_lazy_exports``: name -> defining module) load on first access.

    A submodule named like one of its exports (``fairltr.workflows.quickstart`` defines
    ``quickstart``) keeps the export on the package once imported, as an eager
    ``from .quickstart import quickstart`` in ``__init__`` did."""

    def __getattr__(self, name: str) -> Any:
        module = self.__dict__.get("_lazy_exports", {}).get(name)
        if module is None:
            raise AttributeError(f"module {self.__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        super().__setattr__(name, value)
        return value

    def __setattr__(self, name: str, value: Any) -> None:
        exports = self.__dict__.get("_lazy_exports", {})
        if isinstance(value, types.ModuleType) and exports.get(name) == value.__name__ == f"{self.__name__}.{name}":
            value = getattr(value, name)
        super().__setattr__(name, value)

    def __dir__(self) -> list[str]:
        return sorted(set(self.__dict__) | set(self.__dict__.get("_lazy_exports", {})))


def lazy_exports(package: str, exports: Mapping[str, str]) -> None:
    """Make ``package`` (call from its ``__init__`` with ``__name__``) export each name of
    ``exports`` from the module (absolute name) it maps to, imported on first access."""
    module = sys.modules[package]
    module.__dict__["_lazy_exports"] = dict(exports)
    module.__class__ = _LazyPackage
