"""Ctrl-C during the DDP rendezvous of ``fairltr train deltr --num-nodes`` (slow: each node starts
torch and Lightning), on loopback (gloo on ``lo``): the nodes of a 3-node run of which only 2 are
started wait in the rendezvous (torch's C++, where Python runs no signal handler) until
``--ddp-timeout``.

* SIGINT to every waiting node: each exits 130 within 2 s with the one line ``interrupted``.
* SIGINT to node 0 only: node 0 exits 130 within 2 s; node 1, which loses its peer, ends with one
  ``Error: DDP ...`` line and prints no C++ stack frame (``frame #0: ...``) or C++ log line.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from interrupt_helpers import restore_sigint
from mlflow_fixtures import free_port

pytestmark = pytest.mark.slow

FAIRLTR = str(Path(sys.executable).with_name("fairltr"))
LIMIT_S = 2.0


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    from fairltr.io import write_table
    from fairltr.synthetic import make_biased_rankings

    folder = tmp_path_factory.mktemp("rendezvous")
    train, _ = make_biased_rankings(12, 10, 0.3, seed=1)
    write_table(train, folder / "train.parquet")
    return folder / "train.parquet"


def _node(table: Path, rank: int, port: int, out: Path, log: Path, timeout: int = 60) -> subprocess.Popen:
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), NODE_RANK=str(rank), GLOO_SOCKET_IFNAME="lo",
               OMP_NUM_THREADS="1", PYTHONUNBUFFERED="1")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("TORCH_CPP_LOG_LEVEL", None)  # fairltr's own default is what is tested
    return subprocess.Popen([FAIRLTR, "train", "deltr", "--train", str(table), "--gamma", "10", "--engine", "lightning",
                             "--accelerator", "cpu", "--num-nodes", "3", "--ddp-timeout", str(timeout), "--no-track",
                             "--out", str(out)], stdout=subprocess.DEVNULL, stderr=log.open("w"), env=env,
                            preexec_fn=restore_sigint)


def _connections(port: int) -> int:
    """Established loopback TCP connections with one end at ``port`` (both ends are counted)."""
    n = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            local, remote, state = row.split()[1:4]
            if state == "01" and port in (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16)):
                n += 1
    return n


def _wait_in_rendezvous(procs, port: int, logs, timeout: float = 180.0) -> None:
    """Until node 1 is connected to node 0's store (and both wait there for the missing node 2)."""
    deadline = time.monotonic() + timeout
    while _connections(port) < 2:
        assert time.monotonic() < deadline and all(p.poll() is None for p in procs), \
            "\n---\n".join(Path(log).read_text() for log in logs)
        time.sleep(0.1)
    time.sleep(1.0)


def _exit_after_sigint(proc: subprocess.Popen, sent: float) -> tuple[int, float]:
    try:
        code = proc.wait(timeout=90)
    except subprocess.TimeoutExpired:
        proc.kill()
        raise
    return code, time.monotonic() - sent


def _lines(log: Path) -> list[str]:
    return [ln for ln in log.read_text(errors="replace").splitlines() if ln.strip()]


def _no_cpp_output(log: Path) -> None:
    text = log.read_text(errors="replace")
    assert "frame #" not in text and "[c10d]" not in text and "Traceback" not in text, text


def test_ctrl_c_in_the_rendezvous_exits_130_on_every_node(table, tmp_path):
    port = free_port()
    logs = [tmp_path / "n0.log", tmp_path / "n1.log"]
    procs = [_node(table, r, port, tmp_path / f"out{r}", logs[r]) for r in (0, 1)]
    try:
        _wait_in_rendezvous(procs, port, logs)
        sent = time.monotonic()
        for p in procs:
            p.send_signal(signal.SIGINT)
        for p, log in zip(procs, logs):
            code, took = _exit_after_sigint(p, sent)
            assert code == 130 and _lines(log) == ["interrupted"], (code, log.read_text())
            assert took < LIMIT_S, f"{log.name}: exit {took:.2f} s after Ctrl-C"
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()


def test_a_node_that_loses_its_peer_prints_one_line_and_no_cpp_frames(table, tmp_path):
    port = free_port()
    logs = [tmp_path / "n0.log", tmp_path / "n1.log"]
    procs = [_node(table, r, port, tmp_path / f"out{r}", logs[r], timeout=20) for r in (0, 1)]
    try:
        _wait_in_rendezvous(procs, port, logs)
        sent = time.monotonic()
        procs[0].send_signal(signal.SIGINT)
        code, took = _exit_after_sigint(procs[0], sent)
        assert code == 130 and _lines(logs[0]) == ["interrupted"] and took < LIMIT_S, (code, took, logs[0].read_text())
        code, took = _exit_after_sigint(procs[1], sent)
        lines = _lines(logs[1])
        assert code == 1 and len(lines) == 1 and lines[0].startswith("Error: DDP"), (code, logs[1].read_text())
        assert "node 0 at 127.0.0.1" in lines[0] and "closed the connection" in lines[0], lines[0]
        assert took < 10, took  # not the 20 s --ddp-timeout: the closed connection is news at once
        _no_cpp_output(logs[1])
        print(f"node 1 lost node 0: exit {code} {took:.1f} s after node 0's Ctrl-C: {lines[0]}")
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
