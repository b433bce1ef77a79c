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
    try:
        with pytest.warns(RuntimeWarning, match=r"numba is installed but does not import \(ImportError: numba needs"):
            assert not compiled.compiled_enabled()
    finally:
        compiled._numba_imports.cache_clear()
