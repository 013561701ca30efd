"""What a backend's handlers may use: the API server, and the store's read model."""

from __future__ import annotations

from dataclasses import dataclass, field
from http import HTTPStatus

import msgspec
from nats.js import JetStreamContext
from prometheus_client import Counter

from gangway_backendkit import converge
from gangway_backendkit.manifest import Manifest
from gangway_contracts.grove import PodCliqueSet, PodCliqueSetSpec
from gangway_contracts.k8s import ObjectMeta, Wire
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Kind, ObjectKey, Subjects
from gangway_runtime.kube import ApiResource, Kube, KubeError
from gangway_runtime.objects import OwnWrites, last_record
from gangway_runtime.startup import CannotStart

# What a write made from a mirror behind the cluster meets.
_BEHIND = (HTTPStatus.CONFLICT, HTTPStatus.NOT_FOUND)
MIRROR_BEHIND = Counter(
    "gangway_backend_mirror_behind",
    "Writes made from the mirrored object that met a newer state (409, 404): redone from a read",
    ["backend"],
)


class _Desired(Wire, frozen=True, kw_only=True):
    """A PodCliqueSet but its status, which a large workload's every gang is listed in
    (2 MB at 5 000 gangs): decoded for each PodGang a backend looked at, it cost more CPU
    than the rest of the look (#22)."""

    metadata: ObjectMeta
    spec: PodCliqueSetSpec


@dataclass(frozen=True)
class BackendContext:
    backend: str
    kube: Kube
    js: JetStreamContext
    subjects: Subjects
    # Who the API server records as writing the fields (managedFields): this backend alone;
    # writes are creates and resourceVersion-checked updates, not server-side apply.
    field_manager: str
    # What ensure() last wrote to each resource (the hash of what was asked for), until the
    # store shows that write.
    written: OwnWrites[ObjectKey, str] = field(default_factory=OwnWrites)

    async def record(self, key: ObjectKey) -> ObjectRecord | None:
        """The store's latest record of one object (a tombstone included), or None."""
        return await last_record(self.js, self.subjects, self.subjects.object(key))

    async def podcliqueset(self, namespace: str, name: str) -> PodCliqueSet | None:
        """A PodGang's PodCliqueSet as the store holds it (e.g. for KAI's queue label),
        without its status: what the workload is, not what Gangway made of it."""
        record = await self.record(ObjectKey(Kind.PODCLIQUESET, "", namespace, name))
        if record is None or record.deleted:
            return None
        desired = msgspec.json.decode(record.object, type=_Desired)
        return PodCliqueSet(metadata=desired.metadata, spec=desired.spec)

    async def ensure(
        self,
        resource: ApiResource,
        desired: Manifest,
        *,
        keep: converge.Keep | None = None,
        immutable_spec: bool = False,
    ) -> converge.Change:
        """:func:`converge.ensure` without reading the API: from the object as the watcher
        mirrored it (its resourceVersion the write's precondition). A mirror behind the
        cluster makes the write fail with 409 (changed or created since) or 404 (deleted
        since): then once more from a fresh read, which the API request metric counts. For
        the resources the watcher mirrors for this backend (its PodGroups, Workloads). What
        this backend wrote a moment ago, and the mirror does not show yet, is not written
        again (a create again was a 409 and a read)."""
        meta = desired["metadata"]
        namespace, name = meta.get("namespace", ""), meta["name"]
        key = ObjectKey(f"{resource.plural}.{resource.group}", self.backend, namespace, name)
        record = await self.record(key)
        asked = converge.spec_hash(desired)
        if self.written.unshown(key, record.resource_version if record else "") == asked:
            return converge.Change.UNCHANGED
        mirrored = None if record is None or record.deleted else msgspec.json.decode(record.object)
        starts: tuple[Manifest | converge.Unread | None, ...] = (mirrored, converge.UNREAD)
        for start_from in starts:
            try:
                return await converge.ensure(
                    self.kube,
                    resource,
                    desired,
                    field_manager=self.field_manager,
                    keep=keep,
                    immutable_spec=immutable_spec,
                    start_from=start_from,
                    written=lambda version: self.written.remember(key, version, asked),
                )
            except KubeError as exc:
                if exc.status not in _BEHIND or start_from is converge.UNREAD:
                    raise
                MIRROR_BEHIND.labels(self.backend).inc()
        raise AssertionError("unreachable: the read attempt returns or raises")

    async def delete_kept(
        self, resource: ApiResource, namespace: str, name: str, owner_uid: str
    ) -> None:
        """Delete an object this backend kept for the PodGang of ``owner_uid``, if the
        mirror shows it (no read for what was never made or is gone already) and it is
        still that PodGang's."""
        key = ObjectKey(f"{resource.plural}.{resource.group}", self.backend, namespace, name)
        record = await self.record(key)
        if record is not None and not record.deleted:
            await converge.delete_owned(self.kube, resource, namespace, name, owner_uid)

    async def require(self, resource: ApiResource, remedy: str) -> None:
        """Refuse to start (exit 2, one line) unless the API server serves ``resource``;
        ``remedy`` says what to install."""
        if not await self.kube.serves(resource):
            raise CannotStart(
                f"the API server does not serve {resource.plural}.{resource.group}/"
                f"{resource.version}: {remedy}"
            )
