"""What Volcano's PodGroup says holds a gang back, in Gangway's vocabulary. Pure.

vc-scheduler puts an ``Unschedulable`` condition on the PodGroup when a session could not
place the gang (``NotEnoughResources``, with its own words: "2/4 tasks in gang
unschedulable: …"), and a ``Scheduled`` one once it did; the newest says how it stands.
``NotEnoughTasks`` (fewer pods than the minimum, e.g. while they are gated) is podgang's
to say: the gang is not the scheduler's yet. So is a gang whose pods are all still behind
Gangway's gate: vc-scheduler 1.10 skips gated pods but its gang plugin still closes each
session with ``NotEnoughResources`` ("2/2 tasks in gang unschedulable: pod group is not
ready, 2 Pending, …", a TODO in its source), with no "Origin reason" — which every gang it
did try and could not place carries (a node's fit error, or why it was not let in). Told
as a verdict, each gang would have a SchedulerBlocked written and cleared again a second
later: two PodGang writes a gang for nothing a user can act on.

Each session's ``enqueue`` action first weighs a PodGroup's ``minResources`` against what
its queue may still take — the queue's ``capability`` where it has one, else the whole
cluster (``proportion``, ``capacity``) — and a gang refused there stays ``Pending``, never
let into the queue, its condition in the same words as no room (``NotEnoughResources``; its
Event, "queue resource quota insufficient", is not mirrored). So a Pending gang whose
queue caps a resource its minimum asks for is over its quota (``OverQuota``, with the
queue's numbers), and one whose queue caps none of them has no room (``Unschedulable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gangway_contracts import why

UNSCHEDULABLE: Final = "Unschedulable"
# Too few pods to try the gang: not a verdict on the gang.
NOT_TRIED: Final = frozenset({"NotEnoughTasks", "NotEnoughPodsOfTask"})
PLACED_PHASES: Final = frozenset({"Running", "Completed"})
# Not let into its queue by the enqueue action.
NOT_ENQUEUED: Final = "Pending"
# How vc-scheduler's gang message goes on once a try of the gang failed (JobInfo.FitError).
TRIED: Final = "Origin reason is"


def kept_out(podgroup: Mapping[str, Any]) -> bool:
    """Not let into its queue (yet): the one case the Queue's numbers say more."""
    return (podgroup.get("status") or {}).get("phase") == NOT_ENQUEUED


def view_of(
    podgroup: Mapping[str, Any], queue: Mapping[str, Any] | None = None
) -> why.Verdict | None:
    """``queue``: the PodGroup's Queue as mirrored (None: not known)."""
    status = podgroup.get("status") or {}
    if status.get("phase") in PLACED_PHASES:
        return None
    conditions = sorted(
        status.get("conditions") or [], key=lambda c: str(c.get("lastTransitionTime") or "")
    )
    newest = conditions[-1] if conditions else None
    if newest is None or newest.get("type") != UNSCHEDULABLE or newest.get("status") != "True":
        return None
    if newest.get("reason") in NOT_TRIED:
        return None
    words = str(newest.get("message") or newest.get("reason") or "")
    if not kept_out(podgroup):
        # Let in: a verdict once its pods were tried; else they are still gated (or the
        # session did not reach the gang), and its pods say the rest.
        return why.Verdict(why.UNSCHEDULABLE, words) if TRIED in words else None
    spec = podgroup.get("spec") or {}
    needed: Mapping[str, Any] = spec.get("minResources") or {}
    queue_spec = (queue or {}).get("spec") or {}
    capped = {n: v for n, v in (queue_spec.get("capability") or {}).items() if n in needed}
    if capped:
        return why.Verdict(why.OVER_QUOTA, _over_quota(spec, needed, capped, queue or {}))
    return why.Verdict(
        why.UNSCHEDULABLE,
        f"Volcano keeps the gang out of queue {spec.get('queue')}: its minimum "
        f"({_listed(needed)}) is more than the cluster has free (PodGroup Pending, "
        f"not enqueued); {words}",
    )


def _over_quota(
    spec: Mapping[str, Any],
    needed: Mapping[str, Any],
    capped: Mapping[str, Any],
    queue: Mapping[str, Any],
) -> str:
    allocated = ((queue.get("status") or {}).get("allocated")) or {}
    taken = {n: allocated[n] for n in capped if n in allocated}
    return (
        f"Volcano keeps the gang out of queue {spec.get('queue')}: its minimum "
        f"({_listed(needed)}) does not fit in the queue's capability ({_listed(capped)}"
        + (f"; taken: {_listed(taken)}" if taken else "")
        + ") (PodGroup Pending, not enqueued)"
    )


def _listed(resources: Mapping[str, Any]) -> str:
    return ", ".join(f"{name} {value}" for name, value in resources.items()) or "nothing named"
