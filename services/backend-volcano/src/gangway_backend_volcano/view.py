"""What Volcano's PodGroup says holds a gang back, in Gangway's vocabulary. Pure.

vc-scheduler puts an ``Unschedulable`` condition on the PodGroup when a session could not
place the gang (``NotEnoughResources``, with its own words: "2/4 tasks in gang
unschedulable: …"), and a ``Scheduled`` one once it did; the newest says how it stands.
``NotEnoughTasks`` (fewer pods than the minimum, e.g. while they are gated) is podgang's
to say: the gang is not the scheduler's yet. A queue at its capability is said the same
way as no room (``NotEnoughResources``); only an Event names the quota (docs/backends.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from gangway_contracts import why

UNSCHEDULABLE: Final = "Unschedulable"
# Too few pods to try the gang: not a verdict on the gang.
NOT_TRIED: Final = frozenset({"NotEnoughTasks", "NotEnoughPodsOfTask"})
PLACED_PHASES: Final = frozenset({"Running", "Completed"})


def view_of(podgroup: Mapping[str, Any]) -> why.Verdict | None:
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
    return why.Verdict(why.UNSCHEDULABLE, words or "Volcano cannot place the gang")
