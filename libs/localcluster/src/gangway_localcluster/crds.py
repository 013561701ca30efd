"""Which CRD files a local cluster installs: all from the checkout or a module download."""

from __future__ import annotations

from pathlib import Path
from typing import Final

from gangway_localcluster import coscheduling, koordinator, volcano
from gangway_localcluster import kai as kai_scheduler
from gangway_localcluster.build import REPO

GANGWAY_CRDS: Final = REPO / "deploy" / "crds"
# Grove's CRDs, pinned in the repository (third_party/README.md says from where and why).
GROVE_CRDS: Final = REPO / "third_party" / "grove"
# Gangway reads ClusterTopologyBindings and does not ship their CRD; grove.io's other CRDs
# are Gangway's own (deploy/crds): upstream copies of them would replace ours.
CLUSTER_TOPOLOGY_BINDINGS: Final = GROVE_CRDS / "grove.io_clustertopologybindings.yaml"


def gangway_crds() -> list[Path]:
    """The CRDs Gangway ships (what ``gangway up --kubeconfig`` installs where missing)."""
    return sorted(p for p in GANGWAY_CRDS.glob("*.yaml") if p.name != "kustomization.yaml")


def crd_files(schedulers: bool = False) -> list[Path]:
    """Gangway's own CRDs and Grove's ClusterTopologyBinding; with ``schedulers``, the second
    schedulers' CRDs (KAI's, scheduler-plugins' PodGroup, Koordinator's, Volcano's) from their
    module downloads, for a cluster that stores their objects without running them
    (``ControlPlane.start`` installs the CRDs of the schedulers it runs itself)."""
    modules = (
        kai_scheduler.KAI,
        coscheduling.SCHEDULER_PLUGINS,
        koordinator.KOORDINATOR,
        volcano.VOLCANO,
    )
    second = [crd for module in modules for crd in module.crds()] if schedulers else []
    return [*gangway_crds(), CLUSTER_TOPOLOGY_BINDINGS, *second]
