"""The OBJECTS stream as the watcher sees it: the last message of each subject, and a publish
that never lets the store go back in time.

Two watchers may run at once and publish the same changes. JetStream's de-duplication (the
message id is uid:resourceVersion) drops the doubles inside its window; what it cannot stop is
a lagging watcher overwriting a newer record with an older one. So every publish names the
sequence it expects to replace (``Nats-Expected-Last-Subject-Sequence``); when someone else
got there first, the watcher reads what is stored and publishes only if its version is newer.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from enum import StrEnum

import msgspec
from nats.js import JetStreamContext
from nats.js.api import Header
from nats.js.errors import APIError, NotFoundError

from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import MSG_ID_HEADER, Subjects, object_msg_id
from gangway_runtime.objects import last_per_subject, last_record
from gangway_watcher import metrics
from gangway_watcher.mirror import resource_version_number

log = logging.getLogger(__name__)

# JSStreamWrongLastSequenceErr: the subject's last sequence is not the one we expected.
_WRONG_LAST_SEQUENCE = 10071


class Outcome(StrEnum):
    STORED = "stored"
    DUPLICATE = "duplicate"
    STALE = "stale"


@dataclass(frozen=True, slots=True)
class Stored:
    """What one subject holds: the stream sequence and the resourceVersion as a number."""

    seq: int
    resource_version: int | None
    deleted: bool


def _parse_msg_id(msg_id: str | None) -> tuple[int | None, bool]:
    # "<uid>:<resourceVersion>[:deleted]", see subjects.object_msg_id
    parts = (msg_id or "").split(":")
    rv = resource_version_number(parts[1]) if len(parts) > 1 else None
    return rv, parts[-1] == "deleted"


class ObjectStore:
    def __init__(self, js: JetStreamContext, subjects: Subjects, tombstone_ttl: int) -> None:
        self._js = js
        self._subjects = subjects
        self._stream = subjects.objects_stream
        self._tombstone_ttl = tombstone_ttl
        # Live subjects only: a tombstone's entry is dropped once it is stored, so memory
        # follows the objects that exist, not every object that ever did.
        self._index: dict[str, Stored] = {}

    def live_subjects(self, kind: str) -> set[str]:
        parse = self._subjects.parse_object
        return {s for s, e in self._index.items() if not e.deleted and parse(s).kind == kind}

    async def load(self, kind: str) -> int:
        """Read the last message of every subject of ``kind`` (headers only): what the store
        holds before this watcher publishes anything. Returns how many live objects it holds."""
        scan = last_per_subject(
            self._js, self._stream, self._subjects.objects_filter(kind), headers_only=True
        )
        async for msg in scan:
            rv, deleted = _parse_msg_id((msg.headers or {}).get(MSG_ID_HEADER))
            if not deleted:
                self._index[msg.subject] = Stored(msg.metadata.sequence.stream, rv, False)
        return len(self.live_subjects(kind))

    def holds(self, subject: str, resource_version: str) -> bool:
        """Whether the store is known to hold this version (or a newer one) of a live object:
        a relist then has nothing to publish for it."""
        stored = self._index.get(subject)
        rv = resource_version_number(resource_version)
        return stored is not None and _not_newer(rv, False, stored)

    async def last_record(self, subject: str) -> ObjectRecord | None:
        return await last_record(self._js, self._subjects, subject)

    async def _refresh(self, subject: str) -> Stored | None:
        try:
            msg = await self._js.get_last_msg(self._stream, subject, direct=True)
        except NotFoundError:
            self._index.pop(subject, None)
            return None
        rv, deleted = _parse_msg_id((msg.headers or {}).get(MSG_ID_HEADER))
        stored = Stored(msg.seq or 0, rv, deleted)
        self._index[subject] = stored
        return stored

    async def put(self, subject: str, record: ObjectRecord, headers: dict[str, str]) -> Outcome:
        """Store ``record`` unless the subject already holds it or something newer."""
        rv = resource_version_number(record.resource_version)
        msg_id = object_msg_id(record.uid, record.resource_version, record.deleted)
        payload = msgspec.json.encode(record)
        stored = self._index.get(subject)
        while True:
            if stored is not None and _not_newer(rv, record.deleted, stored):
                return Outcome.STALE
            expected = stored.seq if stored is not None else 0
            started = time.perf_counter()
            try:
                ack = await self._js.publish(
                    subject,
                    payload,
                    stream=self._stream,
                    headers={
                        **headers,
                        MSG_ID_HEADER: msg_id,
                        Header.EXPECTED_LAST_SUBJECT_SEQUENCE.value: str(expected),
                    },
                    msg_ttl=self._tombstone_ttl if record.deleted else None,
                )
            except APIError as exc:
                if exc.err_code != _WRONG_LAST_SEQUENCE:
                    raise
                stored = await self._refresh(subject)  # someone else wrote it: look again
                continue
            finally:
                metrics.PUBLISH_SECONDS.labels(record.kind).observe(time.perf_counter() - started)
            if record.deleted:
                self._index.pop(subject, None)
            else:
                self._index[subject] = Stored(ack.seq, rv, False)
            return Outcome.DUPLICATE if ack.duplicate else Outcome.STORED


def _not_newer(rv: int | None, deleted: bool, stored: Stored) -> bool:
    """Whether the store already holds this version or a later one."""
    if rv is None or stored.resource_version is None:
        return False  # unordered versions: publish, de-duplication still drops exact doubles
    if rv == stored.resource_version:
        return stored.deleted or not deleted  # only a tombstone may follow the same version
    return rv < stored.resource_version
