"""CoreDNS from its Go module, on loopback, answering the cluster's names from the local API
server through its ``kubernetes`` plugin: what a cluster's DNS does for pods, so that tests
and ``gangway up`` show a pod's Grove address (``<podclique>-<i>.<pcs>-<r>.<ns>.svc.
cluster.local``) resolving to its IP. kwok gives pods IPs; kube-controller-manager's
endpoint-slice controller fills each headless Service with them, hostnames included.

    python -m gangway_localcluster --write-module   # regenerates tools/coredns
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from gangway_contracts.services import CLUSTER_DOMAIN
from gangway_localcluster.build import WrappedModule

COREDNS_VERSION: Final = "1.15.0"
MODULE: Final = "github.com/coredns/coredns"
BINARY: Final = "coredns"
COREDNS: Final = WrappedModule("coredns", MODULE, COREDNS_VERSION, {MODULE: BINARY}, ())


def ensure_coredns(log: bool = False) -> Path:
    """The coredns binary, built once into ``~/.cache/gangway/coredns-v<version>/``."""
    return COREDNS.build(log) / BINARY


def corefile(kubeconfig: Path, port: int, ready_port: int, bind: str = "127.0.0.1") -> str:
    """One zone, the cluster's, on ``bind:port``: Services and their endpoints' names
    as the API server says (pod records off: Grove's addresses are the Services'); ``/ready``
    answers once the plugin has listed what it watches."""
    return f"""\
{CLUSTER_DOMAIN}:{port} {{
    bind {bind}
    kubernetes {CLUSTER_DOMAIN} {{
        kubeconfig {kubeconfig}
    }}
    ready {bind}:{ready_port}
    errors
}}
"""


def write_module(directory: Path | None = None) -> None:
    COREDNS.write(
        "CoreDNS, which resolves pods' names on the local cluster for tests and gangway up",
        directory=directory,
    )
