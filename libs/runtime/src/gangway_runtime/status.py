"""Writing status: conditions onto a PodGang, a whole status onto a PodCliqueSet.

Grove's status lists are atomic: a merge patch carries the whole list, and a resourceVersion
precondition makes sure nothing another writer put there meanwhile is lost (409 → read
again, merge again). That is how a PodCliqueSet's status is written, and a PodGang's first.

A PodGang's conditions have several writers (podgang's Initialized and Scheduled, the
backend's BackendSynced), each owning its own type, and they met in 409s (and re-reads)
by the hundred (#22). So a condition is written by a JSON patch that replaces its own entry,
guarded by a test that the entry at that index is still of its type (an append: that the
list is still as seen): writers of other conditions and of the spec never collide with it.
Nothing is written when nothing would change.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, TypeVar

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
from gangway_runtime.objects import Written

PODGANGS = ApiResource(SCHEDULER_GROUP, SCHEDULER_VERSION, PODGANG_PLURAL)
PODCLIQUESETS = ApiResource(GROVE_GROUP, GROVE_VERSION, "podcliquesets")
PODS = ApiResource("", "v1", "pods")
SERVICES = ApiResource("", "v1", "services")
PODCLIQUES = ApiResource(GROVE_GROUP, GROVE_VERSION, "podcliques")
PODCLIQUESCALINGGROUPS = ApiResource(GROVE_GROUP, GROVE_VERSION, "podcliquescalinggroups")
AUTOSCALERS = ApiResource("autoscaling", "v2", "horizontalpodautoscalers")
_ATTEMPTS = 5
# Grove requires status.phase; a PodGang nobody has placed yet is Pending.
_PENDING = "Pending"

T = TypeVar("T")
_Object = dict[str, Any]  # a PodGang as written: small, and the next write starts from it

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
) -> str | None:
    """Apply ``change`` to the object's status, starting from ``current`` (the read model's
    copy, usually fresh enough). Returns the resourceVersion written, or None when nothing
    was written (no change, or the object is gone; unless ``missing_ok`` is false: then its
    404 is raised)."""
    written = await _patch_status(
        kube, resource, current, change, missing_ok=missing_ok, answer=Written
    )
    return None if written is None else written.metadata.resource_version


async def _patch_status(
    kube: Kube,
    resource: ApiResource,
    current: dict[str, Any],
    change: StatusChange,
    *,
    missing_ok: bool,
    answer: type[T],
) -> T | None:
    """:func:`patch_status`; the answer decoded as ``answer``."""
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
            return await _patched(kube, path, patch, "application/merge-patch+json", answer)
        except KubeError as exc:
            if exc.status == 404 and missing_ok:
                return None
            if exc.status != 409:
                raise
        current = msgspec.json.decode(await kube.request("GET", path))
    raise KubeError(409, "Conflict", f"{path}: still conflicting after {_ATTEMPTS} attempts")


async def _patched(kube: Kube, path: str, body: Any, content_type: str, answer: type[T]) -> T:
    """PATCH a status; the object as written, decoded as ``answer``."""
    answered = await kube.request("PATCH", path, body=body, content_type=content_type)
    return msgspec.json.decode(answered, type=answer)


async def set_podgang_condition(
    kube: Kube,
    current: dict[str, Any],
    condition: Condition,
    phase: str | None = None,
    *,
    placeholders: Sequence[Condition] = (),
    also: Sequence[Condition] = (),
    last_true: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """Merge one condition (and ``also`` others, and, given, the phase) into a PodGang's
    status; other writers' conditions are kept. ``current``: the PodGang as the read model
    has it.

    A condition already in the list is replaced where it stands (its place tested), which no
    other writer's change disturbs; a new one is appended under a test of the whole list,
    which every other change fails (a read, then again). ``placeholders``: conditions the
    first write puts in when absent (Unknown until their writer says), so that writer
    replaces instead of appending. ``last_true``: condition type → the status field that
    says when it last became True (Grove's ``lastScheduled``, ``lastReady``): set when it
    does, or when this write finds it True and the field unset."""
    conditions = (condition, *also)
    stamps = last_true or {}
    meta = current["metadata"]
    path = PODGANGS.path(meta.get("namespace", ""), meta["name"], "status")
    for _ in range(_ATTEMPTS):
        status = current.get("status") or {}
        if status.get("conditions") is None or not status.get("phase"):
            # The first write: the list and the phase are made whole, under a precondition.
            change = _merged(conditions, phase, placeholders, stamps)
            return await _patch_status(
                kube, PODGANGS, current, change, missing_ok=True, answer=_Object
            )
        ops = _condition_ops(status, conditions, phase, stamps)
        if not ops:
            return None
        try:
            return await _patched(kube, path, ops, "application/json-patch+json", _Object)
        except KubeError as exc:
            if exc.status == 404:
                return None
            if not test_failed(exc):
                raise
        current = msgspec.json.decode(await kube.request("GET", path))
    raise KubeError(409, "Conflict", f"{path}: still conflicting after {_ATTEMPTS} attempts")


def _merged(
    conditions: Sequence[Condition],
    phase: str | None,
    placeholders: Sequence[Condition],
    stamps: Mapping[str, str],
) -> StatusChange:
    def change(status: dict[str, Any]) -> dict[str, Any] | None:
        before = status.get("conditions") or []
        merged: list[dict[str, Any]] | None = None
        for condition in conditions:
            merged = merged_conditions(merged or before, condition) or merged
        for placeholder in placeholders:
            if not any(c.get("type") == placeholder.type for c in merged or before):
                merged = merged_conditions(merged or before, placeholder)
        wanted = phase or status.get("phase") or _PENDING
        if merged is None and wanted == status.get("phase"):
            return None
        written = {"phase": wanted, "conditions": merged or before}
        return written | _stamped(status, before, merged or before, conditions, stamps)

    return change


def _stamped(
    status: dict[str, Any],
    before: list[dict[str, Any]],
    after: list[dict[str, Any]],
    conditions: Sequence[Condition],
    stamps: Mapping[str, str],
) -> dict[str, str]:
    """The "last became True" fields to set: for each stamped condition True after the
    write, its transition time, when it was not True before or the field is unset."""
    found: dict[str, str] = {}
    for condition in conditions:
        field = stamps.get(condition.type)
        if field is None or condition.status != "True":
            continue
        was = next((c for c in before if c.get("type") == condition.type), {})
        now = next(c for c in after if c.get("type") == condition.type)
        if was.get("status") != "True" or not status.get(field):
            found[field] = now["lastTransitionTime"]
    return found


def _condition_ops(
    status: dict[str, Any],
    conditions: Sequence[Condition],
    phase: str | None,
    stamps: Mapping[str, str],
) -> list[dict[str, Any]]:
    """The JSON patch (RFC 6902) that writes the conditions, the phase and the stamps they
    call for, [] for none."""
    existing: list[dict[str, Any]] = status["conditions"]
    ops: list[dict[str, Any]] = []
    after = list(existing)
    tested = False
    for condition in conditions:
        merged = merged_conditions(after, condition)
        if merged is None:
            continue
        entry = next(c for c in merged if c["type"] == condition.type)
        index = next((i for i, c in enumerate(existing) if c.get("type") == condition.type), None)
        if index is None:
            if not tested:  # appended under a test of the whole list, once
                ops.append({"op": "test", "path": "/status/conditions", "value": existing})
                tested = True
            ops.append({"op": "add", "path": "/status/conditions/-", "value": entry})
        else:
            at = f"/status/conditions/{index}"
            ops += [
                {"op": "test", "path": f"{at}/type", "value": condition.type},
                {"op": "replace", "path": at, "value": entry},
            ]
        after = merged
    if phase is not None and phase != status.get("phase"):
        ops.append({"op": "replace", "path": "/status/phase", "value": phase})
    if ops:  # a stamp rides on a write made anyway: never a write of its own
        for field, value in _stamped(status, existing, after, conditions, stamps).items():
            ops.append({"op": "add", "path": f"/status/{field}", "value": value})
    return ops


# kube-apiserver's words when a JSON patch's test operation fails (422, no field causes).
_TEST_FAILED = "the server rejected our request due to an error in our request"


def test_failed(exc: KubeError) -> bool:
    """Whether the API server refused a JSON patch because one of its tests failed."""
    return exc.status == 422 and _TEST_FAILED in str(exc)
