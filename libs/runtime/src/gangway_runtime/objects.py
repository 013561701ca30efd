"""Reading the OBJECTS stream: one object's latest record, or the latest of every subject.

The store keeps one message per subject, so "the last message of each subject" is the
current state of every mirrored object; services build their read models from it.
"""

from __future__ import annotations

import contextlib
import logging
from collections import OrderedDict
from collections.abc import AsyncIterator, Hashable
from typing import Generic, TypeVar

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
V = TypeVar("V")


class _WrittenMeta(msgspec.Struct, rename="camel"):
    resource_version: str


class Written(msgspec.Struct):
    """Of the object a write answers with, what its writer reads: its resourceVersion (a
    PodCliqueSet's answer holds every gang's status, decoded whole only to be dropped)."""

    metadata: _WrittenMeta


def version_of(answer: bytes) -> str:
    """The resourceVersion of the object the API server answered a write with (decoding
    nothing else of it)."""
    return msgspec.json.decode(answer, type=Written).metadata.resource_version


def newer_or_same(seen: str, written: str) -> bool:
    """resourceVersions are opaque, but etcd's are increasing integers; equality otherwise."""
    if not written:
        return True
    try:
        return int(seen) >= int(written)
    except ValueError:
        return seen == written


class Recent(Generic[K, V]):
    """A map of at most ``at_most`` entries, the oldest set forgotten first: what a service
    remembers of many objects for a while, bounded whatever the cluster's size."""

    def __init__(self, at_most: int) -> None:
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._at_most = at_most

    def __setitem__(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self._at_most:
            self._entries.popitem(last=False)

    def get(self, key: K) -> V | None:
        return self._entries.get(key)

    def pop(self, key: K) -> V | None:
        return self._entries.pop(key, None)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __len__(self) -> int:
        return len(self._entries)


class OwnWrites(Generic[K, V]):
    """What this process last wrote to each object (as much of it as its decisions need)
    and the resourceVersion the write made, until the store shows that version or a newer
    one. A handler woken again before its own write is mirrored must not decide on the
    older record alone: it would write the same again (#22: a third of a backend's
    condition writes). Needed only until the mirror comes, a second or so: at most
    ``at_most`` are kept (one forgotten too soon costs a write, as before)."""

    def __init__(self, at_most: int = 1024) -> None:
        self._written: Recent[K, tuple[str, V]] = Recent(at_most)

    def remember(self, key: K, version: str, written: V) -> None:
        self._written[key] = (version, written)

    def unshown(self, key: K, version: str) -> V | None:
        """This process's last write to ``key`` when the store, holding the object at
        ``version``, does not show it yet; else None (and the write is forgotten)."""
        found = self._written.get(key)
        if found is None:
            return None
        if newer_or_same(version, found[0]):
            self._written.pop(key)
            return None
        return found[1]

    def forget(self, key: K) -> None:
        """Stop waiting for ``key``'s write to show (the next decision reads the store)."""
        self._written.pop(key)

    def __len__(self) -> int:
        return len(self._written)


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
        # Gone already is as good: on a NATS cluster the server may have ended it first (its
        # inactive threshold would end it anyway); a service must not stop over it.
        with contextlib.suppress(NotFoundError):
            await js.delete_consumer(stream, info.name)
