"""Why a gang is not scheduled, in one vocabulary whatever the scheduler: the reason of a
PodGang's ``Scheduled`` condition, of the journal's ``SchedulerVerdict`` and of
``gangway why``. Each backend reads its scheduler's own objects into these words
(docs/backends.md has the table, per scheduler); podgang reads the rest off the pods.

In the order a gang meets them: its gates are on (``Gated``: waiting on what), its backend
could not translate it (``BackendNotSynced``), the scheduler has not said anything yet
(``AwaitingScheduler``), or the scheduler holds it back: its queue is missing or closed
(``QueueClosed``), the queue's quota or limit would be exceeded (``OverQuota``), it was
preempted (``Preempted``), there is no room for it (``Unschedulable``), some of it is placed
but a podgroup is below its minimum (``BelowMinCount``), or the scheduler failed
(``SchedulerError``). Placed: Grove's ``PodGangScheduled``."""

from __future__ import annotations

from typing import Final

import msgspec

SCHEDULED: Final = "PodGangScheduled"  # Grove's reason for Scheduled=True

GATED: Final = "Gated"
BACKEND_NOT_SYNCED: Final = "BackendNotSynced"
AWAITING_SCHEDULER: Final = "AwaitingScheduler"
QUEUE_CLOSED: Final = "QueueClosed"
OVER_QUOTA: Final = "OverQuota"
PREEMPTED: Final = "Preempted"
UNSCHEDULABLE: Final = "Unschedulable"
BELOW_MIN_COUNT: Final = "BelowMinCount"
SCHEDULER_ERROR: Final = "SchedulerError"

# Reasons a scheduler gives for a gang it tried (the others say it has not, yet).
SCHEDULER_REASONS: Final = frozenset(
    {QUEUE_CLOSED, OVER_QUOTA, PREEMPTED, UNSCHEDULABLE, BELOW_MIN_COUNT, SCHEDULER_ERROR}
)
# Before the scheduler can try the gang.
NOT_TRIED: Final = frozenset({GATED, BACKEND_NOT_SYNCED, AWAITING_SCHEDULER})
REASONS: Final = (SCHEDULED, *sorted(NOT_TRIED), *sorted(SCHEDULER_REASONS))

# A PodGang condition the backend writes from its scheduler's own objects: True while they
# say the gang is held back (reason one of SCHEDULER_REASONS, message the scheduler's words),
# False once they no longer do. Absent until a scheduler first holds a gang back: a gang
# placed at once costs no write.
SCHEDULER_BLOCKED: Final = "SchedulerBlocked"
NOT_BLOCKED: Final = "NotBlocked"

# What a user can do next, by reason (gangway why).
NEXT_STEP: Final[dict[str, str]] = {
    GATED: "wait: Gangway lifts the gates once what the message names is done",
    BACKEND_NOT_SYNCED: "fix what the backend names (the PodCliqueSet's fields), or its scheduler",
    AWAITING_SCHEDULER: "check the scheduler named by the pods' schedulerName is running",
    QUEUE_CLOSED: "create or open the queue, or name another in the PodCliqueSet",
    OVER_QUOTA: "wait for the queue's other work to finish, raise its quota, or use another queue",
    PREEMPTED: "wait: the gang is placed again when room returns",
    UNSCHEDULABLE: "add nodes, free room, or ask for less (replicas, requests, minAvailable)",
    BELOW_MIN_COUNT: "free room for the podgroup named, or lower its minAvailable",
    SCHEDULER_ERROR: "read the scheduler's log: one of its plugins failed",
}


class Verdict(msgspec.Struct, frozen=True):
    """A scheduler's view of one gang held back: a reason of SCHEDULER_REASONS and the
    scheduler's own words, shortest useful form."""

    reason: str
    message: str


def reason_of_pod(reason: str) -> str:
    """A pod's PodScheduled=False reason in the vocabulary: every scheduler says
    ``Unschedulable`` (or its own word for it), kube-scheduler ``SchedulerError`` when a
    plugin failed."""
    return SCHEDULER_ERROR if reason == SCHEDULER_ERROR else UNSCHEDULABLE
