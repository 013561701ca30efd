"""Writing status: conditions onto a PodGang, a whole status onto a PodCliqueSet.

Status lists (Grove's conditions) are atomic, so a merge patch carries the whole list; the
resourceVersion precondition makes sure nothing another writer put there meanwhile is lost
(409 → read again, merge again). Nothing is written when nothing would change.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import msgspec

from gangway_contracts.grove import (
    GROVE_GROUP,
    GROVE_VERSION,
    PODGANG_PLURAL,
    SCHEDULER_GROUP,
    SCHEDULER_VERSION,
)
from gangway_contracts.k8s import Condition
from gangway_runtime.conditions import merged_conditions
from gangway_runtime.kube import ApiResource, Kube, KubeError

PODGANGS = ApiResource(SCHEDULER_GROUP, SCHEDULER_VERSION, PODGANG_PLURAL)
PODCLIQUESETS = ApiResource(GROVE_GROUP, GROVE_VERSION, "podcliquesets")
PODS = ApiResource("", "v1", "pods")
_ATTEMPTS = 5
# Grove requires status.phase; a PodGang nobody has placed yet is Pending.
_PENDING = "Pending"

# The status as it is → the fields to merge into it, or None when nothing would change.
StatusChange = Callable[[dict[str, Any]], dict[str, Any] | None]


def now() -> str:
    """A metav1.Time: RFC 3339, whole seconds, UTC."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


async def patch_status(
    kube: Kube,
    resource: ApiResource,
    current: dict[str, Any],
    change: StatusChange,
    *,
    missing_ok: bool = True,
) -> dict[str, Any] | None:
    """Apply ``change`` to the object's status, starting from ``current`` (the read model's
    copy, usually fresh enough). Returns the object as written, or None when nothing was
    written (no change, or the object is gone; unless ``missing_ok`` is false: then its
    404 is raised)."""
    meta = current["metadata"]
    path = resource.path(meta.get("namespace", ""), meta["name"], "status")
    for _ in range(_ATTEMPTS):
        fields = change(current.get("status") or {})
        if fields is None:
            return None
        patch = {
            "metadata": {"resourceVersion": current["metadata"]["resourceVersion"]},
            "status": fields,
        }
        try:
            body = await kube.request(
                "PATCH", path, body=patch, content_type="application/merge-patch+json"
            )
            written: dict[str, Any] = msgspec.json.decode(body)
            return written
        except KubeError as exc:
            if exc.status == 404 and missing_ok:
                return None
            if exc.status != 409:
                raise
        current = msgspec.json.decode(await kube.request("GET", path))
    raise KubeError(409, "Conflict", f"{path}: still conflicting after {_ATTEMPTS} attempts")


async def set_podgang_condition(
    kube: Kube, current: dict[str, Any], condition: Condition, phase: str | None = None
) -> dict[str, Any] | None:
    """Merge one condition (and, given, the phase) into a PodGang's status; other writers'
    conditions are kept."""

    def change(status: dict[str, Any]) -> dict[str, Any] | None:
        conditions = merged_conditions(status.get("conditions") or [], condition)
        wanted = phase or status.get("phase") or _PENDING
        if conditions is None and wanted == status.get("phase"):
            return None
        return {"phase": wanted, "conditions": conditions or status.get("conditions") or []}

    return await patch_status(kube, PODGANGS, current, change)
