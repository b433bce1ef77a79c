"""Multi-node DDP with Lightning's standard rendezvous: one process per host.

Every node runs the same command with ``--num-nodes M`` and the environment Lightning's
``LightningEnvironment`` reads: ``MASTER_ADDR`` / ``MASTER_PORT`` (node 0's address and a free
port on it) and ``NODE_RANK`` (0..M-1). Node 0 hosts torch's TCP store; every process joins it
within ``timeout`` seconds (torch's ``init_process_group(timeout=...)``, which also bounds each
collective), then the gloo (CPU) or NCCL (GPU) group all-reduces the gradient every step. Gloo
binds to the address the host name resolves to: where that is 127.0.0.1 (a container, a
namespace), set ``GLOO_SOCKET_IFNAME`` to the interface of the node's address on every node.

:func:`rendezvous_from_env` checks the environment before any work; :func:`cluster_error` turns
torch's rendezvous and transport failures into one :class:`~fairltr.errors.ClusterError` line
that names the node that did not join or was lost; :func:`fit_on_nodes` is the fit of one node.

Ctrl-C: while a node waits in torch's C++ (the rendezvous, or a collective waiting for a peer)
Python runs no signal handler, so in the fairltr command :func:`fit_on_nodes` ends the process
itself when a Ctrl-C is not handled within a second (``interrupted``, exit 130;
:func:`lightning_modules.interrupt.exit_when_stuck`). torch's C++ log lines about a lost or
missing peer (``[E socket.cpp] ... frame #0 ...``) are kept off the terminal by
:func:`fairltr.startup.end_startup`; the failure itself is the one line of :func:`cluster_error`.
"""

from __future__ import annotations

import os
import re
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

from fairltr.errors import ClusterError, ConfigError

__all__ = ["Rendezvous", "rendezvous_from_env", "cluster_error", "fit_on_nodes", "DEFAULT_DDP_TIMEOUT"]

DEFAULT_DDP_TIMEOUT = 600.0  # seconds a node waits for the others (to join, or in one collective)


@dataclass(frozen=True)
class Rendezvous:
    """Where and as whom this process joins: ``num_nodes`` nodes, this one ``node_rank``."""

    master_addr: str
    master_port: int
    node_rank: int
    num_nodes: int
    timeout: float

    @property
    def master(self) -> str:
        return f"{self.master_addr}:{self.master_port}"


def rendezvous_from_env(num_nodes: int, timeout: float | None = None) -> Rendezvous:
    """The rendezvous of a ``num_nodes``-node run from ``MASTER_ADDR`` / ``MASTER_PORT`` /
    ``NODE_RANK``; a missing or malformed variable is a one-line :class:`ConfigError`."""
    if isinstance(num_nodes, bool) or int(num_nodes) != num_nodes or num_nodes < 2:
        raise ConfigError(f"num_nodes must be an integer >= 2 for a multi-node run, got {num_nodes!r}")
    timeout = DEFAULT_DDP_TIMEOUT if timeout is None else float(timeout)
    if not timeout > 0:
        raise ConfigError(f"ddp timeout must be > 0 seconds, got {timeout:g}")
    missing = [v for v in ("MASTER_ADDR", "MASTER_PORT", "NODE_RANK") if not os.environ.get(v)]
    if missing:
        raise ConfigError(f"--num-nodes {num_nodes} needs {', '.join(missing)} in the environment "
                          "(node 0's address and port, and this node's rank 0..num_nodes-1)")
    port, rank = os.environ["MASTER_PORT"], os.environ["NODE_RANK"]
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise ConfigError(f"MASTER_PORT must be a TCP port 1..65535, got {port!r}")
    if not rank.isdigit() or int(rank) >= num_nodes:
        raise ConfigError(f"NODE_RANK must be an integer 0..{num_nodes - 1} for --num-nodes {num_nodes}, got {rank!r}")
    return Rendezvous(os.environ["MASTER_ADDR"], int(port), int(rank), int(num_nodes), timeout)


_JOINED = re.compile(r"(\d+)/(\d+) clients joined")
_PEER_GONE = ("reset by peer", "closed by peer", "broken pipe", "connection closed", "connection reset",
              "connection was likely closed", "failed to recv")
_TRANSPORT = ("connection closed by peer", "connection reset by peer", "broken pipe", "socket closed",
              "connection refused", "timed out", "timeout", "read error", "write error", "gloo")


def cluster_error(exc: BaseException, rdv: Rendezvous, joined: bool) -> ClusterError | None:
    """One line for a rendezvous or transport failure of this node (``joined``: the process
    group was up when it happened), or None when ``exc`` is not one (a bug or a data error)."""
    text = " ".join(str(exc).split())
    low = text.lower()
    if "connectfullmesh" in low or "connect_full_mesh" in low:  # the store answered, the peers' sockets did not
        return ClusterError(f"DDP: node {rdv.node_rank} reached the rendezvous at {rdv.master} but could not connect "
                            "to the other nodes' gloo sockets; set GLOO_SOCKET_IFNAME to the network interface of "
                            "each node's address (the host name may resolve to 127.0.0.1)")
    if not joined:
        if rdv.node_rank == 0:
            m = _JOINED.search(text)
            if m is not None or "waiting for clients" in low or "timed out" in low or "timeout" in low:
                got = int(m.group(1)) if m else None
                others = list(range(1, rdv.num_nodes))
                if rdv.num_nodes == 2 or got is None:
                    who = "node 1" if rdv.num_nodes == 2 else f"some of nodes {others[0]}..{others[-1]}"
                else:
                    who = f"{rdv.num_nodes - got} of nodes {others[0]}..{others[-1]}"
                return ClusterError(f"DDP rendezvous at {rdv.master} timed out after {rdv.timeout:g} s: "
                                    f"{who} never joined (--ddp-timeout)")
        elif any(k in low for k in _PEER_GONE):
            return ClusterError(f"DDP rendezvous: node 0 at {rdv.master} closed the connection while node "
                                f"{rdv.node_rank} waited for the other nodes (node 0 stopped?)")
        elif any(k in low for k in ("timed out", "timeout", "connection refused", "connect")):
            return ClusterError(f"DDP rendezvous: node 0 at {rdv.master} (MASTER_ADDR:MASTER_PORT) did not answer "
                                f"node {rdv.node_rank} within {rdv.timeout:g} s (--ddp-timeout)")
        return None
    if any(k in low for k in _TRANSPORT):
        who = f"node {1 - rdv.node_rank}" if rdv.num_nodes == 2 else "another node"
        return ClusterError(f"DDP: lost {who} during training (node {rdv.node_rank} of {rdv.num_nodes}, "
                            f"master {rdv.master}): {text[:160]}")
    return None


def fit_on_nodes(trainer: Any, module: Any, dm: Any, rdv: Rendezvous) -> None:
    """``trainer.fit`` on one node of a multi-node run: rendezvous and transport failures become
    one :class:`~fairltr.errors.ClusterError` line naming the node; the process group is torn
    down either way, so the process can exit (and its caller report) at once. In the fairltr
    command a Ctrl-C that the blocked main thread cannot handle ends the process (module docstring)."""
    import torch.distributed as dist

    from fairltr.startup import in_command
    from lightning_modules.interrupt import exit_when_stuck, fit

    with exit_when_stuck() if in_command() else nullcontext():
        try:
            fit(trainer, module, datamodule=dm)  # Ctrl-C: KeyboardInterrupt (Lightning would exit 1)
        except Exception as exc:
            joined = dist.is_available() and dist.is_initialized()
            err = cluster_error(exc, rdv, joined)
            if err is None:
                raise
            raise err from None
        finally:
            if dist.is_available() and dist.is_initialized():
                try:
                    dist.destroy_process_group()
                except Exception:  # a lost peer can make the tear-down fail too: the error above is the news
                    pass
