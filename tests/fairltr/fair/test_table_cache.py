"""The mtable disk cache (fairltr.fair.table_cache): where it lives, that its entries give the same
tables as a fresh computation, corrupt entries recomputed, processes racing on one key."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

binomial = importlib.import_module("fairltr.fair.mtable")  # the module (fairltr.fair.mtable is also a function)
multinomial = importlib.import_module("fairltr.fair.multinomial")
table_cache = importlib.import_module("fairltr.fair.table_cache")


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    d = tmp_path / "cache"
    monkeypatch.setenv("FAIRLTR_CACHE_DIR", str(d))
    monkeypatch.delenv("FAIRLTR_MTABLE_CACHE", raising=False)
    binomial.clear_caches()
    multinomial.clear_multinomial_caches()
    yield d
    binomial.clear_caches()
    multinomial.clear_multinomial_caches()


def entries(d: Path) -> list[Path]:
    return sorted((d / "mtables").glob("*")) if (d / "mtables").exists() else []


def test_cache_root(monkeypatch, tmp_path):
    monkeypatch.delenv("FAIRLTR_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert table_cache.cache_root() == tmp_path / "xdg" / "fairltr"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert table_cache.cache_root() == Path.home() / ".cache" / "fairltr"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert table_cache.cache_root() == Path.home() / ".cache" / "fairltr"
    monkeypatch.setenv("FAIRLTR_CACHE_DIR", str(tmp_path / "own"))
    assert table_cache.cache_root() == tmp_path / "own"


def fresh_binomial(k, p, alpha):
    """The table and alpha_c computed without any cache."""
    a = binomial._search_alpha(k, p, alpha)
    return a, binomial._table_at(k, p, a)


def test_entries_give_the_computed_tables(cache_dir):
    for k, p, alpha in [(300, 0.5, 0.1), (1000, 0.3, 0.05), (257, 0.02, 0.1)]:
        want_a, want = fresh_binomial(k, p, alpha)
        assert np.array_equal(binomial.mtable(k, p, alpha), want)  # computed, written
        binomial.clear_caches()
        assert np.array_equal(binomial.mtable(k, p, alpha), want)  # read back
        assert binomial.adjust_alpha(k, p, alpha) == want_a
        assert table_cache.load("binomial", k, p, alpha)[0] == want_a
    assert len(entries(cache_dir)) == 3
    m = multinomial.multinomial_mtable(40, (0.2, 0.3), 0.1)
    multinomial.clear_multinomial_caches()
    assert np.array_equal(multinomial.multinomial_mtable(40, (0.2, 0.3), 0.1), m)
    assert len(entries(cache_dir)) == 4


def test_small_and_unadjusted_tables_are_not_written(cache_dir):
    binomial.mtable(100, 0.5, 0.1)
    binomial.mtable(3000, 0.5, 0.1, adjust=False)
    assert entries(cache_dir) == []


def test_switch_off(cache_dir, monkeypatch):
    monkeypatch.setenv("FAIRLTR_MTABLE_CACHE", "0")
    binomial.mtable(300, 0.5, 0.1)
    assert entries(cache_dir) == []


@pytest.mark.parametrize("damage", ["truncate", "flip", "garbage", "empty", "foreign"])
def test_corrupt_entries_are_recomputed(cache_dir, damage):
    want_a, want = fresh_binomial(400, 0.4, 0.1)
    binomial.mtable(400, 0.4, 0.1)
    (path,) = entries(cache_dir)
    raw = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(raw[: len(raw) // 2])
    elif damage == "flip":  # one table byte changed: the checksum no longer matches
        path.write_bytes(raw[:-10] + bytes([raw[-10] ^ 1]) + raw[-9:])
    elif damage == "garbage":
        path.write_bytes(os.urandom(500))
    elif damage == "empty":
        path.write_bytes(b"")
    else:  # a valid entry of another key under this key's name
        table_cache.store("binomial", 401, 0.4, 0.1, 0.05, np.zeros(401, dtype=np.int64))
        other = table_cache.entry_path("binomial", 401, 0.4, 0.1)
        path.write_bytes(other.read_bytes())
        other.unlink()
    assert table_cache.load("binomial", 400, 0.4, 0.1) is None
    binomial.clear_caches()
    assert np.array_equal(binomial.mtable(400, 0.4, 0.1), want)
    assert binomial.adjust_alpha(400, 0.4, 0.1) == want_a
    hit = table_cache.load("binomial", 400, 0.4, 0.1)  # rewritten whole
    assert hit is not None and hit[0] == want_a and np.array_equal(hit[1], want)


def test_unwritable_folder_only_warns(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("FAIRLTR_CACHE_DIR", str(blocker))
    monkeypatch.setattr(table_cache, "_warned", False)
    binomial.clear_caches()
    with pytest.warns(RuntimeWarning, match="could not write its mtable cache"):
        m = binomial.mtable(300, 0.45, 0.1)
    assert np.array_equal(m, fresh_binomial(300, 0.45, 0.1)[1])
    binomial.clear_caches()


RACER = textwrap.dedent("""
    import hashlib, sys, time
    start = float(sys.argv[1])
    while time.time() < start:
        pass
    from fairltr.fair import mtable
    from fairltr.fair.multinomial import multinomial_mtable
    a = mtable(1500, 0.35, 0.1)
    b = multinomial_mtable(60, (0.2, 0.25), 0.1)
    print(hashlib.sha256(a.tobytes()).hexdigest(), hashlib.sha256(b.tobytes()).hexdigest())
""")


def test_processes_racing_on_one_key(cache_dir, tmp_path):
    """Five processes released at the same instant compute and write the same two keys; every one
    returns the table of a fresh computation, the entries are whole and valid, no temporary file
    is left; then five more read them."""
    import hashlib
    import time

    want_a = hashlib.sha256(fresh_binomial(1500, 0.35, 0.1)[1].tobytes()).hexdigest()
    s = multinomial._Search(60, (0.2, 0.25), 0.1)
    table_b = multinomial._joint_table_at(60, (0.2, 0.25), multinomial._largest_double(s, multinomial._exact_search(s)))
    want_b = hashlib.sha256(table_b.tobytes()).hexdigest()
    script = tmp_path / "racer.py"
    script.write_text(RACER)
    env = {**os.environ, "FAIRLTR_CACHE_DIR": str(cache_dir)}
    for round_ in range(2):
        start = time.time() + 1.5
        procs = [subprocess.Popen([sys.executable, str(script), str(start)], stdout=subprocess.PIPE, text=True, env=env)
                 for _ in range(5)]
        outs = [proc.communicate(timeout=300)[0].split() for proc in procs]
        assert all(proc.returncode == 0 for proc in procs)
        assert all(out == [want_a, want_b] for out in outs), round_
        names = [p.name for p in entries(cache_dir)]
        assert len(names) == 2 and not any(n.startswith(".tmp-") for n in names), names
        assert table_cache.load("binomial", 1500, 0.35, 0.1) is not None
        assert table_cache.load("multinomial", 60, (0.2, 0.25), 0.1) is not None
