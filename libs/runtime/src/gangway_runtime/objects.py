"""Reading the OBJECTS stream: one object's latest record, or the latest of every subject.

The store keeps one message per subject, so "the last message of each subject" is the
current state of every mirrored object; services build their read models from it.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator

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
