"""The PodGang consumer: one durable pull consumer per backend, shared by its replicas.

It filters on every object subject the backend owns: its PodGangs, and its own resources
(a KAI PodGroup someone edited or deleted brings its PodGang back for a sync: drift repair).
A message only says which PodGang to look at; the handler reads the PodGang's current record
and converges. Ack once done; nak with backoff on failure; after ``max_attempts`` deliveries
the message goes to the dead-letter subject with its error and is acked, so one bad key never
stops the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import UTC, datetime
from typing import Any

import msgspec
from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js import JetStreamContext
from nats.js.api import AckPolicy, ConsumerConfig, DeliverPolicy
from opentelemetry import trace

from gangway_backendkit import metrics
from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import unchanged
from gangway_backendkit.protocol import Backend, Synced, SyncFailed
from gangway_backendkit.settings import BackendSettings
from gangway_contracts import labels
from gangway_contracts.codec import MALFORMED
from gangway_contracts.events import BackendSynced, BackendSyncFailed, JournalEvent
from gangway_contracts.grove import PodGang
from gangway_contracts.k8s import Condition, NamespacedName
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Kind, ObjectKey
from gangway_runtime import tasks, tracing
from gangway_runtime.journal import JournalWriter
from gangway_runtime.status import now, set_podgang_condition
from gangway_runtime.work import backoff, dead_letter, fetch

log = logging.getLogger(__name__)
tracer = trace.get_tracer("gangway.backendkit")


class _Owner(msgspec.Struct):
    kind: str = ""
    name: str = ""


class _OwnedMeta(msgspec.Struct, rename="camel"):
    owner_references: list[_Owner] = []


class _Owned(msgspec.Struct):
    """Just enough of a backend resource to find its PodGang; any other shape is refused."""

    metadata: _OwnedMeta = msgspec.field(default_factory=_OwnedMeta)


def podgang_key(backend: str, key: ObjectKey, record: ObjectRecord) -> ObjectKey:
    """The PodGang a message is about: itself, or the PodGang that owns a backend resource
    (by owner reference; by name when the resource has none). Raises msgspec.DecodeError for
    a resource that is not an object with object metadata (a poison record)."""
    if key.kind == Kind.PODGANG:
        return key
    owned = msgspec.json.decode(record.object, type=_Owned)
    owners = [o.name for o in owned.metadata.owner_references if o.kind == "PodGang" and o.name]
    return ObjectKey(Kind.PODGANG, backend, key.namespace, owners[0] if owners else key.name)


def _synced_at_generation(podgang: PodGang) -> bool:
    synced = podgang.current_condition(labels.BACKEND_SYNCED)
    return synced is not None and synced.status == "True"


class PodGangWorker:
    def __init__(self, backend: Backend, ctx: BackendContext, settings: BackendSettings) -> None:
        self.backend = backend
        self.ctx = ctx
        self.settings = settings
        self._slots = asyncio.Semaphore(settings.concurrency)
        self._locks: dict[ObjectKey, asyncio.Lock] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._sub: JetStreamContext.PullSubscription | None = None
        # BackendSynced entries: buffered, stored in order, retried through a failover.
        self.journal = JournalWriter(ctx.js, ctx.subjects)

    @property
    def durable(self) -> str:
        return self.ctx.subjects.backend_service_name(self.backend.name)

    async def subscribe(self) -> None:
        """Create (or bind to) the backend's durable consumer."""
        subjects = self.ctx.subjects
        self._sub = await self.ctx.js.pull_subscribe(
            subjects.objects_filter("*", self.backend.name),
            durable=self.durable,
            stream=subjects.objects_stream,
            config=ConsumerConfig(
                deliver_policy=DeliverPolicy.ALL,
                ack_policy=AckPolicy.EXPLICIT,
                ack_wait=self.settings.ack_wait_seconds,
                max_ack_pending=self.settings.concurrency * 4,
            ),
        )

    async def run(self) -> None:
        if self._sub is None:
            await self.subscribe()
        await tasks.run_together(self._consume(), self.journal.run())

    async def _consume(self) -> None:
        try:
            while True:
                assert self._sub is not None  # subscribe() set it; fetch() binds it again
                # Only as many messages as there are free slots: a message fetched waits for
                # no one here, so a busy replica leaves the rest to an idle one (replicas
                # share one consumer; one held 32 unacked while the other idled).
                free = await self._free_slots(self.settings.fetch_batch)
                msgs: list[Msg] = []
                try:
                    msgs = await fetch(self._sub, free, self.durable, self.subscribe)
                finally:
                    for _ in range(free - len(msgs)):  # slots no message came for
                        self._slots.release()
                for msg in msgs:
                    task = asyncio.create_task(self._handle(msg))
                    self._tasks.add(task)
                    task.add_done_callback(self._tasks.discard)
        finally:
            for task in list(self._tasks):
                task.cancel()
            await asyncio.gather(*self._tasks, return_exceptions=True)
            if self._sub is not None:
                with contextlib.suppress(NatsError):
                    await self._sub.unsubscribe()

    async def _free_slots(self, most: int) -> int:
        """Wait for a free handling slot, then take the others free now, up to ``most``;
        each message handled gives its slot back."""
        await self._slots.acquire()
        taken = 1
        while taken < most and not self._slots.locked():
            await self._slots.acquire()
            taken += 1
        return taken

    async def _handle(self, msg: Msg) -> None:
        try:
            try:
                key = self.ctx.subjects.parse_object(msg.subject)
                record = msgspec.json.decode(msg.data, type=ObjectRecord)
                target = podgang_key(self.backend.name, key, record)
            except MALFORMED as exc:
                await self._dead_letter(msg, f"malformed record: {exc}")
                return
            lock = self._locks.setdefault(target, asyncio.Lock())
            async with lock:  # one PodGang at a time in this replica
                try:
                    parent = tracing.context_from_headers(msg.headers)
                    mirrored = record if key.kind != Kind.PODGANG else None
                    await self.reconcile(
                        target, drift=mirrored is not None, parent=parent, mirrored=mirrored
                    )
                except Exception as exc:  # retried by redelivery; never swallowed
                    await self._retry_or_give_up(msg, target, exc)
                    return
            if not lock.locked():
                self._locks.pop(target, None)
            await msg.ack()
        finally:
            self._slots.release()

    async def _retry_or_give_up(self, msg: Msg, target: ObjectKey, exc: Exception) -> None:
        delivered = msg.metadata.num_delivered or 1
        if delivered >= self.settings.max_attempts:
            log.error(
                "%s/%s: giving up after %d attempts: %s",
                target.namespace,
                target.name,
                delivered,
                exc,
            )
            await self._dead_letter(msg, f"{type(exc).__name__}: {exc}")
            return
        delay = backoff(delivered)
        log.warning(
            "%s/%s: %s; retry %d in %.1fs", target.namespace, target.name, exc, delivered, delay
        )
        await msg.nak(delay=delay)

    async def _dead_letter(self, msg: Msg, error: str) -> None:
        metrics.DEAD_LETTERS.labels(self.backend.name).inc()
        await dead_letter(self.ctx.js, self.ctx.subjects, self.durable, msg, error)

    async def reconcile(
        self,
        key: ObjectKey,
        drift: bool = False,
        parent: Any = None,
        mirrored: ObjectRecord | None = None,
    ) -> None:
        """Converge the backend's resources and condition for one PodGang. ``drift``: the
        message was about one of the backend's own resources, which must be checked even
        when the PodGang itself has not changed; ``mirrored``: that resource as the watcher
        mirrored it."""
        name = self.backend.name
        with (
            tracer.start_as_current_span(f"{name} sync podgang", context=parent),
            metrics.SYNC_SECONDS.labels(name).time(),
        ):
            record = await self.ctx.record(key)
            if record is None:
                return
            if record.deleted:
                await self.backend.on_podgang_delete(record, self.ctx)
                metrics.SYNCS.labels(name, "deleted").inc()
                return
            podgang = msgspec.json.decode(record.object, type=PodGang)
            current = msgspec.json.decode(record.object)
            if not drift and _synced_at_generation(podgang):
                metrics.SYNCS.labels(name, "skipped").inc()
                return  # only the status moved (ours or another's condition): nothing to do
            if mirrored is not None and await self._as_desired(podgang, mirrored):
                metrics.SYNCS.labels(name, "unchanged").inc()
                return  # the scheduler wrote its status: no API read to find nothing to do
            try:
                synced: Synced | SyncFailed = await self.backend.sync_podgang(podgang, self.ctx)
            except SyncFailed as failed:
                synced = failed
            except Exception:
                metrics.SYNCS.labels(name, "error").inc()
                raise
            await self._report(podgang, current, synced)
            metrics.SYNCS.labels(name, "synced" if isinstance(synced, Synced) else "failed").inc()

    async def _as_desired(self, podgang: PodGang, mirrored: ObjectRecord) -> bool:
        """Whether a backend resource as mirrored is what the backend wants it to be, for a
        PodGang already synced at its generation: then nothing is to be done, read or
        written. Found from the store alone (the PodGang, its PodCliqueSet and the pure
        :meth:`Backend.resources`); any doubt answers False and the backend syncs as usual,
        reading the API. A mirror behind the cluster is followed by a newer record."""
        if mirrored.deleted or not _synced_at_generation(podgang):
            return False
        live = msgspec.json.decode(mirrored.object)
        meta = podgang.metadata
        try:
            pcs = await self.ctx.podcliqueset(meta.namespace, meta.labels.get(labels.PART_OF, ""))
            desired = self.backend.resources(podgang, pcs)
        except Exception:  # any doubt: the backend's own sync decides
            return False
        same = [
            manifest
            for manifest in desired
            if manifest.get("kind") == live.get("kind")
            and manifest.get("apiVersion") == live.get("apiVersion")
            and manifest["metadata"]["name"] == mirrored.name
        ]
        return len(same) == 1 and unchanged(same[0], live)

    async def _report(
        self, podgang: PodGang, current: dict[str, Any], result: Synced | SyncFailed
    ) -> None:
        status, reason = (
            ("True", "Synced") if isinstance(result, Synced) else ("False", result.reason)
        )
        condition = Condition(
            type=labels.BACKEND_SYNCED,
            status=status,
            reason=reason,
            message=result.message,
            last_transition_time=now(),
            observed_generation=podgang.metadata.generation,
        )
        if await set_podgang_condition(self.ctx.kube, current, condition) is None:
            return
        workload = NamespacedName(
            namespace=podgang.metadata.namespace,
            name=podgang.metadata.labels.get(labels.PART_OF, podgang.metadata.name),
        )
        common: dict[str, Any] = {
            "workload": workload,
            "at": datetime.now(UTC),
            "service": self.durable,
            "trace_id": tracing.trace_id_hex(),
            "podgang": podgang.metadata.name,
            "backend": self.backend.name,
        }
        event: JournalEvent
        if isinstance(result, Synced):
            event = BackendSynced(resources=result.resources, **common)
        else:
            event = BackendSyncFailed(reason=result.reason, message=result.message, **common)
        self.journal.put(event)
