"""Multi-node settings without a cluster: the rendezvous environment is checked before any work,
and torch's rendezvous / transport failures become one line naming the node (the two-host runs
themselves are in ``test_multinode_ddp.py``, slow)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from fairltr.errors import ClusterError, ConfigError
from lightning_modules.multinode import Rendezvous, cluster_error, rendezvous_from_env

RDV0 = Rendezvous("10.0.0.1", 29500, 0, 2, 5.0)
RDV1 = Rendezvous("10.0.0.1", 29500, 1, 2, 5.0)


@pytest.fixture
def env(monkeypatch):
    for key, value in dict(MASTER_ADDR="10.0.0.1", MASTER_PORT="29500", NODE_RANK="1").items():
        monkeypatch.setenv(key, value)
    return monkeypatch


def test_rendezvous_from_env(env):
    rdv = rendezvous_from_env(2, 7)
    assert (rdv.master, rdv.node_rank, rdv.num_nodes, rdv.timeout) == ("10.0.0.1:29500", 1, 2, 7.0)
    assert rendezvous_from_env(3).timeout == 600.0


@pytest.mark.parametrize("key,value,needle", [
    ("MASTER_ADDR", None, "needs MASTER_ADDR"), ("NODE_RANK", None, "needs NODE_RANK"),
    ("NODE_RANK", "2", "NODE_RANK must be an integer 0..1"), ("NODE_RANK", "-1", "NODE_RANK must be"),
    ("MASTER_PORT", "http", "MASTER_PORT must be a TCP port"), ("MASTER_PORT", "70000", "MASTER_PORT must be"),
])
def test_bad_rendezvous_environment_is_one_line(env, key, value, needle):
    if value is None:
        env.delenv(key)
    else:
        env.setenv(key, value)
    with pytest.raises(ConfigError, match=needle):
        rendezvous_from_env(2)


def test_bad_node_count_and_timeout(env):
    with pytest.raises(ConfigError, match="num_nodes must be an integer >= 2"):
        rendezvous_from_env(1)
    with pytest.raises(ConfigError, match="timeout must be > 0"):
        rendezvous_from_env(2, 0)


def test_torch_failures_become_one_line_naming_the_node():
    # node 0's store waits for the others (torch's message names the count that joined)
    err = cluster_error(RuntimeError("Timed out after 6 seconds waiting for clients. 1/2 clients joined."), RDV0, False)
    assert isinstance(err, ClusterError) and "node 1 never joined" in str(err) and "5 s" in str(err)
    three = Rendezvous("h", 1, 0, 3, 5.0)
    err = cluster_error(RuntimeError("waiting for clients. 2/3 clients joined."), three, False)
    assert "1 of nodes 1..2 never joined" in str(err)
    # node 1 cannot reach node 0's store
    err = cluster_error(RuntimeError("The client socket has timed out after 5s while trying to connect to "
                                     "(10.0.0.1, 29500)."), RDV1, False)
    assert "node 0 at 10.0.0.1:29500" in str(err) and "node 1" in str(err)
    # node 0 stopped (Ctrl-C) while node 1 waited in its store for the other nodes
    err = cluster_error(RuntimeError("recvValue failed on SocketImpl(fd=3): Connection reset by peer"), RDV1, False)
    assert "node 0 at 10.0.0.1:29500 closed the connection while node 1 waited" in str(err)
    err = cluster_error(RuntimeError("Failed to recv, got 0 bytes. Connection was likely closed. Did the remote "
                                     "server shutdown or crash?"), RDV1, False)  # torch 2.13's DistNetworkError
    assert "closed the connection while node 1 waited" in str(err)
    # the store answered but the peers' gloo sockets did not (the host name resolved to 127.0.0.1)
    err = cluster_error(RuntimeError("Gloo connectFullMesh failed with ... Connection refused"), RDV1, False)
    assert "GLOO_SOCKET_IFNAME" in str(err)
    # a peer lost during training
    err = cluster_error(RuntimeError("[pair.cc:553] Connection closed by peer [10.0.0.2]:62607"), RDV0, True)
    assert "lost node 1 during training" in str(err) and "\n" not in str(err)
    # anything else is not a cluster failure (a bug or a data error keeps its own message)
    assert cluster_error(ValueError("bad feature"), RDV0, True) is None
    assert cluster_error(ValueError("bad feature"), RDV0, False) is None


def test_cli_checks_the_rendezvous_before_training(monkeypatch, tmp_path):
    from fairltr.cli import cli
    from fairltr.io import write_table
    from fairltr.synthetic import make_biased_rankings

    for key in ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK"):
        monkeypatch.delenv(key, raising=False)
    train, _ = make_biased_rankings(6, 5, 0.3, seed=0)
    write_table(train, tmp_path / "train.parquet")
    base = ["train", "deltr", "--train", str(tmp_path / "train.parquet"), "--gamma", "1", "--no-track",
            "--out", str(tmp_path / "out")]
    res = CliRunner().invoke(cli, [*base, "--engine", "lightning", "--num-nodes", "2"])
    assert res.exit_code == 1 and "needs MASTER_ADDR, MASTER_PORT, NODE_RANK" in res.output
    assert len([ln for ln in res.output.splitlines() if ln.strip()]) == 1
    res = CliRunner().invoke(cli, [*base, "--num-nodes", "2"])  # the estimator engine
    assert res.exit_code == 1 and "--num-nodes needs --engine lightning" in res.output
    res = CliRunner().invoke(cli, [*base, "--engine", "lightning", "--num-nodes", "2", "--devices", "2"])
    assert res.exit_code == 1 and "--devices must be 1" in res.output
    assert not (tmp_path / "out").exists()
