"""The journal: what each service decided, on the workload's journal subject; appended by
the services, read back by ``gangway trace`` and the benchmarks."""

from __future__ import annotations

import logging
from typing import Final

import msgspec
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from gangway_contracts.codec import from_json, to_json
from gangway_contracts.events import AnyJournalEvent, JournalEvent, event_type
from gangway_contracts.subjects import Subjects

log = logging.getLogger(__name__)

_READ_BATCH: Final = 512


async def append(js: JetStreamContext, subjects: Subjects, event: JournalEvent) -> None:
    """Publish and wait for the stream's ack; raises when the bus is down."""
    workload = event.workload
    subject = subjects.journal(workload.namespace, workload.name, event_type(event))
    await js.publish(subject, to_json(event))


async def append_best_effort(js: JetStreamContext, subjects: Subjects, event: JournalEvent) -> None:
    """For callers whose real work is done: a lost journal entry is logged, never raised."""
    try:
        await append(js, subjects, event)
    except Exception as exc:
        log.warning("journal %s for %s: %s", event_type(event), event.workload, exc)


async def read(
    js: JetStreamContext, subjects: Subjects, namespace: str, podcliqueset: str
) -> list[AnyJournalEvent]:
    """One workload's journal, oldest first, through a consumer of its own that is gone
    when read (an entry that does not decode is skipped: a newer writer's event type)."""
    subscription = await js.pull_subscribe(
        subjects.journal_filter(namespace, podcliqueset),
        stream=subjects.journal_stream,
        config=ConsumerConfig(
            deliver_policy=DeliverPolicy.ALL,
            ack_policy=AckPolicy.NONE,
            inactive_threshold=30.0,
        ),
    )
    found: list[AnyJournalEvent] = []
    try:
        pending = (await subscription.consumer_info()).num_pending
        while pending:
            for message in await subscription.fetch(min(pending, _READ_BATCH), timeout=5):
                pending = message.metadata.num_pending
                try:
                    found.append(from_json(message.data, AnyJournalEvent))  # type: ignore[arg-type]
                except msgspec.ValidationError as exc:
                    log.debug("journal entry %s skipped: %s", message.subject, exc)
    finally:
        await subscription.unsubscribe()
    return found
