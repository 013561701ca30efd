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

from gangway_contracts.codec import MALFORMED, to_json
from gangway_contracts.events import AnyJournalEvent, JournalEvent
from gangway_contracts.k8s import NamespacedName
from gangway_contracts.subjects import MSG_ID_HEADER, Subjects

log = logging.getLogger(__name__)

_READ_BATCH: Final = 512
# Entries published before their acks are awaited (nats-py's own limit is 4 000 pending).
_IN_FLIGHT: Final = 256
DEFAULT_CAPACITY: Final = 10_000
# Workloads and PodGangs whose journaled steps this process remembers (a cache of the
# store: forgetting one costs one direct get a step).
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


def subject_of(subjects: Subjects, event: JournalEvent, writer: str) -> str:
    """The journal subject of ``event`` written by ``writer`` (a NATS user): its workload's,
    by event type and PodGang."""
    workload, podgang = event.workload, getattr(event, "podgang", "")
    return subjects.journal(
        workload.namespace, workload.name, type(event).__name__, podgang, writer=writer
    )


# A step: its workload and PodGang (by hash), and its kind's bit.
_Step = tuple[int, int]
_KIND_BITS: dict[type[JournalEvent], int] = {}
_Entry = tuple[str, bytes, str, _Step]  # subject, data, Nats-Msg-Id, its step


def _step(kind: type[JournalEvent], workload: NamespacedName, podgang: str) -> _Step:
    bit = _KIND_BITS.setdefault(kind, 1 << len(_KIND_BITS))
    return hash((workload.namespace, workload.name, podgang)), bit


def _step_of(event: JournalEvent) -> _Step:
    return _step(type(event), event.workload, getattr(event, "podgang", ""))


class _Steps:
    """The steps a process knows journaled: per workload and PodGang one small int, a bit
    a kind of step. A set of subjects' hashes was 2.9 MB at 5 000 gangs (five steps each),
    this is 0.4. Two PodGangs of one hash (about one chance in 10⁹ at 100 000) skip a check
    of the store."""

    def __init__(self) -> None:
        self._bits: dict[int, int] = {}

    def __contains__(self, step: _Step) -> bool:
        key, bit = step
        return bool(self._bits.get(key, 0) & bit)

    def add(self, step: _Step) -> None:
        key, bit = step
        if key not in self._bits and len(self._bits) >= _REMEMBERED:
            self._bits.clear()
        self._bits[key] = self._bits.get(key, 0) | bit

    def discard(self, step: _Step) -> None:
        key, bit = step
        if key in self._bits:
            self._bits[key] &= ~bit


class _Stored(msgspec.Struct):
    at: datetime


async def append(
    js: JetStreamContext, subjects: Subjects, event: JournalEvent, writer: str
) -> None:
    """Publish and wait for the stream's ack; raises when the bus is down."""
    await js.publish(subject_of(subjects, event, writer), to_json(event))


class JournalWriter:
    """Journal entries appended without making the caller wait for the bus, and never lost
    silently: they queue in a bounded buffer and :meth:`run` publishes them in order, many
    at once, each retried until the stream stores it (a failover's timeouts and
    no-responders included).
    Each carries a Nats-Msg-Id made from its content, so a retried publish that did land is
    stored once. A full buffer drops its oldest entry, said at WARNING and counted in
    ``gangway_journal_dropped_total`` (and forgotten as journaled: :meth:`ensure` may make it
    up); so are entries still buffered when the service stops."""

    def __init__(
        self,
        js: JetStreamContext,
        subjects: Subjects,
        writer: str,
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        self._js = js
        self._subjects = subjects
        self._writer = writer  # the NATS user: the only one allowed its subjects
        self._capacity = capacity
        self._buffer: deque[_Entry] = deque()
        self._sending: list[_Entry] = []  # taken from the buffer, acks awaited
        self._queued = asyncio.Event()
        self._journaled = _Steps()
        # Entries someone waits on being stored (store()), by Nats-Msg-Id.
        self._awaited: dict[str, asyncio.Future[None]] = {}

    def put(self, event: JournalEvent, once: str = "") -> None:
        """Queue ``event``; ``once``: an id under which it is stored once however often it
        is put within the stream's duplicate window (e.g. once per generation)."""
        self._put(event, once)

    def _put(self, event: JournalEvent, once: str = "") -> str:
        subject, step = subject_of(self._subjects, event, self._writer), _step_of(event)
        data = to_json(event)
        if len(self._buffer) >= self._capacity:
            dropped, _, dropped_id, forgotten = self._buffer.popleft()
            self._journaled.discard(forgotten)  # ensure() may make it up again
            self._settle(dropped_id)
            JOURNAL_DROPPED.inc()
            log.warning("journal buffer full: dropped its oldest entry, on %s", dropped)
        msg_id = once or hashlib.sha256(data).hexdigest()[:32]
        self._buffer.append((subject, data, msg_id, step))
        JOURNAL_PENDING.set(self.pending)
        self._queued.set()
        self._journaled.add(step)
        return msg_id

    async def store(self, event: JournalEvent, once: str = "") -> None:
        """:meth:`put`, then wait until the stream stores the entry (or a full buffer drops
        it, said as :meth:`put` says it). A handler that acknowledges its message only after
        loses no entry to a crash between the two: the message comes back, and the step,
        found done, is journaled then (:meth:`ensure`)."""
        msg_id = self._put(event, once)
        await self._awaited.setdefault(msg_id, asyncio.get_running_loop().create_future())

    def _settle(self, msg_id: str) -> None:
        waiting = self._awaited.pop(msg_id, None)
        if waiting is not None and not waiting.done():
            waiting.set_result(None)

    def missing(self, kind: type[JournalEvent], workload: NamespacedName, podgang: str) -> bool:
        """Whether the journal may lack a ``kind`` entry about ``podgang``: this process
        neither put one nor found one in the store. False is the common answer, and costs
        no event built: call :meth:`ensure` only on True."""
        return _step(kind, workload, podgang) not in self._journaled

    async def ensure(self, event: JournalEvent, since: datetime, once: str = "") -> None:
        """Journal ``event`` unless its subject (its workload, type and PodGang) holds an
        entry from ``since`` on (the creation of the object it is about). A service calls
        this for every step the cluster shows done (when :meth:`missing`): an entry a crash
        lost between the write and the journal is made up for, level-triggered, and stamped
        when it was found. The store is asked once per subject per process. ``once``: the
        id the step's own entry is put under, so that an entry made up while another
        process's is still on its way is stored once."""
        subject, step = subject_of(self._subjects, event, self._writer), _step_of(event)
        if step in self._journaled:
            return
        self._journaled.add(step)
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
            self._journaled.discard(step)
            log.debug("journal %s: not checked: %s", subject, exc)
            return
        log.info("journal %s: the cluster shows this step done, the journal lacks it", subject)
        JOURNAL_RECOVERED.inc()
        self.put(event, once)

    async def append(self, event: JournalEvent) -> None:
        """:meth:`put`, for callers that take an async journal function."""
        self.put(event)

    @property
    def pending(self) -> int:
        """Entries not yet stored: buffered, or published and their acks awaited."""
        return len(self._buffer) + len(self._sending)

    async def run(self) -> None:
        """Publish what is buffered, oldest first, for ever: up to ``_IN_FLIGHT`` entries
        at once, their acks awaited together. One entry a round trip, each waiting for a
        turn of a busy event loop, fell behind at thousands of gangs (the buffer filled and
        dropped entries). Entries that fail go back to the front and are published again;
        only then can one be stored after a later one."""
        failures = 0
        try:
            while True:
                if not self._buffer:
                    self._queued.clear()
                    await self._queued.wait()
                    continue
                count = min(len(self._buffer), _IN_FLIGHT)
                self._sending = [self._buffer.popleft() for _ in range(count)]
                results = await asyncio.gather(
                    *(self._publish(entry) for entry in self._sending), return_exceptions=True
                )
                failed = [e for e, r in zip(self._sending, results, strict=True) if r is not None]
                for entry, result in zip(self._sending, results, strict=True):
                    if result is None:
                        self._settle(entry[2])
                self._sending = []
                if not failed:
                    failures = 0
                    JOURNAL_PENDING.set(self.pending)
                    continue
                self._buffer.extendleft(reversed(failed))
                failures += 1
                delay = min(_RETRY_CAP_SECONDS, _RETRY_BASE_SECONDS * 2 ** (failures - 1))
                error = next(r for r in results if r is not None)
                log.warning(
                    "journal: %d of %d entries not stored (%s, on %s); retry %d in %.1fs",
                    len(failed),
                    count,
                    error,
                    failed[0][0],
                    failures,
                    delay,
                )
                await asyncio.sleep(delay)
        finally:
            if self.pending:
                JOURNAL_DROPPED.inc(self.pending)
                log.warning("stopping with %d journal entries not stored", self.pending)

    async def _publish(self, entry: _Entry) -> None:
        subject, data, msg_id, _ = entry
        await self._js.publish(subject, data, headers={MSG_ID_HEADER: msg_id})


async def read(
    js: JetStreamContext, subjects: Subjects, namespace: str, podcliqueset: str
) -> list[AnyJournalEvent]:
    """One workload's journal, oldest first, through a consumer of its own that is gone
    when read (an entry that does not decode is skipped: a newer writer's event type).
    Each entry's ``service`` is its writer as its subject names it: NATS lets each user
    publish only under its own name, so what an entry's body claims cannot mislead."""
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
                    event: AnyJournalEvent = msgspec.json.decode(message.data, type=AnyJournalEvent)
                except msgspec.ValidationError as exc:
                    log.debug("journal entry %s skipped: %s", message.subject, exc)
                    continue
                writer = subjects.journal_writer(message.subject)
                if writer:
                    event = msgspec.structs.replace(event, service=subjects.service_name(writer))
                found.append(event)
    finally:
        await subscription.unsubscribe()
    return found
