"""Label, annotation, condition and gate names Gangway and Grove put on objects.

Grove's names are kept exactly, so tools written for Grove read Gangway's objects.
"""

from __future__ import annotations

from typing import Final

# Grove's keys (operator/api/common/labels.go, scheduler reference).
PART_OF: Final = "app.kubernetes.io/part-of"
MANAGED_BY: Final = "app.kubernetes.io/managed-by"
COMPONENT: Final = "app.kubernetes.io/component"
APP_NAME: Final = "app.kubernetes.io/name"
COMPONENT_PODGANG: Final = "podgang"  # on the PodGangs and pods podgang makes
PODGANG: Final = "grove.io/podgang"
PODCLIQUE: Final = "grove.io/podclique"
BASE_PODGANG: Final = "grove.io/base-podgang"
PCS_REPLICA_INDEX: Final = "grove.io/podcliqueset-replica-index"
SCALING_GROUP: Final = "grove.io/podcliquescalinggroup"
SCALING_GROUP_REPLICA_INDEX: Final = "grove.io/podcliquescalinggroup-replica-index"
POD_INDEX: Final = "grove.io/podclique-pod-index"
POD_TEMPLATE_HASH: Final = "grove.io/pod-template-hash"
SCHEDULER_NAME: Final = "grove.io/scheduler-name"
TOPOLOGY_NAME: Final = "grove.io/topology-name"

# What Grove's operator puts on what it drives: its PodCliqueSet finalizer, and managed-by.
GROVE_FINALIZER: Final = "grove.io/podcliqueset.grove.io"
MANAGED_BY_GROVE: Final = "grove-operator"

# The gate every Gangway pod is created with; only the podgang service removes it.
PODGANG_PENDING_CREATION_GATE: Final = "grove.io/podgang-pending-creation"

# Ours.
MANAGED_BY_GANGWAY: Final = "gangway"
TRACEPARENT_ANNOTATION: Final = "gangway.dev/traceparent"
# On a PodClique or scaling group: the template's replicas it was last made from. Its
# spec.replicas differing from them is a scale (an HPA's, kubectl scale), honoured until
# the template's own replicas change.
TEMPLATE_REPLICAS_ANNOTATION: Final = "gangway.dev/template-replicas"
# On an HPA podgang made: the digest of the spec it was written with (the API server
# defaults an HPA's spec, so the live spec is not compared).
SPEC_DIGEST_ANNOTATION: Final = "gangway.dev/spec-digest"

# A gang's incarnation: absent (0) until the gang is first made again (a roll, a recycle),
# then one more each time. On the PodGang (annotation) and on each pod made for it (label):
# a pod of an earlier incarnation is an old gang's. Scheduler objects of incarnation n > 0
# carry it in their names (gangway_contracts.incarnations).
INCARNATION: Final = "gangway.dev/incarnation"

# PodGang conditions: Initialized is the podgang service's, BackendSynced the backend's.
INITIALIZED: Final = "Initialized"
BACKEND_SYNCED: Final = "BackendSynced"
# Grove's: True once minReplicas pods of every podgroup are on nodes; reflects current state.
SCHEDULED: Final = "Scheduled"
# Grove's: True while minReplicas pods of every podgroup are ready; reflects current state.
READY: Final = "Ready"
# Grove's PodGang status fields: when each of those last became True.
LAST_TRUE: Final = {SCHEDULED: "lastScheduled", READY: "lastReady"}
