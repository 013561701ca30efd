"""Bounded, ordered, never-give-up publishing of records to the store.

At most ``max_in_flight`` subjects are being published at once; ``put`` waits for a free slot,
so when NATS is slow or gone the watch is simply not read any further (the API server holds
the rest) and memory stays bounded. One subject is published by one task at a time, in order;
changes that arrive for a subject while it is in flight are coalesced to the newest, which is
all a compacted store keeps anyway.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

import nats.errors
from nats.js.errors import APIError, ServiceUnavailableError

from gangway_contracts.records import ObjectRecord
from gangway_runtime import tasks
from gangway_watcher import metrics
from gangway_watcher.store import Outcome

log = logging.getLogger(__name__)

_BACKOFF_FIRST = 0.1
_BACKOFF_MAX = 5.0


@dataclass
class Outgoing:
    subject: str
    record: ObjectRecord
    headers: Mapping[str, str] = field(default_factory=dict)
    received: float = field(default_factory=time.monotonic)


class RecordStore(Protocol):
    async def put(self, subject: str, record: ObjectRecord, headers: dict[str, str]) -> Outcome:
        """Store the record unless the subject holds it or something newer already."""
        ...


def _transient(exc: Exception) -> bool:
    """NATS unreachable or JetStream briefly unavailable: worth waiting for."""
    if isinstance(exc, ServiceUnavailableError):
        return True
    if isinstance(exc, APIError):
        return exc.code is not None and exc.code >= 500
    return isinstance(exc, nats.errors.Error | asyncio.TimeoutError | ConnectionError)


class Publisher:
    def __init__(self, store: RecordStore, max_in_flight: int) -> None:
        self._store = store
        self._slots = asyncio.Semaphore(max_in_flight)
        self._in_flight: dict[str, asyncio.Task[None]] = {}
        self._newest: dict[str, Outgoing] = {}  # waiting behind the in-flight one, per subject
        self._drained = asyncio.Event()
        self._drained.set()

    async def put(self, item: Outgoing) -> None:
        metrics.PENDING.inc()
        if item.subject not in self._in_flight:
            await self._slots.acquire()  # backpressure: the caller stops reading its watch
            if item.subject not in self._in_flight:
                self._drained.clear()
                self._in_flight[item.subject] = tasks.spawn(
                    self._publish_subject(item), f"publish {item.subject}"
                )
                return
            self._slots.release()  # the subject got going while we waited: queue behind it
        if item.subject in self._newest:
            metrics.PENDING.dec()  # the change it replaces is never published on its own
        self._newest[item.subject] = item

    async def _publish_subject(self, first: Outgoing) -> None:
        item: Outgoing | None = first
        try:
            while item is not None:
                await self._publish_until_done(item)
                metrics.PENDING.dec()
                item = self._newest.pop(first.subject, None)
        finally:
            del self._in_flight[first.subject]
            self._slots.release()
            if not self._in_flight:
                self._drained.set()

    async def _publish_until_done(self, item: Outgoing) -> None:
        kind = item.record.kind
        backoff = _BACKOFF_FIRST
        while True:
            try:
                outcome = await self._store.put(item.subject, item.record, dict(item.headers))
            except Exception as exc:
                if not _transient(exc):
                    # A record NATS will never take (e.g. over max_payload): say so and go
                    # on with the others; the next change of the object tries again.
                    log.error("not stored %s: %s", item.subject, exc)
                    metrics.PUBLISHED.labels(kind, "failed").inc()
                    return
                metrics.PUBLISH_RETRIES.labels(kind).inc()
                log.warning("publish %s: %s; retrying in %.1fs", item.subject, exc, backoff)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _BACKOFF_MAX)
                continue
            metrics.PUBLISHED.labels(kind, outcome.value).inc()
            if outcome is not Outcome.STALE:
                metrics.LAG_SECONDS.labels(kind).observe(time.monotonic() - item.received)
            return

    async def flush(self) -> None:
        """Wait until everything accepted so far is stored."""
        await self._drained.wait()

    async def close(self) -> None:
        for task in list(self._in_flight.values()):
            task.cancel()
        await asyncio.gather(*self._in_flight.values(), return_exceptions=True)
