"""The Kubernetes resources Gangway mirrors onto the bus, and which backend owns each.

The watcher lists and watches exactly these; every other service reads them from the
OBJECTS stream under the ``kind`` token given here. Backends declare their own resources
(a built-in one in its package's ``builtin.py``, a third-party one in its profile's
``resources``), so a backend's consumer also sees its PodGroups or Workloads change and can
repair drift.
"""

from __future__ import annotations

from gangway_contracts import kueue, labels
from gangway_contracts.builtin import builtin_backends
from gangway_contracts.cliques import PODCLIQUE_PLURAL, PODCLIQUESCALINGGROUP_PLURAL
from gangway_contracts.config import RESOURCE_REF, SchedulerConfig
from gangway_contracts.grove import GROVE_GROUP, GROVE_VERSION, SCHEDULER_GROUP, SCHEDULER_VERSION
from gangway_contracts.mirrored import (
    MANAGED_BY_GANGWAY_SELECTOR,
    MirroredResource,
    backend_resource,
)
from gangway_contracts.services import COMPONENT_HEADLESS_SERVICE, COMPONENT_READY_SERVICE
from gangway_contracts.subjects import Kind

__all__ = [
    "AUTOSCALERS",
    "CLUSTER_TOPOLOGY_BINDINGS",
    "PODCLIQUES",
    "PODCLIQUESCALINGGROUPS",
    "PODCLIQUESETS",
    "PODGANGS",
    "PODS",
    "SERVICES",
    "MirroredResource",
    "backend_resources",
    "mirrored_resources",
    "owner_of",
]

PODCLIQUESETS = MirroredResource(Kind.PODCLIQUESET, GROVE_GROUP, (GROVE_VERSION,), "podcliquesets")
PODGANGS = MirroredResource(Kind.PODGANG, SCHEDULER_GROUP, (SCHEDULER_VERSION,), "podgangs")
# Only the pods Gangway made: a cluster's other pods are none of its business.
PODS = MirroredResource(Kind.POD, "", ("v1",), "pods", label_selector=MANAGED_BY_GANGWAY_SELECTOR)
# Only the headless Services podgang made: one per PodCliqueSet replica, one per clique that
# others start after.
SERVICES = MirroredResource(
    Kind.SERVICE,
    "",
    ("v1",),
    "services",
    label_selector=f"{MANAGED_BY_GANGWAY_SELECTOR},{labels.COMPONENT} in "
    f"({COMPONENT_HEADLESS_SERVICE},{COMPONENT_READY_SERVICE})",
)
# Only the PodCliques and scaling groups podgang made (Grove's operator makes its own).
PODCLIQUES = MirroredResource(
    Kind.PODCLIQUE,
    GROVE_GROUP,
    (GROVE_VERSION,),
    PODCLIQUE_PLURAL,
    label_selector=MANAGED_BY_GANGWAY_SELECTOR,
)
PODCLIQUESCALINGGROUPS = MirroredResource(
    Kind.PODCLIQUESCALINGGROUP,
    GROVE_GROUP,
    (GROVE_VERSION,),
    PODCLIQUESCALINGGROUP_PLURAL,
    label_selector=MANAGED_BY_GANGWAY_SELECTOR,
)
# Only the HorizontalPodAutoscalers podgang made (autoScalingConfig, scaleConfig).
AUTOSCALERS = MirroredResource(
    Kind.HPA,
    "autoscaling",
    ("v2",),
    "horizontalpodautoscalers",
    label_selector=MANAGED_BY_GANGWAY_SELECTOR,
)
# Grove's topology level names → node-label keys; cluster-scoped, and optional: when the CRD
# is not installed, a PodCliqueSet's pack constraints stay unresolved (a condition says so).
CLUSTER_TOPOLOGY_BINDINGS = MirroredResource(
    Kind.CLUSTERTOPOLOGYBINDING,
    GROVE_GROUP,
    (GROVE_VERSION,),
    "clustertopologybindings",
    namespaced=False,
)


def backend_resources(config: SchedulerConfig) -> list[MirroredResource]:
    """What the enabled backends declare (a built-in one in its package, a third-party one
    in its profile's ``resources``), in a stable order."""
    found: list[MirroredResource] = []
    table = builtin_backends()
    for name in config.enabled:
        profile = config.profiles[name]
        if name in table:
            found += table[name].mirrored(profile.config)
        for ref in profile.resources:
            match = RESOURCE_REF.match(ref)
            assert match is not None, "validated when the configuration was read"
            found.append(backend_resource(name, match["plural"], match["group"], match["version"]))
    return found


def mirrored_resources(config: SchedulerConfig) -> list[MirroredResource]:
    return [
        PODCLIQUESETS,
        PODGANGS,
        PODS,
        SERVICES,
        PODCLIQUES,
        PODCLIQUESCALINGGROUPS,
        AUTOSCALERS,
        CLUSTER_TOPOLOGY_BINDINGS,
        *backend_resources(config),
        *([kueue.WORKLOADS] if config.kueue else []),
    ]


def owner_of(resource: MirroredResource, object_labels: dict[str, str]) -> str:
    """The backend an object belongs to: its resource's, or a PodGang's scheduler label."""
    if resource.backend:
        return resource.backend
    if resource.kind == Kind.PODGANG:
        return object_labels.get(labels.SCHEDULER_NAME, "")
    return ""
