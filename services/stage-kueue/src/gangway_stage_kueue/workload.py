"""PodGang → Kueue Workload, and what Kueue wrote on it. Pure.

One Workload (``kueue.x-k8s.io/v1beta2``) per PodGang incarnation, named like it, in the
PodCliqueSet's LocalQueue: one podSet per podgroup, counting the podgroup's pods, its
template one container asking what each pod asks of a node (containers, sidecars, init
containers and overhead, as the scheduler counts them) with the pods' nodeSelector,
tolerations and node affinity, which Kueue matches flavors against. The gang's priority is
its PriorityClass's value, as Kueue's own integrations give it (Kueue orders and preempts
by ``spec.priority``). Made once every pod of the gang is referenced: the counts are known.

Kueue writes its decision in the Workload's conditions: ``QuotaReserved`` and ``Admitted``
once admitted, ``Evicted`` (with ``QuotaReserved`` still True) when it takes the admission
back — preempted for a higher workload, its queue stopped. An integration then stops the
workload and clears the reservation; Kueue requeues it. :func:`unreserved` is that clearing,
as Kueue's own job integrations write it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

import msgspec

from gangway_backendkit.converge import carried_metadata
from gangway_backendkit.manifest import Manifest
from gangway_contracts import kueue, kueue_topology, labels, why
from gangway_contracts.grove import PodCliqueSet, PodGang, clique_of
from gangway_contracts.k8s import is_dns_label
from gangway_contracts.podspec import pod_requests, quantity_text
from gangway_runtime.kube import ApiResource
from gangway_stage_kueue import domains

WORKLOADS: Final = ApiResource(kueue.GROUP, kueue.VERSION, "workloads")
PRIORITY_CLASSES: Final = ApiResource("scheduling.k8s.io", "v1", "priorityclasses", False)
QUOTA_RESERVED: Final = "QuotaReserved"
KUEUE_ADMITTED: Final = "Admitted"
EVICTED: Final = "Evicted"
REQUEUED: Final = "Requeued"
# Kueue's reasons: an eviction to make room for another, a queue that admits nothing.
PREEMPTED: Final = "Preempted"
INADMISSIBLE: Final = "Inadmissible"
# How Kueue's words begin when no domain of its topology fits a podSet ('topology "x"
# allows to fit only 2 out of 4 pod(s)').
_NO_DOMAIN: Final = 'topology "'
# ... and when the queue's flavors have no Topology (kueue.topology on, a queue without TAS).
_NO_TOPOLOGY: Final = "does not support TopologyAwareScheduling"


class _Scheduling(msgspec.Struct, rename="camel"):
    """What of a pod spec Kueue matches flavors against."""

    node_selector: dict[str, str] = {}
    tolerations: list[msgspec.Raw] = []
    affinity: dict[str, msgspec.Raw] = {}


def podset_name(podgang: PodGang, podgroup: str) -> str:
    """The podgroup's name without its PodCliqueSet replica's prefix (``prefill``,
    ``workers-1-decode``): a DNS label, as Kueue wants; hashed when it is too long."""
    prefix = f"{podgang.metadata.labels.get(labels.PART_OF, '')}-"
    prefix += f"{podgang.metadata.labels.get(labels.PCS_REPLICA_INDEX, '')}-"
    name = podgroup.removeprefix(prefix)
    if is_dns_label(name):
        return name
    digest = hashlib.sha256(podgroup.encode()).hexdigest()[:10]
    return f"{name[:52].strip('-.')}-{digest}"


def podset(
    podgang: PodGang, pcs: PodCliqueSet, group: int, topology: kueue_topology.Request | None = None
) -> Manifest:
    """One podgroup's podSet; ``topology``: the domain Kueue is to keep it in."""
    podgroup = podgang.spec.podgroups[group]
    pod_spec = clique_of(podgang, pcs, podgroup.name).spec.pod_spec
    requests = {
        name: quantity_text(q) for name, q in sorted(pod_requests(pod_spec).items()) if q > 0
    }
    scheduling = msgspec.json.decode(pod_spec, type=_Scheduling)
    spec: dict[str, Any] = {"containers": [{"name": "pod", "resources": {"requests": requests}}]}
    if scheduling.node_selector:
        spec["nodeSelector"] = scheduling.node_selector
    if scheduling.tolerations:
        spec["tolerations"] = msgspec.json.decode(msgspec.json.encode(scheduling.tolerations))
    if "nodeAffinity" in scheduling.affinity:
        spec["affinity"] = {
            "nodeAffinity": msgspec.json.decode(scheduling.affinity["nodeAffinity"])
        }
    found: Manifest = {
        "name": podset_name(podgang, podgroup.name),
        "count": len(podgroup.pod_references),
        "template": {"spec": spec},
    }
    if topology is not None:
        asked = {"required" if topology.required else "preferred": topology.level}
        if topology.group:
            asked["podSetGroupName"] = podset_name(podgang, topology.group)
        found["topologyRequest"] = asked
    return found


def workload(
    podgang: PodGang,
    pcs: PodCliqueSet,
    queue: str,
    priority: int | None,
    requests: Mapping[str, kueue_topology.Request] | None = None,
) -> Manifest:
    """The Workload for a PodGang whose pods are all referenced, in LocalQueue ``queue``;
    ``priority``: its PriorityClass's value (None: it names none); ``requests``: the
    domains Kueue is to choose, by podgroup (``kueue_topology.podgang_requests``). KeyError
    for a podgroup of no clique of ``pcs``."""
    requests = requests or {}
    groups = podgang.spec.podgroups
    spec: dict[str, Any] = {
        "queueName": queue,
        "podSets": [podset(podgang, pcs, i, requests.get(g.name)) for i, g in enumerate(groups)],
    }
    if podgang.spec.priority_class_name and priority is not None:
        spec["priorityClassRef"] = {
            "group": PRIORITY_CLASSES.group,
            "kind": "PriorityClass",
            "name": podgang.spec.priority_class_name,
        }
        spec["priority"] = priority
    return {
        "apiVersion": WORKLOADS.api_version,
        "kind": "Workload",
        "metadata": carried_metadata(podgang, podgang.metadata.name),
        "spec": spec,
    }


def assignments(live: Manifest) -> dict[str, dict[str, Any]]:
    """podSet name → the topology assignment Kueue admitted it with (none: Kueue chose no
    domains, its flavor has no Topology)."""
    admission = (live.get("status") or {}).get("admission") or {}
    return {
        found["name"]: found["topologyAssignment"]
        for found in admission.get("podSetAssignments") or []
        if found.get("topologyAssignment")
    }


@dataclass(frozen=True)
class Verdict:
    """What Kueue decided of a gang's Workload, in the words of the PodGang's
    ``QueueAdmitted`` condition (the reasons of ``gangway_contracts.why``)."""

    admitted: bool
    reason: str
    message: str
    cluster_queue: str = ""
    # Kueue took the admission back and its quota is still reserved: the gang stops, then
    # the reservation is cleared (:func:`unreserved`).
    evicted: bool = False


def _conditions(live: Manifest) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in (live.get("status") or {}).get("conditions") or []}


def verdict_of(live: Manifest | None) -> Verdict:
    """Kueue's decision on the Workload as it stands (None: not made, or not mirrored yet)."""
    if live is None:
        return Verdict(False, why.GATED, "waiting for Kueue to admit the gang")
    found = _conditions(live)
    evicted = found.get(EVICTED, {})
    reserved = found.get(QUOTA_RESERVED, {})
    queue = ((live.get("status") or {}).get("admission") or {}).get("clusterQueue", "")
    if evicted.get("status") == "True":
        reason = why.PREEMPTED if evicted.get("reason") == PREEMPTED else why.QUEUE_CLOSED
        return Verdict(
            False,
            reason,
            f"evicted by Kueue: {evicted.get('message', '')}",
            queue,
            evicted=reserved.get("status") == "True",
        )
    if found.get(KUEUE_ADMITTED, {}).get("status") == "True":
        return Verdict(True, kueue.ADMITTED, f"admitted by Kueue in ClusterQueue {queue}", queue)
    if reserved.get("status") == "False":
        words = reserved.get("message", "")
        reason = why.OVER_QUOTA
        if reserved.get("reason") == INADMISSIBLE or _NO_TOPOLOGY in words:
            reason = why.QUEUE_CLOSED  # or its flavors cannot take a topology request
        elif _NO_DOMAIN in words and "quota" not in words:
            reason = why.UNSCHEDULABLE  # within quota, but no domain has room for it
        return Verdict(False, reason, f"Kueue: {words}")
    return Verdict(False, why.GATED, "waiting for Kueue to admit the gang")


def placed(
    verdict: Verdict,
    podgang: PodGang,
    assigned: Mapping[str, dict[str, Any]],
    requests: Mapping[str, kueue_topology.Request],
) -> Verdict:
    """Kueue's admission with the domains it chose (``assigned``: its assignments by podSet)
    in words: ``TopologyAssigned``, "…, in gangway.dev/rack rack-1"."""
    asked = {podset_name(podgang, group): r.level for group, r in requests.items()}
    where = domains.where(assigned, asked)
    return Verdict(
        True,
        kueue_topology.TOPOLOGY_ASSIGNED,
        f"{verdict.message}, in {where}",
        verdict.cluster_queue,
    )


def unreserved(live: Manifest, at: str) -> Manifest:
    """The status patch that hands an evicted Workload's quota back once its gang has
    stopped, as Kueue's job integrations write it: no admission, ``QuotaReserved`` and
    ``Admitted`` False, ``Requeued`` (True after a preemption: Kueue tries it again). Under
    the Workload's resourceVersion: a Workload Kueue changed since is read again."""
    found = _conditions(live)
    evicted = found[EVICTED]
    generation = live["metadata"].get("generation", 1)

    def condition(type_: str, status: str, reason: str, message: str) -> dict[str, Any]:
        return {
            "type": type_,
            "status": status,
            "reason": reason,
            "message": message,
            "lastTransitionTime": at,
            "observedGeneration": generation,
        }

    replaced = (QUOTA_RESERVED, KUEUE_ADMITTED, REQUEUED)
    kept = [c for t, c in found.items() if t not in replaced]
    preempted = evicted.get("reason") == PREEMPTED
    return {
        "metadata": {"resourceVersion": live["metadata"]["resourceVersion"]},
        "status": {
            "admission": None,
            "conditions": [
                *kept,
                condition(QUOTA_RESERVED, "False", "Pending", evicted.get("message", "")),
                condition(
                    KUEUE_ADMITTED, "False", "NoReservation", "The workload has no reservation"
                ),
                condition(
                    REQUEUED,
                    "True" if preempted else "False",
                    evicted.get("reason", ""),
                    evicted.get("message", ""),
                ),
            ],
        },
    }
