"""Koordinator's koord-scheduler from its Go module, run as a second scheduler whose one
profile enables Koordinator's Coscheduling plugin (gangs and GangGroups), and the CRDs it
reads.

koord-scheduler is kube-scheduler 1.35 with Koordinator's plugins; its gang plugin reads
PodGroups (``scheduling.sigs.k8s.io/v1alpha1``, the older scheduler-plugins group) and their
``gang.scheduling.koordinator.sh/*`` annotations. Nothing else of Koordinator (koord-manager,
koordlet, its webhooks) is needed to place a gang.

Version :data:`KOORDINATOR_VERSION` is the newest release the Go module proxy serves. Its go.mod
replaces every Kubernetes staging module (at 1.35.2), so ``go install`` refuses it; the wrapper
module (``tools/koordinator``) copies its requirements and replaces. Three staging modules that
nothing of the scheduler imports are not served at v0.35.2 (403); they move to
:data:`UNSERVED_PIN`, the nearest patch the proxy and the checksum database both know. Every
CRD in the release's ``config/crd/bases`` comes from the same module download: the scheduler's
other plugins list and watch Reservations, Devices, NodeMetrics and ElasticQuotas even when no
profile enables them.

    python -m gangway_localcluster --write-module   # regenerates tools/koordinator
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

from gangway_localcluster.build import SecondScheduler, WrappedModule

KOORDINATOR_VERSION: Final = "1.8.0"
MODULE: Final = "github.com/koordinator-sh/koordinator"
UNSERVED_PIN: Final = "0.35.3"
UNSERVED: Final = ("externaljwt", "kube-controller-manager", "sample-apiserver")
BINARY: Final = "koord-scheduler"
CRDS: Final = tuple(
    f"config/crd/bases/{name}.yaml"
    for name in (
        "scheduling.sigs.k8s.io_podgroups",
        "scheduling.sigs.k8s.io_elasticquotas",
        "scheduling.koordinator.sh_reservations",
        "scheduling.koordinator.sh_devices",
        "scheduling.koordinator.sh_podmigrationjobs",
        "scheduling.koordinator.sh_clusternetworktopologies",
        "scheduling.koordinator.sh_scheduleexplanations",
        "slo.koordinator.sh_nodemetrics",
        "slo.koordinator.sh_nodeslos",
        "quota.koordinator.sh_elasticquotaprofiles",
        "config.koordinator.sh_clustercolocationprofiles",
        "topology.node.k8s.io_noderesourcetopologies",
        "analysis.koordinator.sh_recommendations",
    )
)
KOORDINATOR: Final = WrappedModule(
    "koordinator", MODULE, KOORDINATOR_VERSION, {f"{MODULE}/cmd/koord-scheduler": BINARY}, CRDS
)
SCHEDULER_NAME: Final = "koord-scheduler"
SCHEDULER: Final = SecondScheduler(
    KOORDINATOR,
    BINARY,
    # Koordinator's Coscheduling wherever it plugs in (its own ordering of a gang's pods comes
    # through the default queue sort).
    plugins={"multiPoint": {"enabled": [{"name": "Coscheduling"}]}},
    # Its server still opens the deprecated plain-HTTP port (10251, every interface) unless
    # told not to, and answers /healthz but not /readyz. v1.8.0 has been seen (about one run
    # in five) to bind a gang's pods but one once room came and park that one as
    # unschedulable with no event left to wake it: it is tried again after 30 s, not after
    # kube-scheduler's default 5 minutes.
    extra_args=("--port=0", "--pod-max-in-unschedulable-pods-duration=30s"),
    ready_path="/healthz",
)


def write_module(directory: Path | None = None) -> None:
    KOORDINATOR.write(
        "Koordinator's koord-scheduler Gangway tests and `gangway up` run",
        pins={f"k8s.io/{name}": UNSERVED_PIN for name in UNSERVED},
        directory=directory,
    )
