"""The library's import graph from a stdlib AST walk (shared by test_local_imports and
test_import_layers); nothing is imported, so a patched copy of the tree can be read too.

Nodes are the modules of fairltr/, lightning_modules/ and tuning/ under a root, plus the root
package of each third-party module they import (``torch``, ``mlflow``), as grimp names them.
Each :class:`Edge` has a kind:

* ``import``: an import statement at module level (``if TYPE_CHECKING:`` blocks are no edge);
* ``function-local``: an import statement inside a function body;
* the on-demand edges import-linter cannot see, taken from string constants in an import-like
  position only:

  - ``import_module``: the literal first argument of ``importlib.import_module`` / ``__import__``
    (a module of the tree, or any third-party module);
  - ``lazy string``: a value of a lazy-export map -- the mapping given to ``lazy_exports(...)``,
    or a mapping bound to a name that the module's PEP 562 ``__getattr__`` or one of its functions
    calling ``import_module`` reads (a value may be relative to the package, as in
    ``fairltr.tracking``'s ``_EXPORTS``);
  - ``declaration string``: a dotted module of the tree (or ``"module:function"``) given as a
    call's argument (``torch_loss("fairltr.losses.exposure", ...)``, a registry's ``builtins=``
    tuple, a metric's ``compute=``) or bound to a name (``KERNELS = "fairltr.fair.geyik_kernels"``).

  Any other string is text, even when it equals a module's name: a dict that no loader reads
  (the CLI's ``EXTRA_OF`` maps ``"optuna"`` to the extra ``"tuning"``; ``ENTRY_POINT_GROUPS`` maps
  plugin kinds to entry-point groups named like ``"fairltr.losses"``), a bare root-package name
  outside ``import_module`` (distribution and experiment names, ``version("fairltr")``), a
  logger name given to ``getLogger``, an entry-point group (a ``group=`` argument, or a name
  given as one: ``ENTRY_POINT_GROUP = "fairltr.losses"``), a docstring or a message.

``from p import m`` is an edge to ``p.m`` when that is a module, else to ``p``, as grimp reads
it; the edge to ``p`` that Python takes first anyway is kept too, marked ``implicit``.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("fairltr", "lightning_modules", "tuning")
STATEMENT_KINDS = frozenset({"import", "function-local"})
STRING_KINDS = frozenset({"import_module", "lazy string", "declaration string"})
_IMPORT_CALLS = frozenset({"import_module", "__import__"})
_NOT_DECLARATIONS = frozenset({"getLogger", "fromkeys"})  # a logger's name; dict.fromkeys is read as a map


@dataclass(frozen=True)
class Edge:
    """``importer`` imports ``imported``; ``kind`` says how (see the module's docstring)."""

    importer: str
    imported: str
    kind: str
    implicit: bool = False  # the package of a ``from p import m`` whose ``m`` is a module


def library_files(root: Path = ROOT) -> dict[str, Path]:
    """Module name -> file of every library module under ``root``."""
    return {module_name(p, root): p for pkg in PACKAGES for p in sorted((root / pkg).rglob("*.py"))}


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def resolve_from(node: ast.ImportFrom, module: str, is_pkg: bool) -> str:
    """The absolute package a ``from ... import`` statement reads from."""
    if not node.level:
        return node.module or ""
    base = module.split(".")
    drop = node.level - 1 if is_pkg else node.level
    base = base[: len(base) - drop] if drop else base
    return ".".join(base + ([node.module] if node.module else []))


def _callee(node: ast.Call) -> str:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""


def _strings(node: ast.AST | None) -> Iterator[str]:
    """The string constants of ``node``, itself or the elements of a tuple, list or set literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node.value
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _strings(element)


def _map_items(node: ast.AST) -> Iterator[tuple[str | None, str]]:
    """(key, string value) of a mapping expression: a dict literal (with ``**`` parts),
    ``dict.fromkeys(keys, value)`` or ``dict(...)``; a key that is no string literal is None."""
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if key is None:
                yield from _map_items(value)
            else:
                name = key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None
                yield from ((name, text) for text in _strings(value))
    elif isinstance(node, ast.Call) and _callee(node) == "fromkeys" and len(node.args) > 1:
        keys = list(_strings(node.args[0])) or [None]
        yield from ((k, text) for text in _strings(node.args[1]) for k in keys)
    elif isinstance(node, ast.Call) and _callee(node) == "dict":
        for part in node.args:
            yield from _map_items(part)
        for k in node.keywords:
            yield from ((k.arg, text) for text in _strings(k.value))


def _is_mapping(node: ast.AST) -> bool:
    return isinstance(node, ast.Dict) or (isinstance(node, ast.Call) and _callee(node) in ("fromkeys", "dict"))


def _names_of_note(tree: ast.Module) -> tuple[set[str], set[str]]:
    """(loader names, group names) of a module, in one walk:

    * loader names: those read by its ``__getattr__`` and by its functions that call ``import_module``;
    * group names: those given as a call's ``group=`` (an entry-point group, named like ``"fairltr.losses"``).
    """
    groups: set[str] = set()
    loaders: list[ast.AST] = []
    functions: list[ast.AST] = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call):
            groups |= {k.value.id for k in n.keywords if k.arg == "group" and isinstance(k.value, ast.Name)}
            if _callee(n) in _IMPORT_CALLS:
                loaders.append(n)
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.append(n)
    names: set[str] = set()
    if not loaders and not any(fn.name == "__getattr__" for fn in functions):
        return names, groups
    for fn in functions:
        inside = list(ast.walk(fn))
        if fn.name == "__getattr__" or any(n in loaders for n in inside if isinstance(n, ast.Call)):
            names |= {n.id for n in inside if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}
    return names, groups


class _Walker:
    """The edges of one module (see the module's docstring)."""

    def __init__(self, module: str, is_pkg: bool, known: set[str]) -> None:
        self.module, self.is_pkg, self.known = module, is_pkg, known
        self.package = module if is_pkg else module.rpartition(".")[0]
        self.edges: set[Edge] = set()
        self.loaders: set[str] = set()
        self.groups: set[str] = set()
        self.unresolved: set[str] = set()  # lazy-export values naming no module of the tree
        self.exports: set[tuple[str, str]] = set()  # (name, module) of each lazy export

    def add(self, target: str, kind: str, implicit: bool = False) -> None:
        if target and target != self.module:
            self.edges.add(Edge(self.module, target, kind, implicit))

    def external(self, name: str) -> str:
        """``name`` if a module of the tree, else its third-party root package."""
        return name if name in self.known else name.partition(".")[0]

    def declared(self, text: str) -> str | None:
        """The module a declaration string names: a dotted module of the tree, or ``module:attr``."""
        name = text.partition(":")[0] if text.count(":") == 1 else text
        return name if "." in name and name in self.known else None

    def lazy_target(self, text: str) -> str | None:
        if text in self.known:
            return text
        relative = f"{self.package}.{text}"
        if relative in self.known:
            return relative
        self.unresolved.add(text)
        return None

    def lazy_map(self, node: ast.AST | None) -> None:
        for name, text in _map_items(node) if node is not None else ():
            target = self.lazy_target(text)
            self.add(target or "", "lazy string")
            if target and name:
                self.exports.add((name, target))

    def statement(self, node: ast.Import | ast.ImportFrom, kind: str) -> None:
        if isinstance(node, ast.Import):
            for alias in node.names:
                self.add(self.external(alias.name), kind)
            return
        prefix = resolve_from(node, self.module, self.is_pkg)
        for alias in node.names:
            full = f"{prefix}.{alias.name}"
            if full in self.known:
                self.add(full, kind)
                self.add(prefix, kind, implicit=True)
            else:
                self.add(self.external(prefix), kind)

    def call(self, node: ast.Call) -> None:
        name = _callee(node)
        if name in _IMPORT_CALLS:
            for text in _strings(node.args[0] if node.args else None):
                self.add(self.external(text), "import_module")
        elif name == "lazy_exports":
            self.lazy_map(node.args[1] if len(node.args) > 1 else None)
        elif name not in _NOT_DECLARATIONS:
            for part in [*node.args, *(k.value for k in node.keywords if k.arg != "group")]:
                for text in _strings(part):
                    self.add(self.declared(text) or "", "declaration string")

    def assign(self, node: ast.Assign | ast.AnnAssign) -> None:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        if node.value is None or not names:
            return
        if _is_mapping(node.value) and names & self.loaders:
            self.lazy_map(node.value)
        for text in _strings(node.value) if not names & self.groups else ():
            self.add(self.declared(text) or "", "declaration string")

    def visit(self, node: ast.AST, in_function: bool) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                self.visit(child, in_function)
            return
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            self.statement(node, "function-local" if in_function else "import")
        elif isinstance(node, ast.Call):
            self.call(node)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            self.assign(node)
        inner = in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
        for child in ast.iter_child_nodes(node):
            self.visit(child, inner)


@functools.cache
def _parse(text: str) -> ast.Module:
    """The tree of a source text (a patched copy of the tree re-parses only what differs); read only."""
    return ast.parse(text)


def _walk(path: Path, module: str, known: set[str]) -> _Walker:
    tree = _parse(path.read_text(encoding="utf-8"))
    walker = _Walker(module, path.name == "__init__.py", known)
    walker.loaders, walker.groups = _names_of_note(tree)
    walker.visit(tree, False)
    return walker


def module_edges(path: Path, module: str, known: set[str]) -> set[Edge]:
    """Every edge out of ``module`` (the file ``path``); ``known``: the modules of the tree."""
    return _walk(path, module, known).edges


@functools.cache
def _analysis(root: Path) -> tuple[dict[str, frozenset[Edge]], frozenset[str], frozenset[tuple[str, str, str]]]:
    files = library_files(root)
    known = set(files)
    walkers = {m: _walk(p, m, known) for m, p in files.items()}
    graph = {m: frozenset(w.edges) for m, w in walkers.items()}
    unresolved = frozenset(f"{m}: {v}" for m, w in walkers.items() for v in w.unresolved)
    exports = frozenset((m, name, target) for m, w in walkers.items() for name, target in w.exports)
    return graph, unresolved, exports


def import_graph(root: Path = ROOT) -> dict[str, frozenset[Edge]]:
    """Module -> its outgoing edges, for every library module under ``root``."""
    return _analysis(root)[0]


def unresolved_lazy_values(root: Path = ROOT) -> frozenset[str]:
    """``module: value`` of every lazy-export value that names no module of the tree."""
    return _analysis(root)[1]


def lazy_exports(root: Path = ROOT) -> frozenset[tuple[str, str, str]]:
    """(exporting module, name, defining module) of every lazy export with a literal name."""
    return _analysis(root)[2]


def _bound(statements: list[ast.stmt]) -> Iterator[str]:
    for node in statements:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield node.name
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                yield from (n.id for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            yield from ((a.asname or a.name).partition(".")[0] for a in node.names)
        elif isinstance(node, (ast.If, ast.Try)):
            yield from _bound([*node.body, *node.orelse, *getattr(node, "finalbody", []),
                               *(s for h in getattr(node, "handlers", []) for s in h.body)])


@functools.cache
def top_level_names(module: str, root: Path = ROOT) -> frozenset[str]:
    """The names ``module`` binds at module level (``*`` where it star-imports or has a PEP 562
    ``__getattr__``: any name may then resolve)."""
    tree = _parse(library_files(root)[module].read_text(encoding="utf-8"))
    names = frozenset(_bound(tree.body))
    return names | {"*"} if "*" in names or "__getattr__" in names else names
