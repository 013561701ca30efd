"""From an API object (or a watch event) to the record and subject it is stored under. No I/O."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import msgspec

from gangway_contracts.records import ObjectRecord
from gangway_contracts.resources import MirroredResource, owner_of
from gangway_contracts.subjects import ObjectKey


class WatchEvent(msgspec.Struct):
    type: Literal["ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"]
    object: dict[str, Any]


class ObjectList(msgspec.Struct):
    """One page of a LIST: the items, and where the next page and the watch start."""

    items: list[dict[str, Any]]
    metadata: dict[str, Any] = {}

    @property
    def resource_version(self) -> str:
        return str(self.metadata.get("resourceVersion", ""))

    @property
    def continue_token(self) -> str:
        return str(self.metadata.get("continue", "") or "")


def decode_event(line: bytes) -> WatchEvent:
    return msgspec.json.decode(line, type=WatchEvent)


def decode_list(body: bytes) -> ObjectList:
    return msgspec.json.decode(body, type=ObjectList)


def resource_version_number(resource_version: str) -> int | None:
    """The API server's resourceVersions are etcd revisions: integers that only grow. Anything
    else (another storage) is treated as unordered, and every change is simply published."""
    return int(resource_version) if resource_version.isdigit() else None


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def object_key(resource: MirroredResource, obj: dict[str, Any]) -> ObjectKey:
    meta = obj.get("metadata") or {}
    owner = owner_of(resource, meta.get("labels") or {})
    return ObjectKey(resource.kind, owner, meta.get("namespace", ""), meta["name"])


def object_record(
    resource: MirroredResource,
    obj: dict[str, Any],
    deleted: bool = False,
    resource_version: str | None = None,
) -> ObjectRecord:
    """The record of an object as the API server sent it, without metadata.managedFields
    (field ownership is the API server's business, and it is often half the object).
    ``resource_version`` overrides the object's own for a tombstone found by a relist: the
    list's version is the first one at which the object is known to be gone."""
    meta = dict(obj.get("metadata") or {})
    meta.pop("managedFields", None)
    stripped = {**obj, "metadata": meta}
    key = object_key(resource, obj)
    return ObjectRecord(
        kind=resource.kind,
        namespace=key.namespace,
        name=key.name,
        uid=meta.get("uid", ""),
        resource_version=resource_version or str(meta.get("resourceVersion", "")),
        observed_at=now(),
        object=msgspec.Raw(msgspec.json.encode(stripped)),
        owner=key.owner,
        deleted=deleted,
    )


def tombstone(last: ObjectRecord, resource_version: str) -> ObjectRecord:
    """The last stored state, marked deleted as of ``resource_version``."""
    return msgspec.structs.replace(
        last, deleted=True, resource_version=resource_version, observed_at=now()
    )
