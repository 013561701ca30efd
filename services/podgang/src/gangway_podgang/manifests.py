"""Planned gangs → the PodGang, Pod and headless Service manifests the podgang service
creates. Pure.

Labels follow Grove's, so tools written for Grove read Gangway's objects; the PodGang and
the Service are owned by their PodCliqueSet and each pod by its PodGang (deleting a
PodCliqueSet cascades). Pods are found by name as under Grove (``discovery``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import msgspec

from gangway_contracts import labels
from gangway_contracts.codec import to_object
from gangway_contracts.grove import (
    PODGANG_API_VERSION,
    PodCliqueSet,
    PodGangSpec,
    PodGroup,
    TopologyConstraintGroupConfig,
)
from gangway_contracts.k8s import NamespacedName, ObjectMeta
from gangway_contracts.services import COMPONENT_HEADLESS_SERVICE, COMPONENT_READY_SERVICE
from gangway_podgang import discovery, startup
from gangway_podgang.plan import PlannedGang, PlannedPodGroup


def owner_reference(api_version: str, kind: str, name: str, uid: str) -> dict[str, Any]:
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": name,
        "uid": uid,
        "controller": True,
        "blockOwnerDeletion": True,
    }


def podcliqueset_owner(pcs: PodCliqueSet) -> dict[str, Any]:
    """The owner reference of what a PodCliqueSet owns directly (its PodGangs, Services,
    PodCliques, scaling groups): deleting it takes them with it."""
    meta = pcs.metadata
    return owner_reference(pcs.api_version, pcs.kind, meta.name, meta.uid)


def controlled_by(meta: ObjectMeta, uid: str) -> bool:
    """Only what we made is ours to change or delete: objects whose controller is ``uid``."""
    return any(ref.uid == uid and ref.controller for ref in meta.owner_references)


def all_references(gang: PlannedGang, namespace: str) -> list[list[NamespacedName]]:
    """Every planned pod of each podgroup: the references of an initialized gang."""
    return [[NamespacedName(namespace=namespace, name=p) for p in g.pods] for g in gang.podgroups]


def podgang_spec(
    gang: PlannedGang,
    namespace: str,
    priority_class: str | None,
    references: Sequence[Sequence[NamespacedName]] | None = None,
) -> PodGangSpec:
    """The spec of a gang; ``references`` per podgroup (none: empty, as at creation)."""
    refs = references or [[] for _ in gang.podgroups]
    return PodGangSpec(
        podgroups=[
            PodGroup(
                name=group.name,
                min_replicas=group.min_replicas,
                pod_references=list(group_refs),
                topology_constraint=group.topology,
            )
            for group, group_refs in zip(gang.podgroups, refs, strict=True)
        ],
        topology_constraint=gang.topology,
        topology_constraint_group_configs=[
            TopologyConstraintGroupConfig(
                name=c.name, pod_group_names=list(c.podgroups), topology_constraint=c.topology
            )
            for c in gang.group_configs
        ],
        priority_class_name=priority_class,
    )


def replica_labels(pcs: PodCliqueSet, replica: int, component: str) -> dict[str, str]:
    """The labels of every object Gangway makes for a PodCliqueSet replica: the PodCliqueSet's
    own labels, then Grove's (managed-by Gangway), which win on conflict."""
    return {
        **pcs.metadata.labels,
        labels.MANAGED_BY: labels.MANAGED_BY_GANGWAY,
        labels.PART_OF: pcs.metadata.name,
        labels.COMPONENT: component,
        labels.PCS_REPLICA_INDEX: str(replica),
    }


def podgang_labels(gang: PlannedGang, pcs: PodCliqueSet, backend: str) -> dict[str, str]:
    found = replica_labels(pcs, gang.pcs_replica, labels.COMPONENT_PODGANG)
    found[labels.SCHEDULER_NAME] = backend
    if not gang.is_base:
        found[labels.BASE_PODGANG] = gang.base
    if gang.scaling_group:
        found[labels.SCALING_GROUP] = gang.scaling_group
    return found


def podgang_manifest(
    gang: PlannedGang, pcs: PodCliqueSet, backend: str, pod_references: bool = False
) -> dict[str, Any]:
    """The PodGang object. Created with empty pod references (GREP-375: PodGangs exist
    before their pods); ``pod_references=True`` shows the references it will hold."""
    meta = pcs.metadata
    annotations = {labels.TOPOLOGY_NAME: pcs.topology_name} if pcs.topology_name else {}
    manifest: dict[str, Any] = {
        "apiVersion": PODGANG_API_VERSION,
        "kind": "PodGang",
        "metadata": {
            "name": gang.name,
            "namespace": meta.namespace,
            "labels": podgang_labels(gang, pcs, backend),
            **({"annotations": annotations} if annotations else {}),
            "ownerReferences": [podcliqueset_owner(pcs)],
        },
        "spec": to_object(
            podgang_spec(
                gang,
                meta.namespace,
                pcs.spec.template.priority_class_name,
                all_references(gang, meta.namespace) if pod_references else None,
            )
        ),
    }
    return manifest


def pod_labels(
    gang: PlannedGang, group: PlannedPodGroup, index: int, pcs: PodCliqueSet
) -> dict[str, str]:
    own = {
        labels.MANAGED_BY: labels.MANAGED_BY_GANGWAY,
        labels.PART_OF: pcs.metadata.name,
        labels.PODGANG: gang.name,
        labels.PODCLIQUE: group.name,
        labels.PCS_REPLICA_INDEX: str(gang.pcs_replica),
        labels.POD_INDEX: str(index),
        labels.POD_TEMPLATE_HASH: group.template_hash,
    }
    if group.scaling_group is not None:
        own[labels.SCALING_GROUP] = group.scaling_group
        own[labels.SCALING_GROUP_REPLICA_INDEX] = str(group.scaling_group_replica)
    return {**group.clique.labels, **own}


def pod_manifest(
    gang: PlannedGang,
    group: PlannedPodGroup,
    index: int,
    pcs: PodCliqueSet,
    podgang_uid: str,
    *,
    startup_image: str = startup.IMAGE,
    incarnation: int = 0,
) -> dict[str, Any]:
    """One pod, gated: the scheduler sees it only after the podgang service lifts the gate.
    A pod of a clique that starts after others waits in an init container of
    ``startup_image`` (startup.py)."""
    spec: dict[str, Any] = msgspec.json.decode(group.clique.spec.pod_spec)
    # Gates can only be set at creation, never added later (the API server refuses).
    spec["schedulingGates"] = [
        *[
            g
            for g in spec.get("schedulingGates", [])
            if g.get("name") != labels.PODGANG_PENDING_CREATION_GATE
        ],
        {"name": labels.PODGANG_PENDING_CREATION_GATE},
    ]
    _discoverable(spec, gang, group, index, pcs)
    # Every pod at the PodCliqueSet's priority, a clique's own replaced (as Grove does;
    # admission warns of one): the scheduler's gang and its pods are then at one priority.
    spec.pop("priorityClassName", None)
    if pcs.spec.template.priority_class_name:
        spec["priorityClassName"] = pcs.spec.template.priority_class_name
    if group.waits_on:  # last, as Grove's: the template's own init containers run first
        waiting = startup.init_container(group.waits_on, pcs.metadata.namespace, startup_image)
        spec["initContainers"] = [*(spec.get("initContainers") or []), waiting]
    metadata: dict[str, Any] = {
        "name": group.pods[index],
        "namespace": pcs.metadata.namespace,
        "labels": pod_labels(gang, group, index, pcs),
        "ownerReferences": [
            owner_reference(PODGANG_API_VERSION, "PodGang", gang.name, podgang_uid)
        ],
    }
    if incarnation:  # the gang made again: which one this pod is of
        metadata["labels"][labels.INCARNATION] = str(incarnation)
    if group.clique.annotations:
        metadata["annotations"] = dict(group.clique.annotations)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def _discoverable(
    spec: dict[str, Any], gang: PlannedGang, group: PlannedPodGroup, index: int, pcs: PodCliqueSet
) -> None:
    """Grove's hostname, subdomain and variables on one pod's spec."""
    spec["hostname"] = group.pods[index]  # <podclique>-<index>, as Grove names it
    spec["subdomain"] = discovery.service_name(pcs.metadata.name, gang.pcs_replica)
    grove = discovery.variables(
        pcs, gang.pcs_replica, group.name, group.scaling_group, group.scaling_group_pods
    )
    discovery.with_variables(spec.get("containers") or [], grove)
    discovery.with_variables(spec.get("initContainers") or [], grove)


def headless_service(pcs: PodCliqueSet, replica: int) -> dict[str, Any]:
    """The Service of one PodCliqueSet replica with Grove's labels (managed-by Gangway) and a
    selector of that replica's pods; it lists them before they are ready unless the
    PodCliqueSet's headlessServiceConfig says otherwise (Grove's default)."""
    config = pcs.spec.template.headless_service_config
    publish = config.publish_not_ready_addresses if config else True
    name = discovery.service_name(pcs.metadata.name, replica)
    replica_pods = {labels.PCS_REPLICA_INDEX: str(replica)}
    return _headless(pcs, replica, name, COMPONENT_HEADLESS_SERVICE, replica_pods, publish=publish)


def ready_service(pcs: PodCliqueSet, replica: int, podclique: str) -> dict[str, Any]:
    """The Service of a clique others start after: named as its PodClique, it lists only
    that clique's ready pods, so a name lookup counts them (startup.py)."""
    pods = {labels.PODCLIQUE: podclique}
    return _headless(pcs, replica, podclique, COMPONENT_READY_SERVICE, pods, publish=False)


def _headless(
    pcs: PodCliqueSet,
    replica: int,
    name: str,
    component: str,
    pods: dict[str, str],
    *,
    publish: bool,
) -> dict[str, Any]:
    meta = pcs.metadata
    selector = {labels.PART_OF: meta.name, labels.MANAGED_BY: labels.MANAGED_BY_GANGWAY, **pods}
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": name,
            "namespace": meta.namespace,
            "labels": {**replica_labels(pcs, replica, component), labels.APP_NAME: name},
            "ownerReferences": [podcliqueset_owner(pcs)],
        },
        "spec": {"clusterIP": "None", "selector": selector, "publishNotReadyAddresses": publish},
    }
