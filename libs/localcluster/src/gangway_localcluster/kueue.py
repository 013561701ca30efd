"""Kueue from its Go module, run beside the local control plane, and the queues the demo
and the tests give it.

Kueue (``sigs.k8s.io/kueue``) admits workloads against the quota of ClusterQueues; Gangway's
Kueue stage makes one Workload per gang. Version :data:`KUEUE_VERSION` is the newest the Go
module proxy serves (v0.18.0, v0.19.3 and v0.20.x answer 403); its go.mod replaces nothing,
so ``go install`` builds it as it is. Its CRDs come from the same module download, as its
release's base manifests have them (the conversion webhook of its own install is left out:
Gangway writes v1beta2, the version stored).

Kueue runs as a process, out of the cluster, as the schedulers do here: leader election off,
its internal certificate management off (that expects a Secret mounted into its pod), a
serving certificate of our own for its webhook server (which nothing calls: its webhooks
are not registered, Gangway writes whole Workloads), and the on-demand visibility API off
(it would read a certificate from ``/visibility``). Kueue v0.19 reads its metrics
certificate from a fixed path when it does not manage its certificates,
:data:`METRICS_CERTS`: one is made there once, if missing (the tests run as root).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Final

import yaml

from gangway_localcluster.build import (
    cache_root,
    copied_from_module,
    locked,
    progress,
    run_go,
    say,
    staged,
)
from gangway_localcluster.certs import write_serving_certificate
from gangway_localcluster.nodes import TOPOLOGY_LABELS

KUEUE_VERSION: Final = "0.19.2"
MODULE: Final = "sigs.k8s.io/kueue"
BINARY: Final = "kueue"
CRDS: Final = tuple(
    f"config/components/crd/bases/kueue.x-k8s.io_{plural}.yaml"
    for plural in (
        "admissionchecks",
        "clusterqueues",
        "cohorts",
        "localqueues",
        "multikueueclusters",
        "multikueueconfigs",
        "provisioningrequestconfigs",
        "resourceflavors",
        "topologies",
        "workloadpriorityclasses",
        "workloads",
    )
)
METRICS_CERTS: Final = Path("/etc/kueue/metrics/certs")
GROUP_PATH: Final = "/apis/kueue.x-k8s.io/v1beta2"
RESOURCE_FLAVORS: Final = f"{GROUP_PATH}/resourceflavors"
CLUSTER_QUEUES: Final = f"{GROUP_PATH}/clusterqueues"
TOPOLOGIES: Final = f"{GROUP_PATH}/topologies"
DEFAULT_FLAVOR: Final = "default-flavor"
# What `gangway up` makes for the demo: a ClusterQueue of the demo nodes' GPUs, and a
# LocalQueue of that name in the demo namespace.
DEMO_QUEUE: Final = "gangway-demo"
DEMO_GPUS: Final = 4  # the demo's Kueue sample: two gangs of two 1-GPU pods


def target() -> Path:
    return cache_root() / f"kueue-v{KUEUE_VERSION}"


def built() -> bool:
    return (target() / BINARY).is_file()


def ensure_kueue(log: bool = False) -> tuple[Path, tuple[Path, ...]]:
    """Kueue's manager, built once, and its CRDs from the same module download."""
    into = target()
    with locked(into.parent / f".kueue-v{KUEUE_VERSION}.lock"):
        crds = copied_from_module(MODULE, KUEUE_VERSION, CRDS, into / "crds")
        if not (into / BINARY).is_file():
            if log:
                say(
                    f"building kueue v{KUEUE_VERSION} from Go modules into {into} "
                    "(first run only: minutes)"
                )
            version = f"-X {MODULE}/pkg/version.GitVersion=v{KUEUE_VERSION}"
            with staged(into, BINARY) as out, progress(f"kueue v{KUEUE_VERSION}", log):
                run_go(
                    [
                        "install",
                        f"-ldflags=-s -w {version}",
                        f"{MODULE}/cmd/kueue@v{KUEUE_VERSION}",
                    ],
                    Path(tempfile.gettempdir()),
                    env={"GOBIN": str(out.parent)},
                )
    return into / BINARY, crds


def ensure_metrics_certificate() -> None:
    """A serving pair at :data:`METRICS_CERTS`, made once: written whole elsewhere, then
    renamed into place, so a Kueue started meanwhile never reads a key of another pair."""
    if (METRICS_CERTS / "tls.crt").is_file():
        return
    METRICS_CERTS.parent.mkdir(parents=True, exist_ok=True)
    made = Path(tempfile.mkdtemp(prefix=".certs-", dir=METRICS_CERTS.parent))
    write_serving_certificate(made, ("127.0.0.1", "localhost"), "kueue-metrics")
    try:
        os.rename(made, METRICS_CERTS)
    except OSError:  # another run made it first: theirs is as good
        shutil.rmtree(made, ignore_errors=True)


def configuration(workdir: Path, health: int, metrics: int, webhook: int) -> dict[str, Any]:
    """Kueue's Configuration (``config.kueue.x-k8s.io/v1beta2``) for a process beside the
    local control plane; its webhook serving pair in ``workdir/kueue-certs``."""
    certs = workdir / "kueue-certs"
    write_serving_certificate(certs, ("127.0.0.1", "localhost"), "kueue-webhook")
    return {
        "apiVersion": "config.kueue.x-k8s.io/v1beta2",
        "kind": "Configuration",
        "namespace": "kueue-system",
        "health": {"healthProbeBindAddress": f"127.0.0.1:{health}"},
        "metrics": {"bindAddress": f"127.0.0.1:{metrics}"},
        "webhook": {"host": "127.0.0.1", "port": webhook, "certDir": str(certs)},
        "leaderElection": {"leaderElect": False},
        "internalCertManagement": {"enable": False},
        "featureGates": {"VisibilityOnDemand": False},
    }


def write_configuration(workdir: Path, health: int, metrics: int, webhook: int) -> Path:
    path = workdir / "kueue-config.yaml"
    path.write_text(yaml.safe_dump(configuration(workdir, health, metrics, webhook)))
    return path


def resource_flavor(
    name: str = DEFAULT_FLAVOR,
    topology: str | None = None,
    node_labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A ResourceFlavor; with ``topology`` (a Topology's name) one Kueue chooses domains in,
    over the nodes of ``node_labels`` (Kueue wants at least one label then)."""
    flavor: dict[str, Any] = {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ResourceFlavor",
        "metadata": {"name": name},
    }
    if topology is not None:
        flavor["spec"] = {"topologyName": topology, "nodeLabels": node_labels or {}}
    return flavor


def topology_of(name: str, levels: list[str]) -> dict[str, Any]:
    """A Kueue Topology of node label keys, highest level first."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "Topology",
        "metadata": {"name": name},
        "spec": {"levels": [{"nodeLabel": key} for key in levels]},
    }


def cluster_queue(name: str, quota: dict[str, str], flavor: str = DEFAULT_FLAVOR) -> dict[str, Any]:
    """A ClusterQueue of every namespace, ``quota`` of ``flavor``, that preempts a
    lower-priority workload in it for a higher one."""
    return {
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "namespaceSelector": {},
            "preemption": {"withinClusterQueue": "LowerPriority"},
            "resourceGroups": [
                {
                    "coveredResources": sorted(quota),
                    "flavors": [
                        {
                            "name": flavor,
                            "resources": [
                                {"name": resource, "nominalQuota": value}
                                for resource, value in sorted(quota.items())
                            ],
                        }
                    ],
                }
            ],
        },
    }


def flavor_of_domains(
    name: str, node_labels: dict[str, str] | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """A flavor Kueue chooses domains in, over the nodes of ``node_labels`` (every Linux
    node), by a Topology of the local nodes' labels (zone, block, rack, host), both named
    ``name``; with the collections each is created in."""
    levels = list(TOPOLOGY_LABELS.values())
    nodes = node_labels or {"kubernetes.io/os": "linux"}
    flavor = resource_flavor(name, topology=name, node_labels=nodes)
    return [(TOPOLOGIES, topology_of(name, levels)), (RESOURCE_FLAVORS, flavor)]


def demo_flavor(topology: bool) -> list[tuple[str, dict[str, Any]]]:
    """What the demo's ClusterQueue draws on, and the collections it is created in: the
    default flavor, one Kueue chooses domains in with ``topology`` (the operator
    configuration's ``kueue.topology``)."""
    if topology:
        return flavor_of_domains(DEFAULT_FLAVOR)
    return [(RESOURCE_FLAVORS, resource_flavor())]


def demo_cluster_queue() -> dict[str, Any]:
    """What `gangway up` makes for the demo: its sample's GPUs, and CPU and memory enough for
    anything (Kueue admits nothing asking for a resource its ClusterQueue does not cover)."""
    quota = {"cpu": "1000", "memory": "4Ti", "nvidia.com/gpu": str(DEMO_GPUS)}
    return cluster_queue(DEMO_QUEUE, quota)


def local_queue(namespace: str, name: str, cluster_queue: str) -> tuple[str, dict[str, Any]]:
    """A LocalQueue and the collection it is created in."""
    return (
        f"{GROUP_PATH}/namespaces/{namespace}/localqueues",
        {
            "apiVersion": "kueue.x-k8s.io/v1beta2",
            "kind": "LocalQueue",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"clusterQueue": cluster_queue},
        },
    )
