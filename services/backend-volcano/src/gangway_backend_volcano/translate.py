"""PodGang → Volcano PodGroup, and the checks Volcano needs of a PodCliqueSet. Pure.

One PodGroup (``scheduling.volcano.sh/v1beta1``) per PodGang, named like it, in the
PodCliqueSet's queue. Volcano calls a gang's roles *tasks*: each podgroup of the PodGang is
one task (its pods carry ``volcano.sh/task-spec: <podgroup>``) with its own minimum in
``minTaskMember``, and ``minMember`` is their sum, so vc-scheduler binds the gang only when
every role has its minimum. Pods join the PodGroup by the annotation
``scheduling.k8s.io/group-name`` and go to the scheduler the profile names.

vc-scheduler tries a gang's pods in task-priority order and stops at the first set that fits
the gang's minimums; with all pods equal, a role's spare pods (beyond its minAvailable) could
take the room another role's minimum needs, and the gang would be rejected each session (seen
in tests/e2e/test_volcano.py). So each pod within its podgroup's minimum (by its index) gets a
higher task priority (``volcano.sh/task-priority``) than the spare ones: every minimum is
tried first, and the spare pods take what room is left. Task priority orders pods within one
gang only; between gangs Volcano compares the PodGroups' priority classes.

Written for Volcano v1.10, the release built here. Volcano 1.14 added ``subGroupPolicy`` (a
label selector per subgroup) and deprecated ``minTaskMember``; Grove's own backend writes
the newer form and refuses older Volcano. Later releases still read ``minTaskMember``
(deprecated, not removed), so the same PodGroup keeps each role's minimum on them too.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any, Final

from gangway_backend_volcano.builtin import NAME, VolcanoConfig
from gangway_backendkit import queues
from gangway_backendkit.checks import without_topology
from gangway_backendkit.converge import carried_metadata, gang_object_name
from gangway_backendkit.pods import PreparePod, amend
from gangway_backendkit.protocol import Manifest
from gangway_backendkit.queues import Queue
from gangway_contracts import labels
from gangway_contracts.errors import FieldError
from gangway_contracts.grove import PodCliqueSet, PodGang, clique_of
from gangway_contracts.podspec import pod_requests, quantity_text
from gangway_contracts.rpc import UnsupportedFeature
from gangway_runtime.kube import ApiResource

PODGROUPS: Final = ApiResource("scheduling.volcano.sh", "v1beta1", "podgroups")
QUEUES: Final = ApiResource("scheduling.volcano.sh", "v1beta1", "queues", namespaced=False)
# Grove's key for a workload's Volcano queue (on the PodCliqueSet or a clique template).
QUEUE_KEY: Final = "scheduling.grove.io/volcano-queue"
# The key vc-scheduler maps a pod to its PodGroup by; Volcano's own controllers also write
# the second, and Grove's backend sets both.
GROUP_NAME: Final = "scheduling.k8s.io/group-name"
VOLCANO_GROUP_NAME: Final = "scheduling.volcano.sh/group-name"
TASK_SPEC: Final = "volcano.sh/task-spec"
TASK_PRIORITY: Final = "volcano.sh/task-priority"
MINIMUM_TASK_PRIORITY: Final = "1"
SPARE_TASK_PRIORITY: Final = "0"
# A queue in these states takes no new PodGroups (Volcano's webhook refuses them); a queue
# no controller has written a state on yet is taken as open, as vc-scheduler does.
CLOSED_STATES: Final = ("Closed", "Closing")


def resolve_queue(pcs: PodCliqueSet, config: VolcanoConfig) -> Queue:
    """The Volcano queue of a PodCliqueSet: Grove's ``scheduling.grove.io/volcano-queue``,
    on the PodCliqueSet or its clique templates, else the profile's default queue."""
    return queues.resolve_queue(pcs, QUEUE_KEY, default=config.default_queue, missing="")


def min_member(podgang: PodGang) -> int:
    """Every podgroup's minimum, summed; at least 1 (a gang of none is placed pod by pod)."""
    return max(1, sum(group.min_replicas for group in podgang.spec.podgroups))


def min_resources(podgang: PodGang, pcs: PodCliqueSet) -> dict[str, str]:
    """What the gang's minimum asks of the cluster: each podgroup's minReplicas pods'
    requests, summed (as Volcano's own job controller fills ``minResources``). vc-scheduler's
    enqueue weighs it against the queue's capability and keeps a gang that would exceed it
    ``Pending``, out of the queue, saying so; without it every gang is let in and fails to
    be placed in the words used for no room."""
    total: dict[str, Decimal] = {}
    per_clique: dict[str, dict[str, Decimal]] = {}  # a clique's podgroups ask alike
    for group in podgang.spec.podgroups:
        try:
            clique = clique_of(podgang, pcs, group.name)
        except KeyError:
            return {}  # not all known: no minimum rather than a wrong one
        if clique.name not in per_clique:
            per_clique[clique.name] = pod_requests(clique.spec.pod_spec)
        for name, value in per_clique[clique.name].items():
            total[name] = total.get(name, Decimal(0)) + value * group.min_replicas
    return {name: quantity_text(value) for name, value in sorted(total.items()) if value > 0}


def podgroup(podgang: PodGang, queue: str, pcs: PodCliqueSet | None = None) -> Manifest:
    """The Volcano PodGroup for a PodGang, in ``queue``; its minimum's resources from the
    PodCliqueSet's cliques."""
    spec: dict[str, Any] = {
        "minMember": min_member(podgang),
        "minTaskMember": {g.name: g.min_replicas for g in podgang.spec.podgroups},
        "queue": queue,
    }
    if pcs is not None and (needed := min_resources(podgang, pcs)):
        spec["minResources"] = needed
    if podgang.spec.priority_class_name:
        spec["priorityClassName"] = podgang.spec.priority_class_name
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": "PodGroup",
        "metadata": carried_metadata(podgang, podgang.metadata.name),
        "spec": spec,
    }


def keep_queue(desired: Manifest, live: Manifest) -> Manifest:
    """``desired`` in the live PodGroup's queue: a gang stays in the queue it was made in
    (its share is accounted there); a new queue applies to PodGangs made afterwards."""
    queue = live.get("spec", {}).get("queue")
    if not queue:
        return desired
    return {**desired, "spec": {**desired["spec"], "queue": queue}}


def prepare_pod(scheduler_name: str) -> PreparePod:
    """Hand a pod to vc-scheduler, in its PodGang's PodGroup, as its podgroup's task."""

    def prepare(pod: Manifest, podgang: PodGang, podgroup_name: str) -> Manifest:
        name = gang_object_name(podgang, podgang.metadata.name)
        priority = task_priority(pod, podgang, podgroup_name)
        return amend(
            pod,
            annotations={
                GROUP_NAME: name,
                VOLCANO_GROUP_NAME: name,
                TASK_SPEC: podgroup_name,
                TASK_PRIORITY: priority,
            },
            spec={"schedulerName": scheduler_name},
        )

    return prepare


def task_priority(pod: Manifest, podgang: PodGang, podgroup_name: str) -> str:
    """The minimum's task priority for a pod whose index (in its clique) is below its
    podgroup's minReplicas, or that carries no index; the spare one otherwise."""
    index = pod.get("metadata", {}).get("labels", {}).get(labels.POD_INDEX, "")
    minimum = next(g.min_replicas for g in podgang.spec.podgroups if g.name == podgroup_name)
    spare = index.isdigit() and int(index) >= minimum
    return SPARE_TASK_PRIORITY if spare else MINIMUM_TASK_PRIORITY


def queue_problem(name: str, live: Manifest | None) -> str | None:
    """Why PodGroups cannot go into the queue ``name`` (given as the cluster holds it)."""
    if live is None:
        return f'Volcano Queue "{name}" does not exist in the cluster'
    state = (live.get("status") or {}).get("state") or ""
    if state in CLOSED_STATES:
        return f'Volcano Queue "{name}" is {state}: it takes no new PodGroups'
    return None


def validate(
    pcs: PodCliqueSet, config: VolcanoConfig
) -> tuple[list[FieldError], list[UnsupportedFeature]]:
    """What Volcano cannot take, without asking the cluster. Volcano v1.10 has no
    network-topology placement (HyperNodes came in v1.12), so packing is refused like any
    backend without topology."""
    errors, unsupported = without_topology(pcs, NAME)
    errors = [*resolve_queue(pcs, config).errors, *errors]
    return errors, unsupported
