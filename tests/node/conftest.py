"""The real-node suite: Gangway's image built from the checkout, its Helm chart installed on
a real node (containerd, runc, the kubelet, kube-proxy, CoreDNS; :mod:`gangway_localcluster.
realnode`) joined to a local control plane running kube-scheduler and KAI, and workloads
whose containers really run. Needs root (a network namespace, containerd, the kubelet); the
packages it needs are installed by tools/node-packages.sh on first use.

One node for the whole suite, every test on one xdist worker in file order: the chart
installed (1), workloads (2), a restart, an upgrade and the chart's removal (3), then the
kustomize overlay installed and removed on the same node (4).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gangway_localcluster.kai import SCHEDULER_NAME as KAI
from gangway_localcluster.realnode import RealNode
from tests.support.realnode import Release, install


@pytest.fixture(scope="session")
def real_node() -> Iterator[RealNode]:
    if os.geteuid() != 0:
        pytest.skip("the real node needs root: a network namespace, containerd, the kubelet")
    with RealNode.start(schedulers={"kai-scheduler": KAI}) as node:
        yield node


@pytest.fixture(scope="session")
def release(real_node: RealNode, tmp_path_factory: pytest.TempPathFactory) -> Release:
    """Gangway's chart installed on the node with its small profile, every pod Ready."""
    return install(real_node, Path(tmp_path_factory.mktemp("release")))
