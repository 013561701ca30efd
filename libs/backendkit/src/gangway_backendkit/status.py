"""Writing the backend's condition onto a PodGang's status.

Grove declares status.conditions an atomic list, so a merge patch carries the whole list;
the resourceVersion precondition makes sure no one else's condition written meanwhile is
lost (409 → read again, merge again).
"""

from __future__ import annotations

from typing import Any

import msgspec

from gangway_backendkit.conditions import merged_conditions
from gangway_contracts.grove import PODGANG_PLURAL, SCHEDULER_GROUP, SCHEDULER_VERSION
from gangway_contracts.k8s import Condition
from gangway_runtime.kube import ApiResource, Kube, KubeError

PODGANGS = ApiResource(SCHEDULER_GROUP, SCHEDULER_VERSION, PODGANG_PLURAL)
_ATTEMPTS = 5
# Grove requires status.phase; a PodGang nobody has placed yet is Pending.
_PENDING = "Pending"


async def set_condition(kube: Kube, current: dict[str, Any], condition: Condition) -> bool:
    """Merge ``condition`` into the PodGang's status, starting from ``current`` (the store's
    copy, usually fresh enough). Returns whether anything was written; False also when the
    PodGang is gone."""
    meta = current["metadata"]
    path = PODGANGS.path(meta["namespace"], meta["name"], "status")
    for _ in range(_ATTEMPTS):
        status = current.get("status") or {}
        conditions = merged_conditions(status.get("conditions") or [], condition)
        if conditions is None:
            return False
        patch = {
            "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
            "status": {"phase": status.get("phase") or _PENDING, "conditions": conditions},
        }
        try:
            await kube.request(
                "PATCH", path, body=patch, content_type="application/merge-patch+json"
            )
            return True
        except KubeError as exc:
            if exc.status == 404:
                return False
            if exc.status != 409:
                raise
        current = msgspec.json.decode(await kube.request("GET", path))
    raise KubeError(409, "Conflict", f"{path}: still conflicting after {_ATTEMPTS} attempts")
