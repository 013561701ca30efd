"""PodGang → KAI PodGroup, and the checks KAI needs of a PodCliqueSet. Pure.

The PodGroup (``scheduling.run.ai/v2alpha2``) is named like the PodGang: ``minMember`` is the
sum of the podgroups' minReplicas, one leaf subgroup per podgroup, and one inner subgroup per
topologyConstraintGroupConfig (a scaling-group replica packed together) as the parent of its
leaves. Pods join it by annotation and subgroup label.

Written for KAI v0.12.0, the release built here, and read the same by later ones: an inner
subgroup carries no ``minSubGroup`` (v0.12's CRD has no such field and would drop it), which
in every release means all its children are needed, as Gangway wants.
"""

from __future__ import annotations

from typing import Any, Final

from gangway_backend_kai.builtin import NAME
from gangway_backendkit import queues
from gangway_backendkit.converge import carried_metadata, gang_object_name
from gangway_backendkit.pods import amend
from gangway_backendkit.protocol import Manifest, SyncFailed
from gangway_backendkit.queues import Queue
from gangway_contracts import labels
from gangway_contracts.errors import FieldError, not_dns_labels
from gangway_contracts.grove import (
    ClusterTopologyBinding,
    PackConstraint,
    PodCliqueSet,
    PodGang,
    PodGangTopologyConstraint,
    longest_instance_names,
    topology_constraints,
)
from gangway_contracts.k8s import is_dns_label
from gangway_runtime.kube import ApiResource

PODGROUPS: Final = ApiResource("scheduling.run.ai", "v2alpha2", "podgroups")
QUEUES: Final = ApiResource("scheduling.run.ai", "v2", "queues", namespaced=False)
TOPOLOGIES: Final = ApiResource("kai.scheduler", "v1alpha1", "topologies", namespaced=False)

QUEUE_LABEL: Final = "kai.scheduler/queue"
NODE_POOL_LABEL: Final = "kai.scheduler/node-pool"
TOPOLOGY_ANNOTATION: Final = "kai.scheduler/topology"
SKIP_PODGROUPER: Final = "kai.scheduler/skip-podgrouper"
POD_GROUP_ANNOTATION: Final = "pod-group-name"
SUBGROUP_LABEL: Final = "kai.scheduler/subgroup-name"

# Fields KAI's own components set on a PodGroup after it exists; an update keeps them.
_KAI_MANAGED_SPEC: Final = ("queue", "markUnschedulable", "schedulingBackoff")
_KAI_MANAGED_LABELS: Final = (QUEUE_LABEL, NODE_POOL_LABEL)


# --- queue ----------------------------------------------------------------------------------


def resolve_queue(pcs: PodCliqueSet) -> Queue:
    """The KAI queue of a PodCliqueSet: its ``kai.scheduler/queue`` label (or annotation), or
    the one its clique templates agree on. KAI has no default queue."""
    return queues.resolve_queue(
        pcs,
        QUEUE_LABEL,
        default=None,
        missing="kai-scheduler needs a queue: label the PodCliqueSet with the name of a "
        "KAI Queue (there is no default queue)",
    )


# --- validation -----------------------------------------------------------------------------


def validate(pcs: PodCliqueSet) -> list[FieldError]:
    """What KAI cannot take, without asking the cluster."""
    errors = list(resolve_queue(pcs).errors)
    for field, constraint in topology_constraints(pcs):
        if (constraint.required or constraint.preferred) and not pcs.topology_name:
            errors.append(
                FieldError(
                    field=f"{field}.pack",
                    reason="kai-scheduler places by a named Topology: set "
                    "spec.template.topologyConstraint.topologyName",
                )
            )
    if pcs.spec.replicas:  # subgroups are named <pcs>-<replica>-<instance>
        prefix = f"{pcs.metadata.name}-{pcs.spec.replicas - 1}"
        named = ((f, f"{prefix}-{n}") for f, n in longest_instance_names(pcs))
        errors += not_dns_labels("KAI subgroup name", named)
    return errors


# --- PodGang → PodGroup ---------------------------------------------------------------------


def _packing(constraint: PodGangTopologyConstraint | None) -> PackConstraint | None:
    """The constraint's pack levels, if it packs pods at all."""
    pack = constraint.pack_constraint if constraint else None
    return pack if pack and (pack.required or pack.preferred) else None


def _topology(
    constraint: PodGangTopologyConstraint | None, topology: str | None, field: str
) -> dict[str, str] | None:
    pack = _packing(constraint)
    if pack is None:
        return None
    if not topology:
        raise SyncFailed(
            "TopologyNameMissing",
            f"{field} packs pods but the PodGang names no Topology "
            f"(annotation {labels.TOPOLOGY_NAME})",
        )
    kai: dict[str, str] = {"topology": topology}
    if pack.required:
        kai["requiredTopologyLevel"] = pack.required
    if pack.preferred:
        kai["preferredTopologyLevel"] = pack.preferred
    return kai


def _subgroup(name: str, field: str, **spec: Any) -> dict[str, Any]:
    if not is_dns_label(name):
        raise SyncFailed("InvalidSubGroupName", f'{field}: "{name}" is not a DNS label')
    return {"name": name, **{k: v for k, v in spec.items() if v is not None}}


def podgroup(podgang: PodGang, queue: str) -> Manifest:
    """The KAI PodGroup for a PodGang."""
    spec = podgang.spec
    topology = topology_name(podgang)
    parents = {
        group: config.name
        for config in spec.topology_constraint_group_configs
        for group in config.pod_group_names
    }
    subgroups = [
        _subgroup(
            group.name,
            f"spec.podgroups[{i}].name",
            minMember=group.min_replicas,
            parent=parents.get(group.name),
            topologyConstraint=_topology(
                group.topology_constraint, topology, f"spec.podgroups[{i}].topologyConstraint"
            ),
        )
        for i, group in enumerate(spec.podgroups)
    ]
    subgroups += [
        _subgroup(
            config.name,
            f"spec.topologyConstraintGroupConfigs[{i}].name",
            topologyConstraint=_topology(
                config.topology_constraint,
                topology,
                f"spec.topologyConstraintGroupConfigs[{i}].topologyConstraint",
            ),
        )
        for i, config in enumerate(spec.topology_constraint_group_configs)
    ]
    metadata = carried_metadata(podgang, podgang.metadata.name)
    metadata["annotations"][SKIP_PODGROUPER] = "true"
    kai_spec: dict[str, Any] = {
        "minMember": sum(group.min_replicas for group in spec.podgroups),
        "queue": queue,
        "subGroups": subgroups,
    }
    if spec.priority_class_name:
        kai_spec["priorityClassName"] = spec.priority_class_name
    gang_topology = _topology(spec.topology_constraint, topology, "spec.topologyConstraint")
    if gang_topology:
        kai_spec["topologyConstraint"] = gang_topology
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": "PodGroup",
        "metadata": metadata,
        "spec": kai_spec,
    }


def topology_name(podgang: PodGang) -> str | None:
    """The Topology the PodGang packs by: Grove's annotation, else KAI's own."""
    annotations = podgang.metadata.annotations
    return annotations.get(labels.TOPOLOGY_NAME) or annotations.get(TOPOLOGY_ANNOTATION)


def packs(podgang: PodGang) -> bool:
    """Whether any constraint of the PodGang (gang, podgroup, group config) packs pods."""
    spec = podgang.spec
    constraints = [
        spec.topology_constraint,
        *(group.topology_constraint for group in spec.podgroups),
        *(config.topology_constraint for config in spec.topology_constraint_group_configs),
    ]
    return any(_packing(c) for c in constraints)


def kai_topology(binding: ClusterTopologyBinding) -> Manifest:
    """KAI's Topology for a ClusterTopologyBinding: the same name, its node-label keys as
    levels in its order (both list the broadest first), owned by the binding so that it goes
    with it."""
    meta = binding.metadata
    owner = {"apiVersion": binding.api_version, "kind": binding.kind, "name": meta.name}
    return {
        "apiVersion": TOPOLOGIES.api_version,
        "kind": "Topology",
        "metadata": {
            "name": meta.name,
            "labels": {labels.MANAGED_BY: labels.MANAGED_BY_GANGWAY},
            "ownerReferences": [{**owner, "uid": meta.uid}],
        },
        "spec": {"levels": [{"nodeLabel": level.key} for level in binding.spec.levels]},
    }


def keep_kai_managed(desired: Manifest, live: Manifest) -> Manifest:
    """``desired`` with what KAI manages once the PodGroup exists taken from ``live``: the
    queue (fixed at creation), markUnschedulable, schedulingBackoff, node-pool and queue
    labels."""
    live_spec, live_labels = live.get("spec", {}), live["metadata"].get("labels", {})
    spec = dict(desired["spec"])
    spec.update({k: live_spec[k] for k in _KAI_MANAGED_SPEC if live_spec.get(k) is not None})
    meta = dict(desired["metadata"])
    meta["labels"] = {
        **meta.get("labels", {}),
        **{k: live_labels[k] for k in _KAI_MANAGED_LABELS if k in live_labels},
    }
    return {**desired, "metadata": meta, "spec": spec}


def prepare_pod(pod: Manifest, podgang: PodGang, podgroup_name: str) -> Manifest:
    """Hand a pod to KAI: its scheduler, its PodGroup and subgroup, podgrouper kept off."""
    return amend(
        pod,
        labels={SUBGROUP_LABEL: podgroup_name},
        annotations={
            POD_GROUP_ANNOTATION: gang_object_name(podgang, podgang.metadata.name),
            SKIP_PODGROUPER: "true",
        },
        spec={"schedulerName": NAME},
    )
