"""Views of Grove's PodClique and PodCliqueScalingGroup (grove.io/v1alpha1): one object per
clique instance and per scaling group of each PodCliqueSet replica, with Grove's names and
the status Grove's operator writes, so `kubectl get pclq,pcsg` and tools written for Grove
(NVIDIA Dynamo's operator reads their status) see what they see under Grove.

Gangway's podgang service makes them from the PodCliqueSet and writes their status from the
pods the watcher mirrors. Both serve ``/scale``, as Grove's do: the replicas an HPA (made from
``autoScalingConfig`` / ``scaleConfig``) or ``kubectl scale`` sets are the pods or group
replicas podgang plans, until the template's own replicas change.
"""

from __future__ import annotations

from typing import Annotated, Final

from gangway_contracts.crdtypes import Int32, Int64, Timestamp, crd
from gangway_contracts.grove import GROVE_GROUP, GROVE_VERSION, LastError, PodCliqueSpec
from gangway_contracts.k8s import Condition, ObjectMeta, Wire

# A count Grove's CRD requires and defaults to 0.
Count = Annotated[Int32, crd(required=True)]

PODCLIQUE_PLURAL: Final = "podcliques"
PODCLIQUESCALINGGROUP_PLURAL: Final = "podcliquescalinggroups"
CLIQUE_API_VERSION: Final = f"{GROVE_GROUP}/{GROVE_VERSION}"

# Grove's condition types and reasons (operator/api/common/constants).
PODCLIQUE_SCHEDULED: Final = "PodCliqueScheduled"
MIN_AVAILABLE_BREACHED: Final = "MinAvailableBreached"
INSUFFICIENT_SCHEDULED_PODS: Final = "InsufficientScheduledPods"
SUFFICIENT_SCHEDULED_PODS: Final = "SufficientScheduledPods"
SCHEDULED_BELOW_MIN_AVAILABLE: Final = "ScheduledReplicasBelowMinAvailable"
INSUFFICIENT_READY_PODS: Final = "InsufficientReadyPods"
SUFFICIENT_READY_PODS: Final = "SufficientReadyPods"
INSUFFICIENT_AVAILABLE_REPLICAS: Final = "InsufficientAvailablePodCliqueScalingGroupReplicas"
SUFFICIENT_AVAILABLE_REPLICAS: Final = "SufficientAvailablePodCliqueScalingGroupReplicas"
# Grove's app.kubernetes.io/component values: a standalone clique's, a scaling group's
# clique's, a scaling group's.
COMPONENT_PODCLIQUE: Final = "pcs-podclique"
COMPONENT_GROUP_PODCLIQUE: Final = "pcsg-podclique"
COMPONENT_SCALING_GROUP: Final = "pcs-podcliquescalinggroup"


class PodsSelectedToUpdate(Wire, frozen=True, kw_only=True):
    """Grove's rolling update: the ready pod being replaced, and those done."""

    current: str
    """The pod being replaced now."""
    completed: list[str] = []
    """The pods replaced already."""


class PodCliqueUpdateProgress(Wire, frozen=True, kw_only=True):
    """Grove's operator's progress through a rolling update (Gangway does not set it)."""

    pod_clique_set_generation_hash: str
    """The PodCliqueSet's generation hash the update moves to."""
    pod_template_hash: str
    """The template hash the update moves to."""
    update_started_at: Timestamp | None = None
    """When the update began."""
    update_ended_at: Timestamp | None = None
    """When the update finished."""
    ready_pods_selected_to_update: PodsSelectedToUpdate | None = None
    """Which ready pods are being replaced."""


class PodCliqueStatus(Wire, frozen=True, kw_only=True):
    """The clique instance's pods, as Gangway last counted them."""

    ready_replicas: Count = 0
    """Pods whose Ready condition is True."""
    updated_replicas: Count = 0
    """Pods made from the current template."""
    schedule_gated_replicas: Count = 0
    """Pods still behind the gang's scheduling gate."""
    scheduled_replicas: Count = 0
    """Pods bound to a node."""
    observed_generation: Int64 | None = None
    """The spec generation this status describes."""
    replicas: Int32 | None = None
    """Pods that exist (not being deleted)."""
    hpa_pod_selector: str | None = None
    """The label selector of the clique instance's pods."""
    current_pod_template_hash: str | None = None
    """The hash of the template the clique instance's pods are made from now."""
    current_pod_clique_set_generation_hash: str | None = None
    """Grove's operator's hash of the PodCliqueSet it acted on (Gangway does not set it)."""
    update_progress: PodCliqueUpdateProgress | None = None
    """Grove's operator's rolling-update progress (Gangway does not set it)."""
    last_errors: list[LastError] = []
    """Errors Grove's operator met (Gangway reports through conditions instead)."""
    conditions: list[Condition] = []
    """PodCliqueScheduled and MinAvailableBreached, as Grove's operator writes them."""


class PodClique(Wire, frozen=True, kw_only=True):
    """One clique of one PodCliqueSet replica (or of one scaling-group replica): its pods'
    spec and how many of them are there, scheduled and ready."""

    metadata: ObjectMeta
    spec: PodCliqueSpec
    """The clique's pods, as the PodCliqueSet's template says."""
    api_version: str = CLIQUE_API_VERSION
    kind: str = "PodClique"
    status: PodCliqueStatus | None = None
    """How many of its pods exist, are scheduled and ready (written by Gangway)."""


class PodCliqueScalingGroupSpec(Wire, frozen=True, kw_only=True):
    """One scaling group of one PodCliqueSet replica."""

    replicas: Int32 = 1
    """Replicas of the group."""
    min_available: Int32 = 1
    """Replicas of the group the workload cannot run without."""
    clique_names: list[str] = []
    """The cliques (template names) each replica of the group is made of."""


class ReplicasSelectedToUpdate(Wire, frozen=True, kw_only=True):
    """Grove's rolling update of a scaling group: the replica being replaced, and those done."""

    current: Int32
    """The replica index being replaced now."""
    completed: list[Int32] = []
    """The replica indices replaced already."""


class PodCliqueScalingGroupUpdateProgress(Wire, frozen=True, kw_only=True):
    """Grove's operator's progress through a rolling update (Gangway does not set it)."""

    pod_clique_set_generation_hash: str
    """The PodCliqueSet's generation hash the update moves to."""
    update_started_at: Timestamp
    """When the update began."""
    update_ended_at: Timestamp | None = None
    """When the update finished."""
    total_pod_cliques_count: Int32 = 0
    """PodCliques of the group."""
    updated_pod_cliques_count: Int32 = 0
    """PodCliques of the group updated so far."""
    ready_replica_indices_selected_to_update: ReplicasSelectedToUpdate | None = None
    """Which ready replicas are being replaced."""


class PodCliqueScalingGroupStatus(Wire, frozen=True, kw_only=True):
    """The group's replicas, as Gangway last counted them."""

    scheduled_replicas: Count = 0
    """Replicas whose every clique has its minimum of pods scheduled."""
    available_replicas: Count = 0
    """Replicas none of whose cliques is below its minimum."""
    updated_replicas: Count = 0
    """Replicas whose every pod is made from the current template."""
    observed_generation: Int64 | None = None
    """The spec generation this status describes."""
    replicas: Int32 | None = None
    """Replicas of the group."""
    selector: str | None = None
    """The label selector of the group's pods."""
    current_pod_clique_set_generation_hash: str | None = None
    """Grove's operator's hash of the PodCliqueSet it acted on (Gangway does not set it)."""
    update_progress: PodCliqueScalingGroupUpdateProgress | None = None
    """Grove's operator's rolling-update progress (Gangway does not set it)."""
    last_errors: list[LastError] = []
    """Errors Grove's operator met (Gangway reports through conditions instead)."""
    conditions: list[Condition] = []
    """MinAvailableBreached, as Grove's operator writes it."""


class PodCliqueScalingGroup(Wire, frozen=True, kw_only=True):
    """Cliques of one PodCliqueSet replica that scale together."""

    metadata: ObjectMeta
    spec: PodCliqueScalingGroupSpec
    """The group's replicas and cliques, as the PodCliqueSet's template says."""
    api_version: str = CLIQUE_API_VERSION
    kind: str = "PodCliqueScalingGroup"
    status: PodCliqueScalingGroupStatus | None = None
    """How many of its replicas are scheduled and available (written by Gangway)."""
