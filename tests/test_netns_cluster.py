"""The namespace test cluster itself (slow: needs root and iproute2): every host has its own
loopback up and one bridge address, hosts reach each other and the bridge address and nothing
else (no default route), a killed host has no process left, and tear-down removes every
namespace and link the cluster made."""

from __future__ import annotations

import subprocess
import sys

import pytest

from netns import NetnsCluster

pytestmark = pytest.mark.slow

SERVE = "import socket; s = socket.socket(); s.bind(('{addr}', 7000)); s.listen(); print('up', flush=True); " \
        "c, _ = s.accept(); c.sendall(b'hello'); c.close()"
PROBE = "import socket; s = socket.create_connection(('{addr}', 7000), timeout=5); print(s.recv(5).decode())"


def test_hosts_loopback_reachability_kill_and_teardown(netns_cluster):
    cluster: NetnsCluster = netns_cluster(2)
    a, b = cluster.hosts
    assert len({a.address, b.address, cluster.bridge_address}) == 3
    for h in (a, b):
        links = h.run(["ip", "-o", "link", "show", "lo"], capture_output=True, text=True).stdout
        assert "UP" in links  # each namespace's own loopback is up
        routes = h.run(["ip", "route"], capture_output=True, text=True).stdout
        assert "default" not in routes  # only the bridge's subnet is reachable
    server = b.popen([sys.executable, "-c", SERVE.format(addr=b.address)], stdout=subprocess.PIPE, text=True)
    assert server.stdout.readline().strip() == "up"
    probe = a.run([sys.executable, "-c", PROBE.format(addr=b.address)], capture_output=True, text=True, timeout=60)
    assert probe.stdout.strip() == "hello", probe.stderr
    server.wait(timeout=30)
    # loopback is per host: b's loopback is not a's
    lonely = b.popen([sys.executable, "-c", SERVE.format(addr="127.0.0.1")], stdout=subprocess.PIPE, text=True)
    assert lonely.stdout.readline().strip() == "up"
    probe = a.run([sys.executable, "-c", PROBE.format(addr="127.0.0.1")], capture_output=True, text=True, timeout=60)
    assert probe.returncode != 0 and "Connection refused" in probe.stderr
    b.kill()  # a host loss: every process SIGKILLed
    assert lonely.wait(timeout=10) == -9 and b.pids() == []
    cluster.down()
    names = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True).stdout
    assert cluster.id not in names and cluster.id not in links
