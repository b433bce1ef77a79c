"""Function-local imports that only dodge an import circle (issue 33, item 6).

An import inside a function body is fine when it keeps a heavy engine (torch, MLflow, Optuna,
Lightning) or an adapter off the import path. It is a hidden circle when the imported module
reaches the importer back: the two modules are then one strongly connected component of the
full import graph (module-level and function-local edges of fairltr/, lightning_modules/,
tuning/ together, read by :mod:`tests.import_graph`; a string naming a module of the tree in an
import-like position -- a lazy-export map, an ``import_module`` target, a declaration -- counts
as an on-demand edge, since import-linter cannot see it). Such an edge is listed here; the cure
is to move the shared piece into a module of its own. ``ALLOWED_CIRCLE_EDGES`` holds the debts left and may only shrink.
"""

from __future__ import annotations

import functools
from pathlib import Path

from tests.import_graph import library_files, module_edges

ALLOWED_CIRCLE_EDGES: set[str] = set()  # debts when the rule was written (issue 33): all paid; stays empty


def _edges(path: Path, module: str, known: set[str]) -> tuple[set[str], set[str]]:
    """(module-level targets, function-local and on-demand string targets) among ``known``
    modules (:mod:`tests.import_graph` reads them)."""
    edges = module_edges(path, module, known)
    # A module always imports its parent packages first: an edge back to one is no circle.
    keep = {t for t in known if t != module and not module.startswith(t + ".")}
    top = {e.imported for e in edges if e.kind == "import"}
    local = {e.imported for e in edges if e.kind != "import"}
    return top & keep, local & keep


def _components(graph: dict[str, set[str]]) -> dict[str, int]:
    """Strongly connected component id of every node (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    comp: dict[str, int] = {}
    stack: list[str] = []
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    work.append((w, iter(sorted(graph[w]))))
                    break
                if w not in comp:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    while True:
                        w = stack.pop()
                        comp[w] = index[v]
                        if w == v:
                            break
    return comp


@functools.cache
def circle_edges() -> frozenset[str]:
    """``importer -> imported`` for every function-local import inside an import circle."""
    files = library_files()
    known = set(files)
    top, local = {}, {}
    for m, p in files.items():
        top[m], local[m] = _edges(p, m, known)
    comp = _components({m: top[m] | local[m] for m in files})
    return frozenset(f"{m} -> {t}" for m in files for t in local[m] - top[m] if comp[m] == comp[t])


def test_no_function_local_import_dodges_a_circle() -> None:
    found = circle_edges()
    assert found <= ALLOWED_CIRCLE_EDGES, sorted(found - ALLOWED_CIRCLE_EDGES)


def test_circle_allow_list_only_shrinks() -> None:
    assert ALLOWED_CIRCLE_EDGES <= circle_edges(), sorted(ALLOWED_CIRCLE_EDGES - circle_edges())


def test_finder_sees_a_dodged_circle(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from pkg import b\n")
    (pkg / "b.py").write_text("def f():\n    from pkg.a import x\n    return x\n")
    known = {"pkg", "pkg.a", "pkg.b"}
    top_a, _ = _edges(pkg / "a.py", "pkg.a", known)
    top_b, local_b = _edges(pkg / "b.py", "pkg.b", known)
    assert "pkg.b" in top_a and local_b == {"pkg.a"} and not top_b
    comp = _components({"pkg": set(), "pkg.a": top_a, "pkg.b": local_b})
    assert comp["pkg.a"] == comp["pkg.b"] != comp["pkg"]


if __name__ == "__main__":
    print("\n".join(sorted(circle_edges())))
