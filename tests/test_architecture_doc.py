"""docs/architecture.md's room list is the package tree (issue 33, item 6).

Every package and top-level module of ``fairltr/`` and the two adapter packages has one row
with a known layer; every row names a room that exists; and the core rooms are exactly the
modules the core import-linter contract checks (so a new core module cannot escape it).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
LAYERS = {"package root", "core", "core (bottom)", "adapter (MLflow)", "adapter (Lightning)", "adapter (Optuna)",
          "workflows", "CLI"}
ROW = re.compile(r"^\| `([\w.]+)` \| ([^|]+?) \| (.+) \|$")


def _rows() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8")
    section = text.split("## The room list", 1)[1].split("\n## ", 1)[0]
    rows: dict[str, str] = {}
    for line in section.splitlines():
        match = ROW.match(line)
        if match:
            name, layer, job = match.groups()
            assert name not in rows, f"{name} listed twice"
            assert job.strip(), f"{name}: no job"
            rows[name] = layer.strip()
    return rows


def _rooms() -> set[str]:
    rooms = {"fairltr", "lightning_modules", "tuning"}
    for path in (ROOT / "fairltr").iterdir():
        if path.suffix == ".py" and path.stem != "__init__":
            rooms.add(f"fairltr.{path.stem}")
        elif path.is_dir() and (path / "__init__.py").exists():
            rooms.add(f"fairltr.{path.name}")
    return rooms


def test_room_list_names_every_room_and_only_rooms() -> None:
    rows, rooms = _rows(), _rooms()
    assert not rooms - rows.keys(), f"rooms missing from docs/architecture.md: {sorted(rooms - rows.keys())}"
    assert not rows.keys() - rooms, f"docs/architecture.md names rooms that do not exist: {sorted(rows.keys() - rooms)}"


def test_every_room_has_a_known_layer() -> None:
    bad = {name: layer for name, layer in _rows().items() if layer not in LAYERS}
    assert not bad, bad


def test_core_rooms_are_the_core_contract() -> None:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    contracts = config["tool"]["importlinter"]["contracts"]
    core = next(c for c in contracts if c["name"].startswith("core imports no adapter"))
    documented = {name for name, layer in _rows().items() if layer.startswith("core")}
    assert set(core["source_modules"]) == documented


CORE_IMPORTS = re.compile(r"\*\*Core\*\* \(`fairltr/` outside[^)]*\): (.+?)\n\n", re.S)


def test_the_core_third_party_imports_are_the_ones_listed():
    """The core paragraph names every third-party package the core imports (module level or in a
    function, from the AST import graph), and nothing it does not import."""
    import sys

    from tests.import_graph import import_graph

    outside_core = ("fairltr.tracking", "fairltr.workflows", "fairltr.cli")
    graph = import_graph()
    imported = {
        e.imported.split(".")[0] for m, edges in graph.items()
        if m.split(".")[0] == "fairltr" and not any(m == o or m.startswith(o + ".") for o in outside_core)
        for e in edges if e.imported not in graph
    } - set(sys.stdlib_module_names) - {"fairltr", "lightning_modules", "tuning", "__future__"}
    paragraph = CORE_IMPORTS.search(DOC.read_text(encoding="utf-8"))
    assert paragraph, "docs/architecture.md: the **Core** paragraph of 'The rooms' is missing"
    named = {name for name in re.findall(r"\b([a-z][a-z0-9_]+)\b", paragraph.group(1))}
    assert imported - named == set(), f"the core imports {sorted(imported - named)}, not named in the doc"
    packages = {"torch", "numpy", "pandas", "scipy", "pyarrow", "safetensors", "lightgbm", "numba", "bm25s", "tqdm",
                "mlflow", "optuna", "lightning", "transformers", "click", "sklearn"}
    assert (named & packages) - imported == set(), f"named but not imported: {sorted((named & packages) - imported)}"
