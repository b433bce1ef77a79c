"""One small registry for every pluggable kind (losses, metrics, re-rankers, rankers, sweep
methods): named declarations, registered in code or found through an entry-point group.

A :class:`PluginRegistry` (also a read-only mapping name -> declaration; :meth:`require` is
the lookup that fails with the choices) holds declarations of one type, keyed by their ``name`` attribute, in
declaration order. Built-ins are registered when their module is imported (``builtins``: the
modules imported on the first lookup, so that a lookup never misses a built-in whatever was
imported first); third-party packages declare an entry point in the registry's group
(``[project.entry-points."fairltr.rerankers"] mine = "pkg.module:DECLARATION"``), naming a
declaration or a zero-argument callable returning one (or a list of them). Entry points are
scanned once, on the first lookup; a broken plugin is logged and skipped, never fatal.

Every error is a one-line :class:`~fairltr.errors.ConfigError` naming the kind and the known names.
"""

from __future__ import annotations

import contextlib
import importlib
import logging
from importlib.metadata import entry_points
from typing import Callable, Generic, Iterator, TypeVar

from fairltr.errors import ConfigError

__all__ = ["PluginRegistry", "ENTRY_POINT_GROUPS"]

T = TypeVar("T")
_log = logging.getLogger(__name__)

ENTRY_POINT_GROUPS = {
    "fairness loss": "fairltr.losses",
    "metric": "fairltr.metrics",
    "re-ranker": "fairltr.rerankers",
    "ranker": "fairltr.rankers",
    "sweep method": "fairltr.sweep_methods",
}
"""The entry-point group of each kind of plugin."""


class PluginRegistry(Generic[T]):
    """Declarations of type ``cls`` (``kind`` names them in messages), found by ``name``.

    ``builtins``: modules imported before the first lookup (they register the built-in
    declarations); ``group``: the entry-point group (default: :data:`ENTRY_POINT_GROUPS` of
    ``kind``); ``check``: an extra check of a declaration against those registered (raises
    :class:`ConfigError`), e.g. two sweep methods with the same MLflow key."""

    def __init__(self, kind: str, cls: type, *, builtins: tuple[str, ...] = (), group: str | None = None,
                 check: Callable[[T, dict[str, T]], None] | None = None) -> None:
        self.kind, self.cls, self.builtins = kind, cls, tuple(builtins)
        self.group = group or ENTRY_POINT_GROUPS[kind]
        self._check = check
        self._items: dict[str, T] = {}
        self._builtins_loaded = False
        self._entry_points_loaded = False

    # -- declaring ---------------------------------------------------------------------------
    def register(self, item: T, *, replace: bool = False) -> T:
        """Add ``item``; a taken name is refused unless ``replace`` (or it is the same object)."""
        if not isinstance(item, self.cls):
            raise ConfigError(f"a {self.kind} plugin must be a {self.cls.__name__}, got {type(item).__name__}")
        name = getattr(item, "name")
        if name in self._items and not replace and self._items[name] is not item:
            raise ConfigError(f"a {self.kind} named {name!r} is already registered")
        if self._check is not None:
            self._check(item, {k: v for k, v in self._items.items() if k != name})
        self._items[name] = item
        return item

    def unregister(self, name: str) -> T | None:
        """Remove ``name`` (a no-op for an unknown one); returns what was removed."""
        return self._items.pop(name, None)

    @contextlib.contextmanager
    def temporary(self, item: T, *, replace: bool = False) -> Iterator[T]:
        """``item`` registered for the ``with`` block; the name holds what it held before afterwards."""
        name = getattr(item, "name")
        previous = self._items.get(name)
        self.register(item, replace=replace)
        try:
            yield item
        finally:
            if previous is None:
                self._items.pop(name, None)
            else:
                self._items[name] = previous

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        """Restore every declaration (and whether entry points were scanned) after the block."""
        saved = (dict(self._items), self._builtins_loaded, self._entry_points_loaded)
        try:
            yield
        finally:
            self._items.clear()
            self._items.update(saved[0])
            self._builtins_loaded, self._entry_points_loaded = saved[1], saved[2]

    # -- looking up ----------------------------------------------------------------------------
    def load(self) -> None:
        """Import the built-ins and scan the entry points (once each)."""
        if not self._builtins_loaded:
            self._builtins_loaded = True
            for module in self.builtins:
                importlib.import_module(module)
        if not self._entry_points_loaded:
            self._entry_points_loaded = True
            self._scan()

    def reload_entry_points(self) -> None:
        """Scan the entry points again (after installing a plugin at run time)."""
        self._entry_points_loaded = False
        self.load()

    def _scan(self) -> None:
        for ep in entry_points(group=self.group):
            try:
                obj = ep.load()
                made = obj() if callable(obj) and not isinstance(obj, self.cls) else obj
                for item in (made if isinstance(made, (list, tuple)) else [made]):
                    if getattr(item, "name", None) not in self._items:
                        self.register(item)
            except Exception as exc:  # a broken plugin must not break the library
                _log.warning("could not load %s plugin %r (%s): %s", self.kind, ep.name, ep.value, exc)

    def require(self, name: str) -> T:
        """The declaration called ``name``; the error lists the known names."""
        self.load()
        try:
            return self._items[name]
        except KeyError:
            raise ConfigError(f"unknown {self.kind} {name!r}; choose one of {self.names()}") from None

    def names(self) -> list[str]:
        """Every registered name, in declaration order."""
        self.load()
        return list(self._items)

    def declarations(self) -> list[T]:
        """Every declaration, in declaration order."""
        self.load()
        return list(self._items.values())

    # a read-only mapping of name -> declaration, too (``METRICS["ndcg"]``, ``sorted(METRICS)``)
    def __getitem__(self, name: str) -> T:
        self.load()
        return self._items[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def values(self) -> list[T]:
        return self.declarations()

    def keys(self) -> list[str]:
        return self.names()

    def items(self) -> list[tuple[str, T]]:
        return [(getattr(d, "name"), d) for d in self.declarations()]

    def get(self, name: str, default: T | None = None) -> T | None:
        """Mapping-style lookup: the declaration, or ``default`` (see :meth:`require`)."""
        self.load()
        return self._items.get(name, default)

    def __contains__(self, name: object) -> bool:
        self.load()
        return name in self._items

    def __len__(self) -> int:
        self.load()
        return len(self._items)

    def __repr__(self) -> str:
        return f"PluginRegistry({self.kind!r}, {len(self._items)} declared, group {self.group!r})"
