"""The import-linter contracts, checked again on the graph import-linter cannot see (issue 33,
item 5, "contracts with teeth").

import-linter (grimp) reads import statements only: a lazy-export string or an
``importlib.import_module("...")`` target is invisible to it, so a core module could reach a
workflow through one and keep every contract. Here every contract of pyproject's
``[tool.importlinter]`` is checked on :mod:`tests.import_graph`'s graph, which adds those
on-demand edges (lazy-export map values, ``import_module`` targets, module strings of
declarations; see that module for the rule that tells them from ordinary text) to the
statement edges. Each contract type means what it means to import-linter:

* ``forbidden``: no module of ``source_modules`` (with its descendants, unless
  ``as_packages = false``) reaches a module of ``forbidden_modules`` -- by a chain of imports, or
  by one direct import where ``allow_indirect_imports = true``; ``ignore_imports`` edges are
  taken out first;
* ``layers`` (optionally inside each of ``containers``): no module of a lower layer reaches a
  higher one by a chain that does not pass through a third layer (that step is reported where it
  happens); siblings of a ``|`` layer are independent, those of a ``:`` layer are not.

Module expressions read ``*`` as one name and ``**`` as one or more, as import-linter does.
A violation reads ``a -> b (via lazy string) breaks contract 'NAME'``.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
from collections import deque
from pathlib import Path
from typing import Iterable, Mapping

import pytest

from tests.import_graph import (PACKAGES, ROOT, STRING_KINDS, Edge, import_graph, lazy_exports, module_edges,
                                top_level_names, unresolved_lazy_values)

Graph = Mapping[str, Iterable[Edge]]
_PREFERENCE = ("import", "function-local", "lazy string", "import_module", "declaration string")


def contracts(root: Path = ROOT) -> list[dict]:
    """The import-linter contracts of ``root``'s pyproject.toml."""
    return tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]["contracts"]


def _pattern(expression: str) -> re.Pattern[str]:
    parts = [r"[^.]+" if p == "*" else r"[^.]+(?:\.[^.]+)*" if p == "**" else re.escape(p)
             for p in expression.split(".")]
    return re.compile(r"\.".join(parts))


def _matching(expressions: Iterable[str], nodes: Iterable[str], as_packages: bool = True) -> set[str]:
    """The nodes an expression names: itself (or its wildcard matches) and, as packages, their descendants."""
    patterns = [_pattern(e) for e in expressions]
    found = set()
    for node in nodes:
        for pattern in patterns:
            if pattern.fullmatch(node) or (as_packages and any(
                    pattern.fullmatch(node[:i]) for i, c in enumerate(node) if c == ".")):
                found.add(node)
                break
    return found


def _adjacency(graph: Graph, ignore: Iterable[str] = ()) -> dict[str, dict[str, str]]:
    """importer -> {imported: kind}, without the ``ignore_imports`` edges and the implicit ones
    (grimp reads ``from p import m`` as an import of ``p.m`` only); of several edges between
    two modules the one import-linter can see names the kind."""
    rules = [tuple(_pattern(side.strip()) for side in rule.split("->")) for rule in ignore]
    adjacency: dict[str, dict[str, str]] = {}
    for importer, edges in graph.items():
        out = adjacency.setdefault(importer, {})
        for e in edges:
            if e.implicit or any(a.fullmatch(e.importer) and b.fullmatch(e.imported) for a, b in rules):
                continue
            old = out.get(e.imported)
            if old is None or _PREFERENCE.index(e.kind) < _PREFERENCE.index(old):
                out[e.imported] = e.kind
    return adjacency


def _chains(adjacency: dict[str, dict[str, str]], sources: set[str], targets: set[str],
            direct_only: bool = False, avoid: set[str] = frozenset()) -> list[list[tuple[str, str]]]:
    """The shortest chain ``[(module, kind of the edge into it), ...]`` to each target reached
    from ``sources`` (breadth first; never through ``avoid`` or through a target)."""
    previous: dict[str, tuple[str, str] | None] = {s: None for s in sources}
    queue = deque(sorted(sources))
    found = []
    while queue:
        node = queue.popleft()
        for nxt, kind in sorted(adjacency.get(node, {}).items()):
            if nxt in previous or nxt in avoid or nxt in sources:
                continue
            previous[nxt] = (node, kind)
            if nxt in targets:
                chain, at = [], nxt
                while previous[at] is not None:
                    chain.append((at, previous[at][1]))
                    at = previous[at][0]
                found.append([(at, "")] + chain[::-1])
            elif not direct_only:
                queue.append(nxt)
    return found


def _describe(chain: list[tuple[str, str]], contract: str) -> str:
    path = " -> ".join(m for m, _ in chain)
    return f"{path} (via {', '.join(k for _, k in chain[1:])}) breaks contract {contract!r}"


def _forbidden(contract: dict, adjacency: dict[str, dict[str, str]], nodes: set[str]) -> list[str]:
    as_packages = contract.get("as_packages", True)
    sources = _matching(contract["source_modules"], nodes, as_packages)
    targets = _matching(contract["forbidden_modules"], nodes, as_packages)
    direct = contract.get("allow_indirect_imports", False)
    return [_describe(c, contract["name"]) for c in _chains(adjacency, sources, targets, direct_only=direct)]


def _layers(contract: dict, adjacency: dict[str, dict[str, str]], nodes: set[str]) -> list[str]:
    found = []
    for container in contract.get("containers", [""]):
        prefix = f"{container}." if container else ""
        levels = []
        for layer in contract["layers"]:
            independent = "|" in layer
            names = [n.strip().strip("()") for n in re.split(r"[|:]", layer)]
            levels.append((independent, [_matching([prefix + n], nodes) for n in names]))
        every = set().union(*(s for _, siblings in levels for s in siblings))
        pairs = []  # (lower modules, higher modules): a forbidden direction
        for i, (independent, siblings) in enumerate(levels):
            pairs += [(low, high) for _, lower in levels[i + 1:] for low in lower for high in siblings]
            if independent:
                pairs += [(a, b) for a in siblings for b in siblings if a is not b]
        for low, high in pairs:
            avoid = every - low - high
            found += [_describe(c, contract["name"]) for c in _chains(adjacency, low, high, avoid=avoid)]
    return found


def violations(graph: Graph, rules: list[dict]) -> list[str]:
    """Every way the graph breaks one of the import-linter contracts ``rules``."""
    nodes = set(graph) | {e.imported for edges in graph.values() for e in edges}
    check = {"forbidden": _forbidden, "layers": _layers}
    found = []
    for contract in rules:
        if contract["type"] not in check:
            raise AssertionError(f"contract {contract['name']!r}: type {contract['type']!r} is not mirrored here")
        adjacency = _adjacency(graph, contract.get("ignore_imports", ()))
        found += check[contract["type"]](contract, adjacency, nodes)
    return sorted(set(found))


def _copy_tree(tmp_path: Path) -> Path:
    copy = tmp_path / "tree"
    for pkg in PACKAGES:
        shutil.copytree(ROOT / pkg, copy / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", copy / "pyproject.toml")
    return copy


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + text, encoding="utf-8")


# -- the tree keeps every contract on the full graph ---------------------------------------------------


def test_the_tree_keeps_every_contract_with_the_on_demand_edges() -> None:
    assert violations(import_graph(), contracts()) == []


def test_the_graph_has_the_on_demand_edges() -> None:
    edges = {(e.importer, e.imported, e.kind) for es in import_graph().values() for e in es}
    assert ("fairltr.workflows", "tuning.sweep", "lazy string") in edges
    assert ("fairltr.tracking", "fairltr.tracking.runs.config", "lazy string") in edges  # relative map value
    assert ("fairltr.tracking", "fairltr.gates", "lazy string") in edges
    assert ("fairltr.datasets", "fairltr.datasets.compas", "import_module") in edges
    assert ("fairltr.losses.builtin", "fairltr.losses.exposure", "declaration string") in edges


def test_every_lazy_export_names_a_module() -> None:
    """A lazy-export value that names no module of the tree would be no edge: each one resolves."""
    edges = import_graph()
    for module in ("fairltr", "fairltr.fair", "fairltr.losses", "fairltr.metrics", "fairltr.workflows",
                   "fairltr.tracking"):
        assert any(e.kind == "lazy string" for e in edges[module]), module
    assert unresolved_lazy_values() == set()


def test_every_lazy_export_is_defined_where_its_map_says() -> None:
    """Each name of a lazy-export map is bound at the top of the module it maps to (an import
    there counts, and so does that module's own lazy export of it), so a lazy export resolves;
    checked without importing anything."""
    exports = lazy_exports()
    assert len(exports) > 200, len(exports)
    reexported = {(m, name) for m, name, _ in exports}
    missing = sorted(f"{m}.{name} -> {target}" for m, name, target in exports
                     if not {name, "*"} & top_level_names(target) and (target, name) not in reexported)
    assert missing == [], missing


# -- ordinary strings are no edges ------------------------------------------------------------------------


def test_text_equal_to_a_module_name_is_no_edge() -> None:
    graph = import_graph()
    assert not any(e.imported == "tuning" for e in graph["fairltr.cli.app"])  # EXTRA_OF's "tuning" extra
    assert not any(e.imported.startswith(("fairltr.losses", "fairltr.metrics", "fairltr.rankers"))
                   for e in graph["fairltr.plugins.registry"])  # ENTRY_POINT_GROUPS: entry-point group names
    assert ("fairltr.losses.plugins", "fairltr.losses") not in {
        (e.importer, e.imported) for e in graph["fairltr.losses.plugins"] if e.kind in STRING_KINDS}


def test_string_rule_on_a_small_package(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    source = tmp_path / "pkg" / "a.py"
    source.write_text(
        "import importlib, logging\n"
        "EXTRAS = {'x': 'pkg.b'}\n"  # a dict no loader reads: text
        "GROUP = 'pkg.c'\n"
        "log = logging.getLogger('pkg.c')\n"
        "MAP = {'f': 'pkg.b'}\n"
        "def __getattr__(name):\n    return getattr(importlib.import_module(MAP[name]), name)\n"
        "def g():\n    return importlib.import_module('pkg.c'), 'message about pkg.b', entry(group=GROUP)\n"
    )
    edges = {(e.imported, e.kind) for e in module_edges(source, "pkg.a", {"pkg", "pkg.a", "pkg.b", "pkg.c"})}
    assert ("pkg.b", "lazy string") in edges and ("pkg.c", "import_module") in edges
    assert {k for t, k in edges if t == "pkg.b"} == {"lazy string"}
    assert {k for t, k in edges if t == "pkg.c"} == {"import_module"}



def test_each_contract_type_means_what_it_means_to_import_linter() -> None:
    graph = {"p.a": {Edge("p.a", "p.m", "import")}, "p.m": {Edge("p.m", "p.b.x", "lazy string")}, "p.b.x": set()}
    forbid = {"name": "F", "type": "forbidden", "source_modules": ["p.a"], "forbidden_modules": ["p.b"]}
    assert violations(graph, [forbid]) == ["p.a -> p.m -> p.b.x (via import, lazy string) breaks contract 'F'"]
    assert violations(graph, [{**forbid, "allow_indirect_imports": True}]) == []
    assert violations(graph, [{**forbid, "ignore_imports": ["p.* -> p.b.x"]}]) == []
    assert violations(graph, [{**forbid, "forbidden_modules": ["p.b"], "as_packages": False}]) == []
    layers = {"name": "L", "type": "layers", "containers": ["p"], "layers": ["b", "a"]}
    assert violations(graph, [layers]) == ["p.a -> p.m -> p.b.x (via import, lazy string) breaks contract 'L'"]
    # a chain through a third layer is reported at that layer's own step
    assert violations(graph, [{**layers, "layers": ["b", "a", "m"]}]) == [
        "p.m -> p.b.x (via lazy string) breaks contract 'L'"]
    # siblings of a ':' layer may import each other, those of a '|' layer may not
    assert violations(graph, [{**layers, "layers": ["b : m", "a"]}]) == ["p.a -> p.m (via import) breaks contract 'L'"]
    assert violations(graph, [{**layers, "layers": ["b | m", "a"]}]) == [
        "p.a -> p.m (via import) breaks contract 'L'", "p.m -> p.b.x (via lazy string) breaks contract 'L'"]

# -- the probes: a core module reaching a workflow on demand ----------------------------------------------


PROBES = {
    "import_module": ("def _probe():\n    import importlib\n\n"
                      "    return importlib.import_module('fairltr.workflows.fair')\n"),
    "lazy string": ("import importlib\n\n_PROBE = {'rerank_file': 'fairltr.workflows.fair'}\n\n\n"
                    "def __getattr__(name):\n    return getattr(importlib.import_module(_PROBE[name]), name)\n"),
}


@pytest.mark.parametrize("kind", sorted(PROBES))
def test_a_core_module_reaching_a_workflow_on_demand_breaks_the_core_contract(tmp_path: Path, kind: str) -> None:
    copy = _copy_tree(tmp_path)
    _append(copy / "fairltr" / "fair" / "target.py", PROBES[kind])
    found = violations(import_graph(copy), contracts(copy))
    core = next(c["name"] for c in contracts(copy) if c["name"].startswith("core imports no adapter"))
    assert f"fairltr.fair.target -> fairltr.workflows.fair (via {kind}) breaks contract {core!r}" in found, found


def test_a_lower_layer_reaching_a_higher_one_on_demand_breaks_the_layers(tmp_path: Path) -> None:
    copy = _copy_tree(tmp_path)
    _append(copy / "tuning" / "__init__.py", PROBES["import_module"].replace("fairltr.workflows.fair", "fairltr.cli.app"))
    found = violations(import_graph(copy), contracts(copy))
    assert "tuning -> fairltr.cli.app (via import_module) breaks contract 'CLI above workflows above adapters'" in found, found


# -- the CLI contract: import-linter itself fails on the CLI importing torch and DELTR -------------------


CLI_CONTRACT = "CLI imports only workflows, the plugin declarations and neutral core modules"
CLI_ROOT_CONTRACT = "CLI does not import the fairltr package's lazy exports"


def test_lint_imports_fails_on_the_cli_importing_torch_and_deltr(tmp_path: Path) -> None:
    """Probe 2, linted by import-linter itself on a patched copy (cwd and PYTHONPATH the copy;
    a second or two); the graph check above fails on it too. A CLI module reaching DELTR through
    the root package's lazy exports breaks the second CLI contract."""
    copy = _copy_tree(tmp_path)
    _append(copy / "fairltr" / "cli" / "formatting.py", "import torch  # noqa: E402\n"
                                                        "from fairltr.deltr import DELTR  # noqa: E402,F401\n")
    _append(copy / "fairltr" / "cli" / "noise.py", "def _probe():\n    from fairltr import DELTR\n\n    return DELTR\n")
    lint = Path(sys.executable).with_name("lint-imports")
    env = {**os.environ, "PYTHONPATH": str(copy)}
    out = subprocess.run([str(lint), "--no-cache"], cwd=copy, env=env, capture_output=True, text=True, timeout=300)
    text = out.stdout + out.stderr
    flat = " ".join(text.split())
    assert out.returncode == 1, text
    assert f"{CLI_CONTRACT} BROKEN" in flat and f"{CLI_ROOT_CONTRACT} BROKEN" in flat, text
    # the copy was linted, not the installed tree: the patched imports are named
    assert "fairltr.cli.formatting -> torch" in text and "fairltr.cli.formatting -> fairltr.deltr" in text, text
    assert "fairltr.cli.noise -> fairltr " in text, text
    found = violations(import_graph(copy), contracts(copy))
    assert f"fairltr.cli.formatting -> torch (via import) breaks contract {CLI_CONTRACT!r}" in found, found

