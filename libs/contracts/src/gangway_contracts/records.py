"""What the watcher publishes on an object subject: the object, or its tombstone."""

from __future__ import annotations

import msgspec

from gangway_contracts.k8s import Wire


class ObjectRecord(Wire, frozen=True, kw_only=True):
    """The latest observed state of one Kubernetes object.

    ``object`` is the object as the API server returned it, metadata.managedFields removed.
    A delete keeps the last state it knew with ``deleted`` set, so a consumer still learns
    what was deleted (its owner, its labels) after the object is gone from the cluster.
    """

    kind: str
    namespace: str
    name: str
    uid: str
    resource_version: str
    observed_at: str
    object: msgspec.Raw
    owner: str = ""
    deleted: bool = False
