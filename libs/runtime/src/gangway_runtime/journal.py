"""The journal: what each service decided, on the workload's journal subject; appended by
the services, read back by ``gangway trace`` and the benchmarks."""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections import deque
from datetime import datetime, timedelta
from typing import Final

import msgspec
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from nats.js.errors import NotFoundError
from prometheus_client import Counter, Gauge

from gangway_contracts.codec import MALFORMED, from_json, to_json
from gangway_contracts.events import AnyJournalEvent, JournalEvent
from gangway_contracts.k8s import NamespacedName
from gangway_contracts.subjects import MSG_ID_HEADER, Subjects

log = logging.getLogger(__name__)

_READ_BATCH: Final = 512
DEFAULT_CAPACITY: Final = 10_000
# Subjects remembered as journaled by this process (a cache of the store: forgetting one
# costs one direct get). By their hash: 40 bytes each instead of a 110-byte subject; two
# subjects of one hash (about one chance in 10⁹ at 100 000) skip one check of the store.
_REMEMBERED: Final = 100_000
# An entry this much older than the object it is about is a namesake's (clocks differ).
_CLOCK_SKEW: Final = timedelta(seconds=2)
_RETRY_BASE_SECONDS: Final = 0.2
_RETRY_CAP_SECONDS: Final = 5.0

JOURNAL_PENDING = Gauge("gangway_journal_pending", "Journal entries buffered, not yet stored")
JOURNAL_RECOVERED = Counter(
    "gangway_journal_recovered",
    "Journal entries made up for: a step the cluster shows done that the journal lacked",
)
JOURNAL_DROPPED = Counter(
    "gangway_journal_dropped", "Journal entries dropped: buffer full, or still buffered at stop"
)


def subject_of(subjects: Subjects, event: JournalEvent) -> str:
    """The journal subject of ``event``: its workload's, by event type and PodGang."""
    return step_subject(subjects, type(event), event.workload, getattr(event, "podgang", ""))


def step_subject(
    subjects: Subjects, kind: type[JournalEvent], workload: NamespacedName, podgang: str
) -> str:
    """The journal subject of ``kind`` entries about ``workload`` (and one PodGang)."""
    return subjects.journal(workload.namespace, workload.name, kind.__name__, podgang)


class _Stored(msgspec.Struct):
    at: datetime


async def append(js: JetStreamContext, subjects: Subjects, event: JournalEvent) -> None:
    """Publish and wait for the stream's ack; raises when the bus is down."""
    await js.publish(subject_of(subjects, event), to_json(event))


class JournalWriter:
    """Journal entries appended without making the caller wait for the bus, and never lost
    silently: they queue in a bounded buffer and :meth:`run` publishes them in order, each
    retried until the stream stores it (a failover's timeouts and no-responders included).
    Each carries a Nats-Msg-Id made from its content, so a retried publish that did land is
    stored once. A full buffer drops its oldest entry, said at WARNING and counted in
    ``gangway_journal_dropped_total``; so are entries still buffered when the service stops."""

    def __init__(
        self, js: JetStreamContext, subjects: Subjects, capacity: int = DEFAULT_CAPACITY
    ) -> None:
        self._js = js
        self._subjects = subjects
        self._capacity = capacity
        self._buffer: deque[tuple[str, bytes, str]] = deque()
        self._queued = asyncio.Event()
        self._journaled: set[int] = set()

    def put(self, event: JournalEvent, once: str = "") -> None:
        """Queue ``event``; ``once``: an id under which it is stored once however often it
        is put within the stream's duplicate window (e.g. once per generation)."""
        subject = subject_of(self._subjects, event)
        data = to_json(event)
        if len(self._buffer) >= self._capacity:
            dropped, _, _ = self._buffer.popleft()
            JOURNAL_DROPPED.inc()
            log.warning("journal buffer full: dropped its oldest entry, on %s", dropped)
        self._buffer.append((subject, data, once or hashlib.sha256(data).hexdigest()[:32]))
        JOURNAL_PENDING.set(len(self._buffer))
        self._queued.set()
        self._remember(subject)

    def missing(self, kind: type[JournalEvent], workload: NamespacedName, podgang: str) -> bool:
        """Whether the journal may lack a ``kind`` entry about ``podgang``: this process
        neither put one nor found one in the store. False is the common answer, and costs
        no event built: call :meth:`ensure` only on True."""
        return hash(step_subject(self._subjects, kind, workload, podgang)) not in self._journaled

    async def ensure(self, event: JournalEvent, since: datetime) -> None:
        """Journal ``event`` unless its subject (its workload, type and PodGang) holds an
        entry from ``since`` on (the creation of the object it is about). A service calls
        this for every step the cluster shows done (when :meth:`missing`): an entry a crash
        lost between the write and the journal is made up for, level-triggered, and stamped
        when it was found. The store is asked once per subject per process."""
        subject = subject_of(self._subjects, event)
        if hash(subject) in self._journaled:
            return
        self._remember(subject)
        try:
            stored = await self._js.get_last_msg(
                self._subjects.journal_stream, subject, direct=True
            )
            if msgspec.json.decode(stored.data or b"", type=_Stored).at >= since - _CLOCK_SKEW:
                return
        except NotFoundError:
            pass
        except MALFORMED:
            pass  # not an entry of ours: journal ours
        except NatsError as exc:  # the bus away: asked again next time
            self._journaled.discard(hash(subject))
            log.debug("journal %s: not checked: %s", subject, exc)
            return
        log.info("journal %s: the cluster shows this step done, the journal lacks it", subject)
        JOURNAL_RECOVERED.inc()
        self.put(event)

    def _remember(self, subject: str) -> None:
        if len(self._journaled) >= _REMEMBERED:
            self._journaled.clear()
        self._journaled.add(hash(subject))

    async def append(self, event: JournalEvent) -> None:
        """:meth:`put`, for callers that take an async journal function."""
        self.put(event)

    @property
    def pending(self) -> int:
        return len(self._buffer)

    async def run(self) -> None:
        """Publish what is buffered, oldest first, for ever."""
        failures = 0
        try:
            while True:
                if not self._buffer:
                    self._queued.clear()
                    await self._queued.wait()
                    continue
                subject, data, msg_id = self._buffer[0]
                try:
                    await self._js.publish(subject, data, headers={MSG_ID_HEADER: msg_id})
                except Exception as exc:  # the bus away or failing over: the same entry again
                    failures += 1
                    delay = min(_RETRY_CAP_SECONDS, _RETRY_BASE_SECONDS * 2 ** (failures - 1))
                    log.warning("journal %s: %s; retry %d in %.1fs", subject, exc, failures, delay)
                    await asyncio.sleep(delay)
                    continue
                failures = 0
                self._buffer.popleft()
                JOURNAL_PENDING.set(len(self._buffer))
        finally:
            if self._buffer:
                JOURNAL_DROPPED.inc(len(self._buffer))
                log.warning("stopping with %d journal entries not stored", len(self._buffer))


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
