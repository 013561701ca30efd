"""The one consumer kit: how podgang and every backend take work from the OBJECTS stream.

A service says three things (a :class:`Handler`): which key a message is about (``route``),
how to converge one key (``handle``), and which keys may need work without any message
(``keys``, the resync). The kit does the rest, the same way for every service:

- one durable pull consumer shared by every replica; a replica fetches only while one of
  its workers is idle, so no work waits on a busy replica while another idles;
- per-key coalescing: messages for a key queued or being handled join it, and a newer
  message supersedes an older one of the same key and slot (the older is acked at once: the
  newer alone brings the key back after a crash); one key is handled by one worker of a
  replica at a time;
- messages are acked once a handling that began after them succeeded; while held they are
  kept alive with in-progress heartbeats, so the ack deadline can be short and a dead
  replica's work moves to a live one within seconds;
- one retry policy: a transient failure (timeouts, NATS or API server trouble, 409 and 429,
  :class:`Transient`) is retried with capped, jittered exponential backoff for as long as it
  takes; any other failure ``max_attempts`` times, then the held messages go to the
  dead-letter subject with the error. A message that does not decode goes there at once.
  Failures a handler can name (a PodGang asking for the impossible) are not failures: the
  handler records them as a condition and returns;
- level-triggered resync: ``keys()`` at start and every ``resync_seconds``, so no lost or
  dead-lettered message strands anything.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
from collections.abc import AsyncIterator, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, Generic, Protocol, TypeVar

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.errors import BadRequestError
from prometheus_client import Counter, Gauge

from gangway_contracts.codec import MALFORMED
from gangway_contracts.durables import Durable
from gangway_contracts.subjects import ERROR_HEADER, SOURCE_SUBJECT_HEADER, Subjects
from gangway_runtime import logs, tasks
from gangway_runtime.kube import KubeError
from gangway_runtime.leases import Leases
from gangway_runtime.settings import ConsumerSettings
from gangway_runtime.streams import ensure_durable, until_made

log = logging.getLogger(__name__)
_BACKOFF_MAX = 60.0
_TRANSIENT_BACKOFF_MAX = 5.0
# How soon a key another replica was handling is tried again.
_LEASE_RETRY_SECONDS = 0.5

K = TypeVar("K", bound=Hashable)
M = TypeVar("M")  # a message: the queue only holds them

HANDLED = Counter(
    "gangway_consumer_handled",
    "Keys handled by result: ok, retried (transient, or attempts left), dead-lettered, "
    "deferred (another replica held its lease)",
    ["consumer", "result"],
)
DEAD_LETTERS = Counter(
    "gangway_consumer_dead_letters",
    "Messages sent to the dead-letter subject (undecodable, or given up on)",
    ["consumer"],
)
HELD = Gauge(
    "gangway_consumer_held_messages",
    "Messages taken and not yet acknowledged (queued, being handled, or backing off), as "
    "the last heartbeat counted them",
    ["consumer"],
)
# The consumer's own counts, as the server keeps them (every replica reports the same).
PENDING = Gauge(
    "gangway_consumer_pending_messages",
    "Messages in the stream the consumer has not delivered yet: its backlog",
    ["consumer"],
)
ACK_PENDING = Gauge(
    "gangway_consumer_ack_pending_messages",
    "Messages delivered to some replica and not yet acknowledged",
    ["consumer"],
)


class Transient(Exception):
    """A failure that trying again later can fix (a backend not answering yet): retried
    without limit. ``after``: when to try again (seconds), where the raiser knows better
    than the backoff (something expected shortly, as an object the watcher mirrors next)."""

    def __init__(self, message: str, after: float | None = None) -> None:
        super().__init__(message)
        self.after = after


def transient(exc: BaseException) -> bool:
    """Will trying again, later, help? Then there is no limit on the attempts."""
    if isinstance(exc, KubeError):
        return exc.transient
    if isinstance(exc, BadRequestError):
        return False
    # NATS: no responders, timeouts, a consumer or stream leader being elected.
    return isinstance(exc, Transient | NatsError | TimeoutError | OSError)


def backoff(attempts: int) -> float:
    """Seconds before the next attempt: 0.5 s doubling per attempt, at most a minute."""
    return min(0.5 * (1 << min(max(attempts - 1, 0), 16)), _BACKOFF_MAX)


def jittered(delay: float) -> float:
    """``delay`` ±20 %, so keys failing together do not come back together."""
    return delay * random.uniform(0.8, 1.2)


@dataclass(frozen=True)
class Route(Generic[K]):
    """What a message asks for: ``key`` to converge. Messages of one key and ``slot``
    supersede each other; messages of different slots are all handed to the handler (a
    backend tells its PodGang from each of its own resources this way)."""

    key: K
    slot: str = ""


class Handler(Protocol[K]):
    def route(self, msg: Msg) -> Route[K] | None:
        """The key a message is about; None to drop it (acked). Raises one of
        ``codec.MALFORMED`` for a message that does not decode: it is dead-lettered."""

    async def handle(self, key: K, msgs: Sequence[Msg]) -> float | None:
        """Converge ``key``; ``msgs``: the messages since the last success (none on a
        resync). Return once converged or waiting on someone else; raise to retry. A number
        returned: look at ``key`` again that many seconds on, message or not (something
        falls due then: a delay running out)."""

    def keys(self) -> AsyncIterator[K]:
        """Every key that may need work whether or not a message says so (resync)."""


class KeyQueue(Generic[K, M]):
    """Keys waiting to be handled, each with the newest message per slot; a key is handed to
    one worker at a time and comes back when messages arrived meanwhile. A key that failed,
    or whose lease another replica holds, is parked: its messages held, new ones joining
    them, until its timer wakes it (a message does not: a key another replica is handling
    would otherwise be tried again on every pod event of it)."""

    def __init__(self) -> None:
        self._ready: asyncio.Queue[K] = asyncio.Queue()
        self._queued: set[K] = set()
        self._parked: set[K] = set()
        self._waiting: dict[K, dict[str, M]] = {}
        self._active: dict[K, dict[str, M]] = {}

    def add(self, route: Route[K], msg: M) -> M | None:
        """Hold ``msg`` for its key, ready it unless parked; returns the message it
        superseded, if any."""
        slots = self._waiting.setdefault(route.key, {})
        older = slots.get(route.slot)
        slots[route.slot] = msg
        if route.key not in self._parked:
            self._ready_unless_busy(route.key)
        return older

    def wake(self, key: K) -> None:
        """Ready ``key`` (parked or not) unless it is queued or being handled already."""
        self._parked.discard(key)
        self._waiting.setdefault(key, {})
        self._ready_unless_busy(key)

    def _ready_unless_busy(self, key: K) -> None:
        if key not in self._queued and key not in self._active:
            self._queued.add(key)
            self._ready.put_nowait(key)

    async def take(self) -> tuple[K, list[M]]:
        key = await self._ready.get()
        self._queued.discard(key)
        slots = self._waiting.pop(key, {})
        self._active[key] = slots
        return key, list(slots.values())

    def done(self, key: K) -> None:
        """Handled: ready again if messages came meanwhile."""
        self._active.pop(key, None)
        if self._waiting.get(key):
            self.wake(key)

    def park(self, key: K) -> list[M]:
        """Not handled now: its messages go back to waiting (a newer one of a slot wins)
        until :meth:`wake`. Returns the messages superseded meanwhile (to ack)."""
        held = self._active.pop(key, {})
        slots = self._waiting.pop(key, {})
        superseded = [msg for slot, msg in held.items() if slot in slots]
        self._waiting[key] = held | slots
        self._parked.add(key)
        return superseded

    def held(self) -> Iterator[M]:
        for slots in (*self._waiting.values(), *self._active.values()):
            yield from slots.values()

    @property
    def ready(self) -> int:
        return self._ready.qsize()

    @property
    def idle(self) -> bool:
        return not self._waiting and not self._active and not self._parked


# How long the second fetch of fetch_ready may wait: it asks only for messages the server
# said it holds, which it sends at once, so this only bounds one another replica took first.
_DRAIN_SECONDS: Final = 0.05


async def fetch_ready(sub: JetStreamContext.PullSubscription, batch: int, wait: float) -> list[Msg]:
    """Up to ``batch`` messages as soon as there is one: the first (waiting up to ``wait``
    s; TimeoutError when none came), then as many more as it says the server holds.

    nats-py's ``fetch(batch)`` waits on after a first message until ``batch`` have come or
    ``wait`` has passed; and asked for more than it holds, the server holds the request
    open until it expires. So a message arriving alone must not be followed by a second
    fetch: it waited that fetch's whole time (50 ms on every step of every gang)."""
    found = await sub.fetch(1, timeout=wait)
    more = min(batch - 1, found[0].metadata.num_pending or 0)
    if more > 0:
        with contextlib.suppress(TimeoutError):  # nats-py's is one too: taken meanwhile
            found += await sub.fetch(more, timeout=_DRAIN_SECONDS)
    return found


class Consumer(Generic[K]):
    """``durable``: the consumer every replica shares (its name also names the dead-letter
    subject and the leases' bucket) and the object subjects it takes."""

    def __init__(
        self,
        js: JetStreamContext,
        subjects: Subjects,
        handler: Handler[K],
        settings: ConsumerSettings,
        durable: Durable,
    ) -> None:
        self.js = js
        self.subjects = subjects
        self.stream = subjects.objects_stream
        self.definition = durable
        self.durable = durable.name
        self.deadletter_subject = subjects.deadletter(durable.name)
        self.handler = handler
        self.settings = settings
        self.queue: KeyQueue[K, Msg] = KeyQueue()
        self._attempts: dict[K, int] = {}
        # One "look again" timer per key, the latest handling's (bounded by the keys).
        self._timers: dict[K, asyncio.TimerHandle] = {}
        self._idle = 0
        self._worker_freed = asyncio.Event()
        self._sub: JetStreamContext.PullSubscription | None = None
        self.leases = Leases(
            js,
            subjects.leases_bucket(durable.name),
            settings.lease_holder,
            linger=settings.lease_linger_seconds,
        )

    async def subscribe(self) -> None:
        """Bind to the durable consumer every replica shares and to the bucket of their
        leases (the setup step made them; made here where nothing restricts this service)."""

        async def bind() -> None:
            await ensure_durable(self.js, self.subjects, self.definition, self.settings)
            await self.leases.bind(self.settings)

        await until_made(f"consumer {self.durable}", bind)
        if self._sub is not None:  # bound again: the old subscription's inbox goes
            with contextlib.suppress(NatsError):
                await self._sub.unsubscribe()
        self._sub = await self.js.pull_subscribe_bind(durable=self.durable, stream=self.stream)

    async def run(self) -> None:
        if self._sub is None:
            await self.subscribe()
        workers = [self._work() for _ in range(self.settings.workers)]
        try:
            await tasks.run_together(
                self._fetch(), self._heartbeat(), self._resync(), self.leases.run(), *workers
            )
        finally:  # stopping: a successor takes these keys at once, not after the TTL
            with contextlib.suppress(NatsError, TimeoutError):
                await self.leases.let_go_all()

    async def _fetch(self) -> None:
        """Take messages while a worker is idle; a lost consumer is bound again (fetch)."""
        try:
            while True:
                while self.queue.ready >= self._idle:
                    self._worker_freed.clear()
                    await self._worker_freed.wait()
                # As many as the idle workers can start: a message for a key already
                # queued or being handled takes no worker, so bursts still coalesce.
                for msg in await self._fetch_batch(self._idle - self.queue.ready):
                    await self._take(msg)
        finally:
            if self._sub is not None:
                with contextlib.suppress(Exception):
                    await self._sub.unsubscribe()

    async def _fetch_batch(self, batch: int) -> list[Msg]:
        """The next batch, or none. A consumer gone (deleted, a server restarted) or briefly
        without a leader (a cluster node failing over) is bound again a second later."""
        assert self._sub is not None  # subscribe() set it; bound again below
        try:
            return await fetch_ready(self._sub, batch, wait=5)
        except TimeoutError:  # nats-py's, or asyncio's on a late reply
            return []
        except NatsError as exc:
            log.warning("consumer %s: %s; binding again", self.durable, exc)
            await asyncio.sleep(1)
            with contextlib.suppress(NatsError):
                await self.subscribe()
            return []

    async def _take(self, msg: Msg) -> None:
        try:
            route = self.handler.route(msg)
        except MALFORMED as exc:
            await self._dead_letter(msg, f"malformed record: {exc}")
            return
        if route is None:
            await _ack(msg)
            return
        if (superseded := self.queue.add(route, msg)) is not None:
            await _ack(superseded)

    async def _heartbeat(self) -> None:
        """Every third of the ack deadline, tell the server every held message is still
        being worked on; a replica that dies stops, and its messages go to another."""
        while True:
            await asyncio.sleep(self.settings.ack_wait_seconds / 3)
            held = list(self.queue.held())
            HELD.labels(self.durable).set(len(held))
            for msg in held:
                with contextlib.suppress(NatsError):
                    await msg.in_progress()
            try:
                await self.leases.renew()
            except NatsError as exc:  # the bus away: a lease may lapse; its holder goes on
                log.warning("%s: leases not renewed: %s", self.durable, exc)
            await self._count_backlog()

    async def _count_backlog(self) -> None:
        try:
            info = await self.js.consumer_info(self.stream, self.durable)
        except (NatsError, TimeoutError):  # the gauges keep the last count meanwhile
            return
        PENDING.labels(self.durable).set(info.num_pending or 0)
        ACK_PENDING.labels(self.durable).set(info.num_ack_pending or 0)

    async def _resync(self) -> None:
        """Every key that may need work, at start and every ``resync_seconds``; a resync the
        bus or the store interrupted is tried again soon, never ends the consumer."""
        while True:
            try:
                async for key in self.handler.keys():
                    self.queue.wake(key)
            except Exception as exc:
                log.warning("%s: resync interrupted (%s); again shortly", self.durable, exc)
                await asyncio.sleep(jittered(_TRANSIENT_BACKOFF_MAX))
                continue
            await asyncio.sleep(jittered(self.settings.resync_seconds))

    async def _work(self) -> None:
        while True:
            self._idle += 1
            self._worker_freed.set()
            try:
                key, msgs = await self.queue.take()
            finally:
                self._idle -= 1
            try:
                with logs.handling(key):  # every line about it names it
                    await self._handle(key, msgs)
            except Exception:  # a bug in the kit itself: log, never stop the worker
                log.exception("%s: unexpected failure handling %s", self.durable, key)
                self.queue.done(key)

    async def _handle(self, key: K, msgs: list[Msg]) -> None:
        try:
            if not await self.leases.take(key):  # another replica handles it right now
                await self._later(key, jittered(_LEASE_RETRY_SECONDS))
                HANDLED.labels(self.durable, "deferred").inc()
                return
            try:
                again = await self.handler.handle(key, msgs)
            finally:
                await self.leases.give_back(key)
        except Exception as exc:
            await self._failed(key, msgs, exc)
            return
        self._look_again(key, again)
        self._attempts.pop(key, None)
        HANDLED.labels(self.durable, "ok").inc()
        self.queue.done(key)
        for msg in msgs:
            await _ack(msg)

    async def _failed(self, key: K, msgs: list[Msg], exc: Exception) -> None:
        attempts = self._attempts.get(key, 0) + 1
        passing = transient(exc)
        if passing or attempts < self.settings.max_attempts:
            self._attempts[key] = attempts
            HANDLED.labels(self.durable, "retried").inc()
            # What is away comes back on its own: tried often enough to follow within seconds.
            cap = _TRANSIENT_BACKOFF_MAX if passing else _BACKOFF_MAX
            after = exc.after if isinstance(exc, Transient) else None
            delay = jittered(min(backoff(attempts), cap) if after is None else after)
            log.warning("%s: %s; retry %d in %.1fs", key, exc, attempts, delay)
            if not passing:
                log.debug("%s: failure detail", key, exc_info=exc)
            await self._later(key, delay)
            return
        self._attempts.pop(key, None)
        HANDLED.labels(self.durable, "dead-lettered").inc()
        log.error("%s: giving up after %d attempts: %s", key, attempts, exc)
        self.queue.done(key)
        for msg in msgs:
            await self._dead_letter(msg, f"{type(exc).__name__}: {exc}")

    def _look_again(self, key: K, after: float | None) -> None:
        """The latest handling's word replaces the one before: a timer, or none. Lost with
        the process; the resync looks at every key anyway."""
        if (before := self._timers.pop(key, None)) is not None:
            before.cancel()
        if after is not None:
            loop = asyncio.get_running_loop()
            self._timers[key] = loop.call_later(max(after, 0.1), self._timer_fired, key)

    def _timer_fired(self, key: K) -> None:
        self._timers.pop(key, None)
        self.queue.wake(key)

    async def _later(self, key: K, delay: float) -> None:
        """Park ``key`` with its messages, to be taken up again after ``delay``."""
        for msg in self.queue.park(key):
            await _ack(msg)
        asyncio.get_running_loop().call_later(delay, self.queue.wake, key)

    async def _dead_letter(self, msg: Msg, error: str) -> None:
        """Keep the message, with why it was given up on, on the service's dead-letter
        subject; then ack it so the consumer moves on."""
        DEAD_LETTERS.labels(self.durable).inc()
        headers = {ERROR_HEADER: error[:4000], SOURCE_SUBJECT_HEADER: msg.subject}
        await self.js.publish(self.deadletter_subject, msg.data, headers=headers)
        await _ack(msg)


async def _ack(msg: Msg) -> None:
    """Ack, or leave the message to be delivered again (handling is idempotent) when the
    connection is down."""
    try:
        await msg.ack()
    except NatsError as exc:
        log.warning("%s: not acknowledged (%s); it will be delivered again", msg.subject, exc)
