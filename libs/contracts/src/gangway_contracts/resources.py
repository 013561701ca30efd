"""The Kubernetes resources Gangway mirrors onto the bus, and which backend owns each.

The watcher lists and watches exactly these; every other service reads them from the
OBJECTS stream under the ``kind`` token given here. Backends declare their own resources
(built-ins here, third-party ones in their profile's ``resources``), so a backend's consumer
also sees its PodGroups or Workloads change and can repair drift.
"""

from __future__ import annotations

from dataclasses import dataclass

from gangway_contracts import labels
from gangway_contracts.config import (
    COSCHEDULING,
    DEFAULT_SCHEDULER,
    KAI_SCHEDULER,
    KOORDINATOR,
    RESOURCE_REF,
    VOLCANO,
    KubeSchedulerConfig,
    SchedulerConfig,
)
from gangway_contracts.grove import GROVE_GROUP, GROVE_VERSION, SCHEDULER_GROUP, SCHEDULER_VERSION
from gangway_contracts.subjects import Kind

MANAGED_BY_GANGWAY_SELECTOR = f"{labels.MANAGED_BY}={labels.MANAGED_BY_GANGWAY}"


@dataclass(frozen=True)
class MirroredResource:
    kind: str  # the subject token: a Kind, or "<plural>.<group>" for backend resources
    group: str  # "" for the core API
    versions: tuple[str, ...]  # candidates, preferred first: the first one served is used
    plural: str
    namespaced: bool = True
    label_selector: str = ""
    # The backend owning every object of this resource; "" when ownership is per object
    # (PodGangs say it in a label) or nobody's.
    backend: str = ""


PODCLIQUESETS = MirroredResource(Kind.PODCLIQUESET, GROVE_GROUP, (GROVE_VERSION,), "podcliquesets")
PODGANGS = MirroredResource(Kind.PODGANG, SCHEDULER_GROUP, (SCHEDULER_VERSION,), "podgangs")
# Only the pods Gangway made: a cluster's other pods are none of its business.
PODS = MirroredResource(Kind.POD, "", ("v1",), "pods", label_selector=MANAGED_BY_GANGWAY_SELECTOR)
# Grove's topology level names → node-label keys; cluster-scoped, and optional: when the CRD
# is not installed, a PodCliqueSet's pack constraints stay unresolved (a condition says so).
CLUSTER_TOPOLOGY_BINDINGS = MirroredResource(
    Kind.CLUSTERTOPOLOGYBINDING,
    GROVE_GROUP,
    (GROVE_VERSION,),
    "clustertopologybindings",
    namespaced=False,
)


def _backend_resource(backend: str, plural: str, group: str, *versions: str) -> MirroredResource:
    return MirroredResource(
        kind=f"{plural}.{group}",
        group=group,
        versions=versions,
        plural=plural,
        label_selector=MANAGED_BY_GANGWAY_SELECTOR,
        backend=backend,
    )


KAI_PODGROUPS = _backend_resource(KAI_SCHEDULER, "podgroups", "scheduling.run.ai", "v2alpha2")
COSCHEDULING_PODGROUPS = _backend_resource(
    COSCHEDULING, "podgroups", "scheduling.x-k8s.io", "v1alpha1"
)
KOORDINATOR_PODGROUPS = _backend_resource(
    KOORDINATOR, "podgroups", "scheduling.sigs.k8s.io", "v1alpha1"
)
VOLCANO_PODGROUPS = _backend_resource(VOLCANO, "podgroups", "scheduling.volcano.sh", "v1beta1")
# Workload API: 1.35 serves v1alpha1 (Workload only), 1.36 v1alpha2 and 1.37 v1beta1
# (Workload + PodGroup).
WORKLOADS = _backend_resource(
    DEFAULT_SCHEDULER, "workloads", "scheduling.k8s.io", "v1beta1", "v1alpha2", "v1alpha1"
)
KUBE_PODGROUPS = _backend_resource(
    DEFAULT_SCHEDULER, "podgroups", "scheduling.k8s.io", "v1beta1", "v1alpha2"
)
# The backends whose one resource is mirrored whenever they are enabled.
PODGROUPS_OF: dict[str, MirroredResource] = {
    KAI_SCHEDULER: KAI_PODGROUPS,
    COSCHEDULING: COSCHEDULING_PODGROUPS,
    KOORDINATOR: KOORDINATOR_PODGROUPS,
    VOLCANO: VOLCANO_PODGROUPS,
}


def backend_resources(config: SchedulerConfig) -> list[MirroredResource]:
    """What the enabled backends declare, in a stable order."""
    found: list[MirroredResource] = []
    for name in config.enabled:
        profile = config.profiles[name]
        if name in PODGROUPS_OF:
            found.append(PODGROUPS_OF[name])
        elif name == DEFAULT_SCHEDULER:
            kube = profile.config
            if isinstance(kube, KubeSchedulerConfig) and kube.gang_scheduling:
                found += [WORKLOADS, KUBE_PODGROUPS]
        for ref in profile.resources:
            match = RESOURCE_REF.match(ref)
            assert match is not None, "validated when the configuration was read"
            found.append(_backend_resource(name, match["plural"], match["group"], match["version"]))
    return found


def mirrored_resources(config: SchedulerConfig) -> list[MirroredResource]:
    return [PODCLIQUESETS, PODGANGS, PODS, CLUSTER_TOPOLOGY_BINDINGS, *backend_resources(config)]


def owner_of(resource: MirroredResource, object_labels: dict[str, str]) -> str:
    """The backend an object belongs to: its resource's, or a PodGang's scheduler label."""
    if resource.backend:
        return resource.backend
    if resource.kind == Kind.PODGANG:
        return object_labels.get(labels.SCHEDULER_NAME, "")
    return ""
