"""The staged fairltr wheel a loader-form model carries: byte-identical for identical sources, a new
version for changed sources, a valid wheel (RECORD hashes match, pip installs it)."""

from __future__ import annotations

import base64
import hashlib
import subprocess
import sys
import zipfile
from pathlib import Path

from fairltr.tracking.models.loader_form import build_wheel, wheel_requirement


def _package(root: Path, extra: str = "") -> Path:
    pkg = root / "mypkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("VALUE = 1\n" + extra)
    (pkg / "sub" / "__init__.py").write_text("")
    (pkg / "sub" / "data.json").write_text('{"a": 1}')
    return pkg


def test_wheel_is_deterministic_and_versioned_by_content(tmp_path):
    a = build_wheel(_package(tmp_path / "a"), tmp_path / "wa", "0.1.0")
    b = build_wheel(_package(tmp_path / "b"), tmp_path / "wb", "0.1.0")
    assert a.name == b.name and a.read_bytes() == b.read_bytes()
    assert a.name.startswith("mypkg-0.1.0+g") and a.name.endswith("-py3-none-any.whl")
    c = build_wheel(_package(tmp_path / "c", extra="# changed\n"), tmp_path / "wc", "0.1.0")
    assert c.name != a.name  # MLflow names its cached environments by the requirement line
    assert wheel_requirement(a) == f"./code/{a.name}"


def test_wheel_record_matches_its_files_and_pip_installs_it(tmp_path):
    wheel = build_wheel(_package(tmp_path / "src"), tmp_path / "w", "0.1.0")
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        record_name = next(n for n in names if n.endswith(".dist-info/RECORD"))
        rows = [line.split(",") for line in zf.read(record_name).decode().splitlines()]
        for arc, digest, size in rows:
            if arc == record_name:
                assert digest == size == ""
                continue
            data = zf.read(arc)
            want = "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            assert (digest, int(size)) == (want, len(data)), arc
        assert {r[0] for r in rows} == set(names)
    target = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target),
                    str(wheel)], check=True, timeout=300)
    out = subprocess.run([sys.executable, "-c", "import mypkg, json, importlib.resources as r; print(mypkg.VALUE)"],
                         cwd=target, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "1", out.stderr
    assert (target / "mypkg" / "sub" / "data.json").read_text() == '{"a": 1}'
