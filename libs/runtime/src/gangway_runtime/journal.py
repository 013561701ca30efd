"""Appending to the journal: what a service decided, on the workload's journal subject."""

from __future__ import annotations

import logging

from nats.js import JetStreamContext

from gangway_contracts.codec import to_json
from gangway_contracts.events import JournalEvent, event_type
from gangway_contracts.subjects import Subjects

log = logging.getLogger(__name__)


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
