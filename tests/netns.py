"""A cluster of network-namespace "hosts" for slow tests and benchmarks (``scripts/netns_cluster.sh``).

Each host has its own loopback and one address on a private veth bridge (10.A.B.0/24; the root
namespace, where the test runs, is .1 on the bridge). Hosts have no default route, so their
traffic stays between the cluster's namespaces and the root namespace's bridge address.

* :func:`netns_unavailable` says why namespaces cannot be made here (not root, no ``ip``);
  the ``netns_cluster`` fixture skips with that reason, except under ``CI=true`` where a
  failure to create namespaces although ``ip`` is present fails the test.
* :class:`NetnsCluster` (``with NetnsCluster.create(3) as c:``) creates and always tears down;
  :meth:`NetnsHost.popen` runs a command inside a host, :meth:`NetnsHost.kill` SIGKILLs every
  process of a host (a host loss, no clean-up), :meth:`NetnsHost.counters` reads its veth's bytes.
* :func:`start_postgres` runs a private PostgreSQL (initdb into a temp dir) inside a host,
  listening on that host's address only; :func:`start_mlflow_in` an ``mlflow server``.
"""

from __future__ import annotations

import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator, Sequence

import pytest

__all__ = ["NetnsHost", "NetnsCluster", "netns_unavailable", "netns_cluster", "start_postgres", "PrivatePostgres",
           "start_mlflow_in", "wait_for_port", "SCRIPT"]

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "netns_cluster.sh"


def netns_unavailable() -> str | None:
    """Why network namespaces cannot be made on this machine, or None when they can be tried."""
    if shutil.which("ip") is None:
        return "iproute2's 'ip' is not installed (apt-get install iproute2)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    return None


def _script(*args: str, timeout: float = 60) -> str:
    res = subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise RuntimeError(f"netns_cluster.sh {' '.join(args)} failed ({res.returncode}): {res.stderr.strip()}")
    return res.stdout


@dataclass
class NetnsHost:
    """One namespace of a cluster: ``ns`` (its name), ``address`` (IPv4), ``veth`` (root side)."""

    cluster: str
    index: int
    ns: str
    address: str
    veth: str

    def argv(self, argv: Sequence[str]) -> list[str]:
        return ["ip", "netns", "exec", self.ns, *map(str, argv)]

    def popen(self, argv: Sequence[str], *, log: Path | None = None, env: dict | None = None,
              **kw) -> subprocess.Popen:
        """Start ``argv`` inside the host (own session; output to ``log`` when given)."""
        if log is not None:
            out = open(log, "wb")
            kw.setdefault("stdout", out)
            kw.setdefault("stderr", subprocess.STDOUT)
        try:
            return subprocess.Popen(self.argv(argv), env=env, start_new_session=True, **kw)
        finally:
            if log is not None:
                out.close()

    def run(self, argv: Sequence[str], **kw) -> subprocess.CompletedProcess:
        return subprocess.run(self.argv(argv), **kw)

    def pids(self) -> list[int]:
        res = subprocess.run(["ip", "netns", "pids", self.ns], capture_output=True, text=True)
        return [int(p) for p in res.stdout.split()]

    def kill(self) -> None:
        """SIGKILL every process of the host: it is gone, nothing of it cleans up."""
        _script("kill", self.cluster, str(self.index))

    def counters(self) -> tuple[int, int]:
        """(bytes the host sent, bytes it received) so far, from its veth's counters (root side:
        the root side's rx is what the host sent)."""
        stats = Path("/sys/class/net") / self.veth / "statistics"
        return int((stats / "rx_bytes").read_text()), int((stats / "tx_bytes").read_text())


@dataclass
class NetnsCluster:
    """N hosts on one bridge; ``bridge_address`` is the root namespace's address on it."""

    id: str
    hosts: list[NetnsHost]
    bridge_address: str
    _down: bool = field(default=False, repr=False)

    @classmethod
    def create(cls, n: int) -> "NetnsCluster":
        cid = _script("new-id").strip()
        hosts, bridge = [], ""
        for line in _script("up", cid, str(n)).splitlines():
            parts = line.split()
            if parts[0] == "bridge":
                bridge = parts[2]
            else:
                hosts.append(NetnsHost(cid, len(hosts) + 1, parts[0], parts[1], parts[2]))
        return cls(cid, hosts, bridge)

    def down(self) -> None:
        if not self._down:
            _script("down", self.id)
            self._down = True

    def __enter__(self) -> "NetnsCluster":
        return self

    def __exit__(self, *exc) -> None:
        self.down()


@pytest.fixture
def netns_cluster() -> Iterator:
    """``netns_cluster(n)`` -> a fresh :class:`NetnsCluster`, torn down after the test. Skips
    with the reason where namespaces cannot be made; under ``CI=true`` a failure to create them
    while ``ip`` is present fails instead (CI installs iproute2 and runs as root)."""
    made: list[NetnsCluster] = []

    def make(n: int) -> NetnsCluster:
        reason = netns_unavailable()
        ci = os.environ.get("CI", "").lower() == "true"
        if reason is not None:
            if ci and shutil.which("ip") is not None:
                pytest.fail(f"network namespaces cannot be made under CI: {reason}")
            pytest.skip(reason)
        try:
            cluster = NetnsCluster.create(n)
        except RuntimeError as exc:
            if ci:
                pytest.fail(str(exc))
            pytest.skip(f"network namespaces cannot be made here: {exc}")
        made.append(cluster)
        return cluster

    try:
        yield make
    finally:
        for c in made:
            c.down()


def wait_for_port(address: str, port: int, timeout: float, proc: subprocess.Popen | None = None,
                  what: str = "server", log: Path | None = None) -> None:
    """Wait until a TCP connect to ``address:port`` succeeds (a socket probe: no ping here)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {_tail(log)}")
        with socket.socket() as s:
            s.settimeout(1.0)
            if s.connect_ex((address, port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{what} not listening on {address}:{port} after {timeout:.0f} s: {_tail(log)}")


def _tail(log: Path | None, n: int = 30) -> str:
    if log is None or not Path(log).exists():
        return "(no log)"
    return "\n".join(Path(log).read_text(errors="replace").splitlines()[-n:])


def stop_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    """SIGTERM the process's session group, SIGKILL what is left after ``grace`` seconds."""
    if proc.poll() is not None:
        return
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=grace)
            return
        except subprocess.TimeoutExpired:
            continue


def _pg_bin(name: str) -> str:
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    path = found[-1] if found else shutil.which(name)
    if path is None:
        raise RuntimeError(f"PostgreSQL's {name} is not installed (scripts/start_postgres.sh installs it)")
    return path


@dataclass
class PrivatePostgres:
    """A PostgreSQL instance of our own, inside one host; ``uri(db)`` is a SQLAlchemy URI."""

    host: NetnsHost
    port: int
    process: subprocess.Popen
    datadir: Path

    def uri(self, db: str) -> str:
        return f"postgresql+psycopg2://fairltr@{self.host.address}:{self.port}/{db}"

    def create_database(self, db: str) -> str:
        res = self.host.run(["runuser", "-u", "postgres", "--", _pg_bin("createdb"), "-h", self.host.address,
                             "-p", str(self.port), "-U", "fairltr", db], capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError(f"createdb {db}: {res.stderr.strip()}")
        return self.uri(db)

    def stop(self) -> None:
        stop_group(self.process)
        shutil.rmtree(self.datadir, ignore_errors=True)


def start_postgres(host: NetnsHost, port: int = 5432, timeout: float = 60) -> PrivatePostgres:
    """initdb into a fresh temp dir (owned by the ``postgres`` user: the server refuses root; not
    under pytest's root-only tmp dirs, which it cannot enter) and start ``postgres -D ... -k
    <sockdir> -c listen_addresses=<host address>`` inside ``host``. Trust authentication for the
    role ``fairltr``: the server is reachable only on the private bridge. ``stop`` removes it."""
    workdir = Path(tempfile.mkdtemp(prefix="fairltr-netns-pg-"))
    data, sock = workdir / "data", workdir / "sock"
    sock.mkdir(exist_ok=True)
    shutil.chown(workdir, "postgres", "postgres")
    shutil.chown(sock, "postgres", "postgres")
    res = subprocess.run(["runuser", "-u", "postgres", "--", _pg_bin("initdb"), "-D", str(data), "-U", "fairltr",
                          "-A", "trust", "-E", "UTF8", "--no-sync"], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"initdb failed: {res.stderr.strip()[-500:]}")
    subnet = host.address.rsplit(".", 1)[0] + ".0/24"  # the cluster's bridge, nothing else
    with open(data / "pg_hba.conf", "a") as hba:
        hba.write(f"host all fairltr {subnet} trust\n")
    log = workdir / "postgres.log"
    proc = host.popen(["runuser", "-u", "postgres", "--", _pg_bin("postgres"), "-D", str(data), "-k", str(sock),
                       "-p", str(port), "-c", f"listen_addresses={host.address}", "-c", "fsync=off",
                       "-c", "max_connections=200"], log=log)
    wait_for_port(host.address, port, timeout, proc, "postgres", log)
    return PrivatePostgres(host, port, proc, workdir)


def start_mlflow_in(host: NetnsHost, backend_uri: str, workdir: Path, port: int = 5000, timeout: float = 180):
    """``mlflow server`` inside ``host`` on ``host.address:port`` (proxied artifacts under
    ``workdir``); returns :class:`mlflow_fixtures.MlflowServer` once ``/health`` answers."""
    from mlflow_fixtures import MlflowServer

    workdir.mkdir(parents=True, exist_ok=True)
    mlflow_bin = Path(sys.executable).with_name("mlflow")
    env = dict(os.environ, MLFLOW_SERVER_ENABLE_JOB_EXECUTION="false", MLFLOW_DISABLE_TELEMETRY="true")
    env.pop("MLFLOW_TRACKING_URI", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    log = workdir / "server.log"
    proc = host.popen([str(mlflow_bin) if mlflow_bin.exists() else "mlflow", "server", "--backend-store-uri",
                       backend_uri, "--artifacts-destination", str(workdir / "artifacts"), "--host", host.address,
                       "--port", str(port), "--workers", "1"], log=log, env=env, cwd=workdir)
    server = MlflowServer(f"http://{host.address}:{port}", backend_uri, proc, log)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"mlflow server exited with {proc.returncode}:\n{server.log_tail()}")
        try:
            with urllib.request.urlopen(f"{server.uri}/health", timeout=2) as resp:
                if resp.status == 200:
                    return server
        except OSError:
            pass
        time.sleep(0.5)
    server.stop()
    raise RuntimeError(f"mlflow server not healthy after {timeout:.0f} s:\n{server.log_tail()}")
