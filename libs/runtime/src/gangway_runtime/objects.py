"""Reading the OBJECTS stream: one object's latest record, or the latest of every subject.

The store keeps one message per subject, so "the last message of each subject" is the
current state of every mirrored object; services build their read models from it.
"""

from __future__ import annotations

import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Hashable
from typing import Any, Generic, TypeVar

import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError

from gangway_contracts.codec import MALFORMED
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Subjects

_BATCH = 1000
log = logging.getLogger(__name__)
K = TypeVar("K", bound=Hashable)
S = TypeVar("S", bound=dict[str, Any] | None)


def newer_or_same(seen: str, written: str) -> bool:
    """resourceVersions are opaque, but etcd's are increasing integers; equality otherwise."""
    if not written:
        return True
    try:
        return int(seen) >= int(written)
    except ValueError:
        return seen == written


class OwnWrites(Generic[K]):
    """The object this process last wrote under each key, as the API server answered, until
    the store shows that version or a newer one. A handler woken again before its own write
    is mirrored decides on the answer, not on the older record: deciding on that record, it
    would write the same again (#22: a third of a backend's condition writes, and a create
    answered 409 and read again for each PodGroup synced twice). A write is needed only
    until its mirror comes, a second or so: at most ``at_most`` are kept, the oldest
    forgotten first (one forgotten too soon costs a write or a read, as before)."""

    def __init__(self, at_most: int = 1024) -> None:
        self._written: OrderedDict[K, dict[str, Any]] = OrderedDict()
        self._at_most = at_most

    def remember(self, key: K, written: dict[str, Any]) -> None:
        self._written[key] = written
        self._written.move_to_end(key)
        while len(self._written) > self._at_most:
            self._written.popitem(last=False)

    def shown(self, key: K, version: str) -> bool:
        """Whether the store, holding ``key`` at ``version``, shows this process's last write
        to it (or there is none); that write is forgotten then."""
        written = self._written.get(key)
        if written is None:
            return True
        if newer_or_same(version, _version(written)):
            del self._written[key]
            return True
        return False

    def newest(self, key: K, stored: S, version: str) -> S | dict[str, Any]:
        """``stored``, the store's record of the object at ``version`` (None: absent or
        deleted), or what this process wrote after it."""
        if self.shown(key, version):
            return stored
        return self._written[key]

    def __len__(self) -> int:
        return len(self._written)


def _version(obj: dict[str, Any]) -> str:
    return str(obj.get("metadata", {}).get("resourceVersion", ""))


async def last_record(
    js: JetStreamContext, subjects: Subjects, subject: str
) -> ObjectRecord | None:
    """The latest record stored on one object subject (a tombstone included), or None; None
    too, with a warning, for a record that is not one (the watcher writes only records:
    reading the store must not stop a service, and the next record replaces it)."""
    try:
        msg = await js.get_last_msg(subjects.objects_stream, subject, direct=True)
    except NotFoundError:
        return None
    try:
        return msgspec.json.decode(msg.data or b"", type=ObjectRecord)
    except MALFORMED as exc:
        log.warning("%s: stored message %s is not an object record: %s", subject, msg.seq, exc)
        return None


async def last_per_subject(
    js: JetStreamContext, stream: str, filter_subject: str, headers_only: bool = False
) -> AsyncIterator[Msg]:
    """The last message of every subject matching ``filter_subject``, through an ephemeral
    consumer that is deleted afterwards; ``headers_only`` skips the bodies."""
    sub = await js.pull_subscribe(
        filter_subject,
        stream=stream,
        config=ConsumerConfig(
            deliver_policy=DeliverPolicy.LAST_PER_SUBJECT,
            headers_only=headers_only,
            ack_policy=AckPolicy.NONE,
            inactive_threshold=60.0,
            mem_storage=True,
        ),
    )
    info = await sub.consumer_info()
    try:
        remaining = info.num_pending or 0
        while remaining > 0:
            for msg in await sub.fetch(min(remaining, _BATCH), timeout=10):
                remaining -= 1
                yield msg
    finally:
        await sub.unsubscribe()
        await js.delete_consumer(stream, info.name)
