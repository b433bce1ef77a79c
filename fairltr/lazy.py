"""Lazy package exports: a package names what it re-exports and from which module, and the
module is imported on first use. ``import fairltr`` and the console script's start-up therefore
load neither torch nor pandas until a name that needs them is used.

Moved modules (:func:`moved_modules`): a package keeps the old names of its renamed submodules
as aliases, so ``import fairltr.tracking.registry.promotion`` still works and IS the module
``fairltr.tracking.model_registry.promotion`` (one module object: patching either name patches
both)."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.util
import sys
import types
from typing import Any, Mapping

__all__ = ["lazy_exports", "moved_modules"]


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


class _MovedModules(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module name (or one below it) and loads it as the module now at the new name."""

    def __init__(self) -> None:
        self.moves: dict[str, str] = {}
        self._specs: dict[str, Any] = {}  # old name -> the new module's own spec, put back after import

    def target(self, fullname: str) -> str | None:
        """The new name of ``fullname`` (None when it is no old name nor below one)."""
        for old, new in self.moves.items():
            if fullname == old or fullname.startswith(old + "."):
                return new + fullname[len(old):]
        return None

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> Any:
        new = self.target(fullname)
        if new is None or importlib.util.find_spec(new) is None:  # an old name of no module: not found
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec: Any) -> types.ModuleType:
        module = importlib.import_module(self.target(spec.name) or spec.name)
        self._specs[spec.name] = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Nothing to run (the module is the new name's, already executed); the import machinery
        set ``__spec__`` to the old name's: the module's own spec is put back (``find_spec``,
        ``reload`` and ``importlib.resources`` keep seeing the new name)."""
        original = self._specs.pop(getattr(module.__spec__, "name", ""), None)
        if original is not None:
            module.__spec__ = original


_MOVED = _MovedModules()


def moved_modules(package: str, moves: Mapping[str, str]) -> None:
    """Keep the old names of ``package``'s renamed submodules (call from its ``__init__`` with
    ``__name__``): ``moves`` maps an old submodule name to its new one, both relative to the
    package (``{"registry": "model_registry"}``); the old name, and every module below it,
    imports as the new one."""
    _MOVED.moves.update({f"{package}.{old}": f"{package}.{new}" for old, new in moves.items()})
    if _MOVED not in sys.meta_path:
        sys.meta_path.insert(0, _MOVED)
