"""Atomic writes (fairltr.files) and their users (write_table, DELTR.save): a failure midway
(exception, Ctrl-C, full disk) leaves the previous file intact and no temporary file behind."""

from __future__ import annotations

import errno
import json
import os
import resource
import signal
import stat

import numpy as np
import pandas as pd
import pytest

from fairltr import DELTR
from fairltr.data import ORIGIN_KEY
from fairltr.errors import ConfigError
from fairltr.files import atomic_path, atomic_write_bytes, atomic_write_text, check_writable
from fairltr.io import read_table, write_table


def _only(folder, *names):
    """The folder holds exactly these files (no temporary leftovers)."""
    assert sorted(p.name for p in folder.iterdir()) == sorted(names)


def test_atomic_write_text_and_bytes(tmp_path):
    p = atomic_write_text(tmp_path / "a" / "b" / "m.json", "héllo")
    assert p == tmp_path / "a" / "b" / "m.json" and p.read_bytes() == "héllo".encode()
    atomic_write_bytes(p, b"\x00\x01")
    assert p.read_bytes() == b"\x00\x01"
    _only(p.parent, "m.json")


@pytest.mark.parametrize("exc", [RuntimeError("serialiser failed"), KeyboardInterrupt()])
def test_exception_midway_keeps_the_previous_file(tmp_path, exc):
    target = tmp_path / "model.json"
    target.write_text("previous good model")
    with pytest.raises(type(exc)):
        with atomic_path(target) as tmp:
            assert tmp.parent == tmp_path and tmp.name.endswith(".model.json") and tmp.exists()
            with open(tmp, "w") as fh:
                fh.write("half of the new mod")
                fh.flush()
                raise exc
    assert target.read_text() == "previous good model"
    _only(tmp_path, "model.json")


def test_exception_midway_creates_no_file(tmp_path):
    with pytest.raises(ValueError):
        with atomic_path(tmp_path / "new.csv") as tmp:
            tmp.write_text("partial")
            raise ValueError("boom")
    _only(tmp_path)


def test_full_disk_midway_keeps_the_previous_file(tmp_path):
    """A real short write: the file-size limit makes write() fail with EFBIG after 1 MiB."""
    target = tmp_path / "model.json"
    target.write_text("previous good model")
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    old = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, hard))
    try:
        with pytest.raises(OSError) as info:
            atomic_write_text(target, "x" * (4 << 20))
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, old)
    assert info.value.errno == errno.EFBIG
    assert target.read_text() == "previous good model"
    _only(tmp_path, "model.json")


def test_permissions_are_those_of_a_plain_write_or_kept(tmp_path):
    plain = tmp_path / "plain.txt"
    plain.write_text("x")
    new = atomic_write_text(tmp_path / "new.txt", "x")
    assert stat.S_IMODE(new.stat().st_mode) == stat.S_IMODE(plain.stat().st_mode)  # not mkstemp's 0600
    os.chmod(new, 0o640)
    atomic_write_text(new, "y")
    assert stat.S_IMODE(new.stat().st_mode) == 0o640 and new.read_text() == "y"


def test_check_writable(tmp_path):
    assert check_writable(tmp_path / "new" / "deeper" / "m.json") == tmp_path / "new" / "deeper" / "m.json"
    with pytest.raises(ConfigError, match=f"^cannot write {tmp_path}: it is a folder$"):
        check_writable(tmp_path)
    (tmp_path / "file").write_text("x")
    expected = f"^cannot write {tmp_path}/file/m.json: {tmp_path}/file is a file, not a folder$"
    with pytest.raises(ConfigError, match=expected):
        check_writable(tmp_path / "file" / "m.json")
    with pytest.raises(ConfigError, match="file is a file, not a folder"):
        check_writable(tmp_path / "file" / "sub" / "m.json")


@pytest.mark.skipif(os.geteuid() == 0, reason="root may write anywhere")
def test_check_writable_read_only_folder(tmp_path):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        with pytest.raises(ConfigError, match=f"the folder {ro} is not writable"):
            check_writable(ro / "m.json")
    finally:
        ro.chmod(0o700)


class _Boom:
    """A cell whose text raises: the CSV writer fails after earlier chunks reached the file."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __str__(self) -> str:
        raise self.exc


@pytest.mark.parametrize("exc", [RuntimeError("cannot format"), KeyboardInterrupt()])
def test_write_table_failing_midway_keeps_the_previous_table(tmp_path, exc):
    target = tmp_path / "predictions.csv"
    good = pd.DataFrame({"query_id": [1, 1], "score": [0.5, 0.2]})
    write_table(good, target)
    before = target.read_bytes()
    n = 300_000  # several of pandas' write chunks before the failing last row
    bad = pd.DataFrame({"query_id": np.arange(n), "score": np.zeros(n, dtype=object)})
    bad.iloc[-1, 1] = _Boom(exc)
    with pytest.raises(type(exc)):
        write_table(bad, target)
    assert target.read_bytes() == before
    _only(tmp_path, "predictions.csv")
    control = tmp_path.parent / f"{tmp_path.name}-plain.csv"
    with pytest.raises(type(exc)):  # the scenario is a failure midway: a plain write leaves a partial file
        bad.to_csv(control, index=False)
    assert control.stat().st_size > 100_000
    control.unlink()


def test_write_table_parquet_failing_keeps_the_previous_table(tmp_path):
    target = tmp_path / "t.parquet"
    write_table(pd.DataFrame({"a": [1, 2]}), target)
    before = target.read_bytes()
    with pytest.raises(Exception):  # pyarrow cannot type a column of mixed ints and strings
        write_table(pd.DataFrame({"a": [1, "x"]}), target)
    assert target.read_bytes() == before
    _only(tmp_path, "t.parquet")


@pytest.mark.parametrize("name", ["t.txt", "t", "t.json", "t.tsv", "t.gz"])
def test_write_table_unsupported_suffix_is_a_config_error(tmp_path, name):
    with pytest.raises(ConfigError, match=rf"^cannot write {tmp_path}/{name}: unsupported file type .*; use .csv"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / name)
    _only(tmp_path)


@pytest.mark.parametrize("name", ["t.csv", "t.CSV", "t.csv.gz", "t.csv.bz2", "t.csv.xz", "t.parquet", "t.pq"])
def test_write_table_supported_suffixes_round_trip(tmp_path, name):
    df = pd.DataFrame({"query_id": [1, 1, 2], "protected": [0, 1, 0], "judgment": [1.0, 0.0, 2.0]})
    pd.testing.assert_frame_equal(read_table(write_table(df, tmp_path / name)), df, check_index_type=False)
    if name.endswith(".gz"):
        assert (tmp_path / name).read_bytes()[:2] == b"\x1f\x8b"  # really gzip
    _only(tmp_path, name)


def test_write_table_under_a_file_is_a_config_error(tmp_path):
    (tmp_path / "f").write_text("x")
    with pytest.raises(ConfigError, match="is a file, not a folder"):
        write_table(pd.DataFrame({"a": [1]}), tmp_path / "f" / "t.csv")


def test_written_parquet_does_not_carry_the_reader_origin(tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("query_id,protected,judgment\n1,0,1\n")
    df = read_table(src)
    assert df.attrs[ORIGIN_KEY]["path"] == str(src)
    df.attrs["note"] = "kept"
    out = write_table(df, tmp_path / "out.parquet")
    back = pd.read_parquet(out)
    assert ORIGIN_KEY not in back.attrs and back.attrs.get("note") == "kept"
    assert df.attrs[ORIGIN_KEY]["path"] == str(src)  # the caller's frame is untouched


def _model():
    df = pd.DataFrame({"query_id": [1, 1, 2, 2], "protected": [0, 1, 0, 1], "x1": [0.1, 0.5, 0.3, 0.9],
                       "judgment": [1.0, 0.0, 2.0, 1.0]})
    return DELTR(gamma=1.0, max_iter=2).fit(df)


@pytest.mark.parametrize("suffix", [".json", ".safetensors"])
def test_deltr_save_failing_keeps_the_previous_model(tmp_path, suffix):
    target = tmp_path / f"model{suffix}"
    model = _model()
    model.save(target)
    before = target.read_bytes()
    model.history.append({"iteration": 99, "total": object(), "listnet": 0.0, "exposure": 0.0})
    with pytest.raises(TypeError):  # not JSON serialisable
        model.save(target)
    assert target.read_bytes() == before
    _only(tmp_path, f"model{suffix}")
    assert DELTR.load(target).history[-1]["iteration"] != 99


def test_deltr_save_suffix_and_target_checks(tmp_path):
    model = _model()
    with pytest.raises(ConfigError, match=r"cannot save a DELTR model as .*model.pkl: unsupported file type '.pkl'"):
        model.save(tmp_path / "model.pkl")
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(ConfigError, match="it is a folder"):
        model.save(tmp_path / "dir.json")
    _only(tmp_path, "dir.json")
    path = model.save(tmp_path / "new" / "model.json")
    assert json.loads(path.read_text())["format"] == "fairltr.DELTR"
