"""Journal domain events: what each service decided, one tagged union.

Every event names the workload (the PodCliqueSet) it belongs to, when it happened, which
service decided it and the trace it is part of, so ``gangway trace ns/pcs`` can rebuild a
timeline from the journal alone. The ``type`` field carries the class name.
"""

from __future__ import annotations

from datetime import datetime

from gangway_contracts.errors import FieldError
from gangway_contracts.k8s import NamespacedName, Wire


class JournalEvent(Wire, frozen=True, kw_only=True, tag_field="type", tag=True):
    workload: NamespacedName
    at: datetime
    service: str
    trace_id: str = ""


class PodCliqueSetObserved(JournalEvent, frozen=True, kw_only=True):
    generation: int


class PodGangPlanned(JournalEvent, frozen=True, kw_only=True):
    podgangs: list[str]


class PodGangCreated(JournalEvent, frozen=True, kw_only=True):
    podgang: str
    backend: str


class PodGangDeleted(JournalEvent, frozen=True, kw_only=True):
    podgang: str


class GangTerminated(JournalEvent, frozen=True, kw_only=True):
    """A gang recycled whole: these cliques stayed below their minimum for ``delay`` (the
    PodCliqueSet's terminationDelay) after it ran."""

    podgang: str
    cliques: list[str]
    delay: str


class GangRolled(JournalEvent, frozen=True, kw_only=True):
    """A gang replaced whole by a rolling update (RollingRecreate): these pods were made
    from an older template and are deleted, to be made again from the current one."""

    podgang: str
    pods: list[str]


class PodsCreated(JournalEvent, frozen=True, kw_only=True):
    podgang: str
    pods: list[str]


class PodGangInitialized(JournalEvent, frozen=True, kw_only=True):
    podgang: str


class BackendSynced(JournalEvent, frozen=True, kw_only=True):
    podgang: str
    backend: str
    resources: list[str] = []


class BackendSyncFailed(JournalEvent, frozen=True, kw_only=True):
    podgang: str
    backend: str
    reason: str
    message: str


class GatesLifted(JournalEvent, frozen=True, kw_only=True):
    podgang: str
    pods: list[str]


class PodGangPhaseChanged(JournalEvent, frozen=True, kw_only=True):
    """What the scheduler did with the gang, read off its pods: Pending (none bound),
    Starting (some bound), Running (every pod Running)."""

    podgang: str
    phase: str
    bound: int = 0
    running: int = 0


class SchedulerVerdict(JournalEvent, frozen=True, kw_only=True):
    """The PodGang's Scheduled condition changed: placed (``scheduled``), or why not, in the
    scheduler's words when it gave any (``Unschedulable``, ``SchedulerError``)."""

    podgang: str
    scheduled: bool
    reason: str
    message: str = ""


class PodGangReadyChanged(JournalEvent, frozen=True, kw_only=True):
    """The PodGang's Ready condition changed: every podgroup has its minReplicas pods ready
    (``ready``), or no longer; with the gang's ready pods, counted."""

    podgang: str
    ready: bool
    ready_pods: int
    pods: int


class QueueAdmitted(JournalEvent, frozen=True, kw_only=True):
    """Kueue admitted the gang's Workload in ``cluster_queue``: its gates may lift."""

    podgang: str
    cluster_queue: str
    message: str = ""


class QueueHeld(JournalEvent, frozen=True, kw_only=True):
    """Kueue holds the gang back, in the one vocabulary (``OverQuota`` or ``QueueClosed``
    while it waits, ``Preempted`` once evicted), with Kueue's words."""

    podgang: str
    reason: str
    message: str = ""


class AdmissionRejected(JournalEvent, frozen=True, kw_only=True):
    operation: str
    errors: list[FieldError]


AnyJournalEvent = (
    PodCliqueSetObserved
    | PodGangPlanned
    | PodGangCreated
    | PodGangDeleted
    | GangTerminated
    | GangRolled
    | PodsCreated
    | PodGangInitialized
    | BackendSynced
    | BackendSyncFailed
    | GatesLifted
    | PodGangPhaseChanged
    | SchedulerVerdict
    | PodGangReadyChanged
    | QueueAdmitted
    | QueueHeld
    | AdmissionRejected
)


def event_type(event: JournalEvent) -> str:
    """The tag value: also the last token of the event's journal subject."""
    return type(event).__name__
