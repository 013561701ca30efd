"""What a backend's handlers may use: the API server, and the store's read model."""

from __future__ import annotations

from dataclasses import dataclass

import msgspec
from nats.js import JetStreamContext

from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Kind, ObjectKey, Subjects
from gangway_runtime.kube import ApiResource, Kube
from gangway_runtime.objects import last_record
from gangway_runtime.service import CannotStart


@dataclass(frozen=True)
class BackendContext:
    backend: str
    kube: Kube
    js: JetStreamContext
    subjects: Subjects
    field_manager: str  # server-side apply: the backend owns only what it writes

    async def record(self, key: ObjectKey) -> ObjectRecord | None:
        """The store's latest record of one object (a tombstone included), or None."""
        return await last_record(self.js, self.subjects, self.subjects.object(key))

    async def podcliqueset(self, namespace: str, name: str) -> PodCliqueSet | None:
        """A PodGang's PodCliqueSet as the store holds it (e.g. for KAI's queue label)."""
        record = await self.record(ObjectKey(Kind.PODCLIQUESET, "", namespace, name))
        if record is None or record.deleted:
            return None
        return msgspec.json.decode(record.object, type=PodCliqueSet)

    async def require(self, resource: ApiResource, remedy: str) -> None:
        """Refuse to start (exit 2, one line) unless the API server serves ``resource``;
        ``remedy`` says what to install."""
        if not await self.kube.serves(resource):
            raise CannotStart(
                f"the API server does not serve {resource.plural}.{resource.group}/"
                f"{resource.version}: {remedy}"
            )
