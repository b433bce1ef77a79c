"""A throwaway plugin distribution for tests: one module and its ``*.dist-info`` (METADATA,
``entry_points.txt``) written into a folder put first on ``sys.path``, which is how an
installed package declares fairltr plugins (``importlib.metadata`` finds its entry points).

Used by the loss-registry, the search-space and the third-party plugin tests (one helper, not
one copy per test)."""

from __future__ import annotations

import contextlib
import importlib
import sys
import textwrap
from pathlib import Path
from typing import Iterator, Mapping

__all__ = ["plugin_distribution"]


@contextlib.contextmanager
def plugin_distribution(folder: Path, monkeypatch, module: str, source: str,
                        entry_points: Mapping[str, Mapping[str, str]]) -> Iterator[Path]:
    """Write ``<module>.py`` (``source``, dedented) and ``<module>-0.1.dist-info`` declaring
    ``entry_points`` (``{group: {name: "module:attr"}}``) into ``folder``, put ``folder`` on
    ``sys.path`` (``monkeypatch`` takes it off after the test) and yield ``folder``; on exit the
    module is dropped from ``sys.modules``. Registries cache their scans: reset them inside."""
    (folder / f"{module}.py").write_text(textwrap.dedent(source))
    dist = folder / f"{module}-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("".join(
        f"[{group}]\n" + "".join(f"{name} = {target}\n" for name, target in points.items())
        for group, points in entry_points.items()))
    monkeypatch.syspath_prepend(str(folder))
    importlib.invalidate_caches()
    try:
        yield folder
    finally:
        sys.modules.pop(module, None)
