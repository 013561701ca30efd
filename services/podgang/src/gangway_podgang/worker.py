"""Taking work: one durable pull consumer (shared by replicas) → one queue of PodCliqueSets.

A message about a PodCliqueSet, one of its PodGangs or one of its pods only says which
PodCliqueSet to reconcile. Messages for a key that is already queued or being reconciled
join it, so a burst of a thousand pod events costs a reconcile or two, not a thousand; a
key is reconciled by one worker at a time. The messages are acked once a reconcile that
began after them succeeds, so a crash loses nothing: they are delivered again.

On failure all but the newest are acked and the newest is nak'd with backoff: one message
is enough to bring the key back. Failures retrying can fix (the backend or the API server
is unavailable, a conflicting write) retry without limit; any other goes to dead letter
after ``max_attempts`` deliveries, with its error, and the service goes on.

Every PodCliqueSet is also reconciled at start and every ``resync_seconds``: level-triggered
work needs no message to converge.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import Counter
from collections.abc import Awaitable, Callable

import aiohttp
import msgspec
from nats.aio.msg import Msg
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy

from gangway_contracts.codec import MALFORMED
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Kind, Subjects
from gangway_podgang import metrics
from gangway_podgang.readmodel import ReadModel, WorkloadKey, decode_object, workload_of
from gangway_podgang.reconcile import Outcome
from gangway_podgang.settings import PodgangSettings
from gangway_podgang.writes import BackendUnavailable, PrepareFailed
from gangway_runtime import tasks
from gangway_runtime.kube import KubeError
from gangway_runtime.work import backoff, dead_letter, fetch

log = logging.getLogger(__name__)

Reconcile = Callable[[WorkloadKey], Awaitable[Outcome]]


def retryable(exc: BaseException) -> bool:
    """Will trying again, later, help? Then there is no limit on the attempts."""
    if isinstance(exc, KubeError):
        return exc.transient
    return isinstance(exc, BackendUnavailable | PrepareFailed | aiohttp.ClientError | TimeoutError)


class KeyQueue:
    """Keys waiting for a reconcile, each with the messages that asked for it; a key is
    handed to one worker at a time, and comes back if messages arrived meanwhile."""

    def __init__(self) -> None:
        self._ready: asyncio.Queue[WorkloadKey] = asyncio.Queue()
        self._waiting: dict[WorkloadKey, list[Msg]] = {}
        self._active: set[WorkloadKey] = set()

    def add(self, key: WorkloadKey, msg: Msg | None = None) -> None:
        queued = key in self._waiting
        self._waiting.setdefault(key, [])
        if msg is not None:
            self._waiting[key].append(msg)
        if not queued and key not in self._active:
            self._ready.put_nowait(key)

    async def take(self) -> tuple[WorkloadKey, list[Msg]]:
        key = await self._ready.get()
        self._active.add(key)
        return key, self._waiting.pop(key)

    def done(self, key: WorkloadKey) -> None:
        self._active.discard(key)
        if key in self._waiting:
            self._ready.put_nowait(key)

    @property
    def idle(self) -> bool:
        return not self._waiting and not self._active


def sequence(msg: Msg) -> int:
    return msg.metadata.sequence.stream


class PodgangWorker:
    def __init__(
        self,
        js: JetStreamContext,
        subjects: Subjects,
        model: ReadModel,
        reconcile: Reconcile,
        settings: PodgangSettings,
    ) -> None:
        self.js = js
        self.subjects = subjects
        self.model = model
        self.reconcile = reconcile
        self.settings = settings
        self.queue = KeyQueue()
        # Failed reconciles in a row of keys no message stands for (resyncs): their backoff.
        self._resync_failures: Counter[WorkloadKey] = Counter()
        self._sub: JetStreamContext.PullSubscription | None = None

    @property
    def durable(self) -> str:
        return self.subjects.service_name("podgang")

    async def subscribe(self) -> None:
        """Create (or bind to) the durable consumer every replica shares."""
        self._sub = await self.js.pull_subscribe(
            self.subjects.objects_root + ".>",
            durable=self.durable,
            stream=self.subjects.objects_stream,
            config=ConsumerConfig(
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=self.settings.ack_wait_seconds,
                max_ack_pending=self.settings.max_ack_pending,
                filter_subjects=[
                    self.subjects.objects_filter(kind)
                    for kind in (Kind.PODCLIQUESET, Kind.PODGANG, Kind.POD)
                ],
            ),
        )

    async def run(self) -> None:
        if self._sub is None:
            await self.subscribe()
        workers = [self._work() for _ in range(self.settings.workers)]
        await tasks.run_together(self._fetch(), self._resync(), *workers)

    async def _fetch(self) -> None:
        """Take messages for ever; a lost consumer (server restart) is bound again."""
        try:
            while True:
                await self._fetch_once()
        finally:
            if self._sub is not None:
                with contextlib.suppress(Exception):
                    await self._sub.unsubscribe()

    async def _fetch_once(self) -> None:
        assert self._sub is not None
        batch = await fetch(self._sub, self.settings.fetch_batch, self.durable, self.subscribe)
        for msg in batch:
            await self._take(msg)

    async def _take(self, msg: Msg) -> None:
        try:
            key = self.subjects.parse_object(msg.subject)
            record = msgspec.json.decode(msg.data, type=ObjectRecord)
            # The whole view, as the read model decodes it: a record of the wrong shape is
            # dead-lettered here, not skipped there with a warning.
            meta = decode_object(key.kind, record).metadata
        except MALFORMED as exc:
            metrics.DEAD_LETTERS.inc()
            await dead_letter(self.js, self.subjects, self.durable, msg, f"malformed record: {exc}")
            return
        workload = workload_of(key.kind, key.namespace, meta.labels, key.name)
        if not workload[1]:
            await msg.ack()  # a PodGang or pod no PodCliqueSet claims
            return
        log.debug("%s: %s/%s", msg.subject, *workload)
        self.queue.add(workload, msg)

    async def _resync(self) -> None:
        """Every PodCliqueSet, once the read model holds what the stream held at start;
        then again every ``resync_seconds``."""
        await self.model.wait_until(lambda: self.model.loaded, float("inf"))
        while True:
            for key in self.model.workload_keys():
                self.queue.add(key)
            await asyncio.sleep(self.settings.resync_seconds)

    async def _work(self) -> None:
        while True:
            key, msgs = await self.queue.take()
            try:
                await self._handle(key, msgs)
            except Exception:  # a bug in the handling itself: log, never stop the worker
                log.exception("%s/%s: unexpected failure handling messages", *key)
            finally:
                self.queue.done(key)

    async def _handle(self, key: WorkloadKey, msgs: list[Msg]) -> None:
        newest = max(msgs, key=sequence, default=None)
        if newest is not None and not await self.model.caught_up(
            sequence(newest), self.settings.read_model_timeout_seconds
        ):
            log.warning("%s/%s: read model behind the message; deciding anyway", *key)
        try:
            outcome = await self.reconcile(key)
        except Exception as exc:
            await self._failed(key, msgs, newest, exc)
            return
        metrics.RECONCILES.labels("converged" if outcome.converged else "waiting").inc()
        self._resync_failures.pop(key, None)
        for msg in msgs:
            await msg.ack()

    async def _failed(
        self, key: WorkloadKey, msgs: list[Msg], newest: Msg | None, exc: Exception
    ) -> None:
        for msg in msgs:
            if msg is not newest:
                await msg.ack()
        if newest is None:  # a resync: no message to nak, so this process retries it
            self._resync_failures[key] += 1
            delay = backoff(self._resync_failures[key])
            metrics.RECONCILES.labels("retried").inc()
            log.warning("%s/%s: %s; retrying in %.1fs", *key, exc, delay)
            asyncio.get_running_loop().call_later(delay, self.queue.add, key)
            return
        delivered = newest.metadata.num_delivered or 1
        if not retryable(exc) and delivered >= self.settings.max_attempts:
            metrics.RECONCILES.labels("dead-lettered").inc()
            metrics.DEAD_LETTERS.inc()
            log.error("%s/%s: giving up after %d attempts: %s", *key, delivered, exc)
            error = f"{type(exc).__name__}: {exc}"
            await dead_letter(self.js, self.subjects, self.durable, newest, error)
            return
        metrics.RECONCILES.labels("retried").inc()
        delay = backoff(delivered)
        log.warning("%s/%s: %s; retry %d in %.1fs", *key, exc, delivered, delay)
        if not retryable(exc):
            log.debug("%s/%s: failure detail", *key, exc_info=exc)
        await newest.nak(delay=delay)
