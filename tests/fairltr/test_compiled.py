"""fairltr.compiled: the switch between the compiled kernels and the numpy / tensor code."""

from __future__ import annotations

import builtins

import pytest

from fairltr import compiled


def test_the_environment_turns_the_kernels_off(monkeypatch):
    pytest.importorskip("numba", reason="the compiled kernels need numba (the [fast] extra)")
    monkeypatch.setenv("FAIRLTR_COMPILED", "1")
    assert compiled.compiled_enabled()
    monkeypatch.setenv("FAIRLTR_COMPILED", "0")
    assert not compiled.compiled_enabled()


def test_a_numba_that_does_not_import_warns_and_falls_back(monkeypatch):
    """An installed numba that fails to import (built for another numpy): one warning naming the
    error, then the numpy / tensor code, not a crash."""
    monkeypatch.setenv("FAIRLTR_COMPILED", "1")
    monkeypatch.setattr(compiled.importlib.util, "find_spec", lambda name: object())
    real_import = builtins.__import__

    def broken(name, *args, **kwargs):
        if name == "numba":
            raise ImportError("numba needs numpy < 2.5")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    compiled._numba_imports.cache_clear()
    compiled._numba_installed.cache_clear()
    try:
        with pytest.warns(RuntimeWarning, match=r"numba is installed but does not import \(ImportError: numba needs"):
            assert not compiled.compiled_enabled()
    finally:
        compiled._numba_imports.cache_clear()
        compiled._numba_installed.cache_clear()


def _fresh(code: str, env: dict) -> str:
    import os
    import subprocess
    import sys

    return subprocess.run([sys.executable, "-c", code], env={**os.environ, **env}, check=True,
                          capture_output=True, text=True).stdout


SMALL_RERANK = """
import sys, numpy as np, pandas as pd
from fairltr.columns import RankingColumns
from fairltr.fair import rerank_geyik
df = pd.DataFrame({"query_id": 0, "g": np.arange(300) % 3, "s": np.random.default_rng(0).random(300)})
for method in ("detconstsort", "detgreedy"):
    rerank_geyik(df, "s", method=method, columns=RankingColumns(group="g", judgment=None))
print("numba" in sys.modules)
"""


def test_a_small_input_does_not_load_the_kernels(tmp_path, monkeypatch):
    """Auto mode (FAIRLTR_COMPILED unset): a re-ranking whose numpy path costs far less than the
    kernels' load never imports numba (so [fast] cannot make a small CLI call slower)."""
    pytest.importorskip("numba")
    monkeypatch.delenv("FAIRLTR_COMPILED", raising=False)
    assert _fresh(SMALL_RERANK, {"FAIRLTR_CACHE_DIR": str(tmp_path)}).strip() == "False"


@pytest.mark.slow  # compiles the Geyik kernels into an empty cache (20-40 s here)
def test_the_numba_cache_is_written_under_the_user_cache_folder_only(tmp_path):
    """With FAIRLTR_COMPILED=1 the kernels compile and cache under $XDG_CACHE_HOME/fairltr/numba, and
    no numba cache file appears in the package tree."""
    pytest.importorskip("numba")
    from pathlib import Path

    import fairltr

    xdg = tmp_path / "xdg"
    _fresh(SMALL_RERANK, {"XDG_CACHE_HOME": str(xdg), "FAIRLTR_CACHE_DIR": "", "FAIRLTR_COMPILED": "1"})
    written = list((xdg / "fairltr" / "numba").rglob("geyik_kernels.*.nbi"))
    assert written, "no cached kernel under $XDG_CACHE_HOME/fairltr/numba"
    assert not list(Path(fairltr.__file__).parent.rglob("*.nbi")), "a numba cache file in the package tree"


def test_pays_follows_the_switch_and_the_estimate(monkeypatch, tmp_path):
    pytest.importorskip("numba")
    monkeypatch.setenv("FAIRLTR_CACHE_DIR", str(tmp_path))
    module = "fairltr.not_a_loaded_kernel_module"
    monkeypatch.setenv("FAIRLTR_COMPILED", "0")
    assert not compiled.pays(module, 1e9)
    monkeypatch.setenv("FAIRLTR_COMPILED", "1")
    assert compiled.pays(module, 0.0)
    monkeypatch.delenv("FAIRLTR_COMPILED")
    assert not compiled.pays(module, compiled.LOAD_SECONDS / 2)
    assert not compiled.pays(module, compiled.LOAD_SECONDS * 2)  # empty cache: the compile costs more
    assert compiled.pays(module, compiled.COMPILE_SECONDS * 2)
    assert compiled.pays("fairltr.compiled", 0.0)  # already loaded: always
