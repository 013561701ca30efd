"""What a backend takes from the bus: its PodGangs, and its own resources (a KAI PodGroup
someone edited or deleted brings its PodGang back for a sync: drift repair).

A message only says which PodGang to look at; the handler reads the PodGang's current record
and converges. The runtime's consumer kit (:mod:`gangway_runtime.consumer`) does the taking:
one durable consumer shared by the backend's replicas, one PodGang at a time, one retry
policy, and a resync of every PodGang not yet synced at its generation.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

import msgspec
from nats.aio.msg import Msg
from opentelemetry import trace

from gangway_backendkit import metrics
from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import unchanged
from gangway_backendkit.protocol import Backend, Manifest, NotYet, Synced, SyncFailed
from gangway_backendkit.view import SchedulerViews
from gangway_contracts import labels
from gangway_contracts.codec import MALFORMED
from gangway_contracts.events import BackendSynced, BackendSyncFailed, JournalEvent
from gangway_contracts.grove import PodGang, podcliqueset_of
from gangway_contracts.k8s import Condition, NamespacedName
from gangway_contracts.permissions import backend_user
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import Kind, ObjectKey
from gangway_runtime import tracing
from gangway_runtime.consumer import Route
from gangway_runtime.journal import JournalWriter
from gangway_runtime.objects import OwnWrites, last_per_subject
from gangway_runtime.status import now, set_podgang_condition

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
    a PodGang that is not one, or a resource that is not an object with object metadata (a
    poison record: dead-lettered at once, as podgang does, not retried until given up)."""
    if key.kind == Kind.PODGANG:
        if not record.deleted:
            msgspec.json.decode(record.object, type=PodGang)
        return key
    owned = msgspec.json.decode(record.object, type=_Owned)
    owners = [o.name for o in owned.metadata.owner_references if o.kind == "PodGang" and o.name]
    return ObjectKey(Kind.PODGANG, backend, key.namespace, owners[0] if owners else key.name)


def _one_as_desired(desired: list[Manifest], mirrored: ObjectRecord) -> bool:
    live = msgspec.json.decode(mirrored.object)
    same = [
        manifest
        for manifest in desired
        if manifest.get("kind") == live.get("kind")
        and manifest.get("apiVersion") == live.get("apiVersion")
        and manifest["metadata"]["name"] == mirrored.name
    ]
    return len(same) == 1 and unchanged(same[0], live)


def _workload(podgang: PodGang) -> NamespacedName:
    """The PodCliqueSet a PodGang is part of: its journal's workload."""
    meta = podgang.metadata
    return NamespacedName(namespace=meta.namespace, name=podcliqueset_of(meta) or meta.name)


def _grove_managed(podgang: PodGang) -> bool:
    """Grove's operator made it, and syncs it through its own backend: a second writer of
    one PodGroup would fight it (docs/operations.md, beside Grove)."""
    return podgang.metadata.labels.get(labels.MANAGED_BY) == labels.MANAGED_BY_GROVE


def _awaiting_first_status(podgang: PodGang) -> bool:
    """podgang writes the first status of a PodGang it made (Initialized) right after
    creating it, and that write brings the PodGang back here at once: syncing before it
    would race it (a 409 and a read). PodGangs made by anyone else are synced as they come."""
    made_by_podgang = podgang.metadata.labels.get(labels.COMPONENT) == labels.COMPONENT_PODGANG
    return made_by_podgang and podgang.status is None


def _set_aside(podgang: PodGang) -> str | None:
    """Why this PodGang is not synced now, as the syncs metric counts it; None: sync it."""
    if _grove_managed(podgang):
        return "grove"
    if _awaiting_first_status(podgang):
        return "awaiting-status"
    return None


def _filling(podgang: PodGang) -> bool:
    """Its maker is still creating its pods: Initialized is False at its current generation
    (PodsPending). The pod references come with the next generation, which would leave a
    BackendSynced written now stale at once: a second write, and a second journal step, for
    every gang. Its resources are made now, early; the condition waits for the references."""
    return podgang.current_status(labels.INITIALIZED) is False


def _step_id(podgang: PodGang) -> str:
    """The id a PodGang's BackendSynced entry is stored under: one step per PodGang and
    generation, whichever replica writes it or makes it up (the stream stores it once)."""
    meta = podgang.metadata
    return f"synced/{meta.uid}/{meta.generation}"


class PodGangHandler:
    def __init__(self, backend: Backend, ctx: BackendContext) -> None:
        self.backend = backend
        self.ctx = ctx
        # BackendSynced entries: buffered, stored in order, retried through a failover.
        self.journal = JournalWriter(ctx.js, ctx.subjects, backend_user(backend.name))
        # The BackendSynced this backend last wrote to each PodGang, until the store shows it.
        self.said: OwnWrites[ObjectKey, Condition] = OwnWrites()
        self.views = SchedulerViews(backend, ctx.kube, ctx.record)

    @property
    def durable(self) -> str:
        return self.ctx.subjects.backend_service_name(self.backend.name)

    def route(self, msg: Msg) -> Route[ObjectKey]:
        """The PodGang; each of its resources in a slot of its own, so a change to one is
        checked even when a change to the PodGang comes with it."""
        key = self.ctx.subjects.parse_object(msg.subject)
        record = msgspec.json.decode(msg.data, type=ObjectRecord)
        return Route(podgang_key(self.backend.name, key, record), slot=msg.subject)

    async def handle(self, key: ObjectKey, msgs: Sequence[Msg]) -> None:
        subjects = self.ctx.subjects
        parent = tracing.context_from_headers(msgs[-1].headers) if msgs else None
        # The PodGang as its message brought it, and the backend's own resources as
        # mirrored (route() decoded each once already).
        brought: ObjectRecord | None = None
        mirrored: list[ObjectRecord] = []
        for msg in msgs:
            record = msgspec.json.decode(msg.data, type=ObjectRecord)
            if subjects.parse_object(msg.subject).kind == Kind.PODGANG:
                brought = record
            else:
                mirrored.append(record)
        await self.reconcile(
            key, drift=bool(mirrored), parent=parent, mirrored=mirrored, brought=brought
        )

    async def keys(self) -> AsyncIterator[ObjectKey]:
        """Every PodGang of this backend the store holds not synced at its generation: no
        lost or dead-lettered message leaves one without its resources."""
        subjects = self.ctx.subjects
        stored = subjects.objects_filter(Kind.PODGANG, self.backend.name)
        async for msg in last_per_subject(self.ctx.js, subjects.objects_stream, stored):
            try:
                record = msgspec.json.decode(msg.data, type=ObjectRecord)
                podgang = msgspec.json.decode(record.object, type=PodGang)
            except MALFORMED:
                continue  # dead-lettered when its message was taken
            if (
                not record.deleted
                and not _grove_managed(podgang)
                and not podgang.holds_now(labels.BACKEND_SYNCED)
            ):
                yield subjects.parse_object(msg.subject)

    async def reconcile(
        self,
        key: ObjectKey,
        drift: bool = False,
        parent: Any = None,
        mirrored: Sequence[ObjectRecord] = (),
        brought: ObjectRecord | None = None,
    ) -> None:
        """Converge the backend's resources and condition for one PodGang. ``drift``: a
        message was about one of the backend's own resources, which must be checked even
        when the PodGang itself has not changed; ``mirrored``: those resources as the
        watcher mirrored them; ``brought``: the PodGang as its message brought it, else it
        is read from the store (a resync, a resource's message alone). A message is the
        newest of its PodGang this replica took; were the store newer still, that record's
        message follows and converges the PodGang again — as an informer's cache lags, and
        one direct get a handling was a seventh of what a backend sent the bus."""
        name = self.backend.name
        with (
            tracer.start_as_current_span(f"{name} sync podgang", context=parent),
            metrics.SYNC_SECONDS.labels(name).time(),
        ):
            record = brought or await self.ctx.record(key)
            if record is None:
                return
            if record.deleted:
                await self.backend.on_podgang_delete(record, self.ctx)
                metrics.SYNCS.labels(name, "deleted").inc()
                return
            podgang = msgspec.json.decode(record.object, type=PodGang)
            if (aside := _set_aside(podgang)) is not None:
                metrics.SYNCS.labels(name, aside).inc()
                return
            current = msgspec.json.decode(record.object)
            if self._synced(key, podgang, record.resource_version) and (
                # only the status moved (ours or another's condition): nothing to do
                not drift
                # the scheduler wrote its status: no API read to find nothing to do
                or (mirrored and await self._as_desired(podgang, mirrored))
            ):
                metrics.SYNCS.labels(name, "unchanged" if drift else "skipped").inc()
                # The replica that wrote the condition may have died before its entry was
                # stored: whichever message comes next, about the PodGang or a resource.
                if podgang.holds_now(labels.BACKEND_SYNCED):
                    await self._journaled(podgang)
                # The scheduler wrote its objects' status: what it says of the gang.
                await self.views.tell(key, podgang, record.resource_version, current, mirrored)
                return
            try:
                result: Synced | SyncFailed = await self.backend.sync_podgang(podgang, self.ctx)
            except SyncFailed as failed:
                result = failed
            except NotYet:
                metrics.SYNCS.labels(name, "not-yet").inc()
                raise  # tried again shortly, not counted against the message
            except Exception:
                metrics.SYNCS.labels(name, "error").inc()
                raise
            if isinstance(result, Synced) and _filling(podgang):
                metrics.SYNCS.labels(name, "early").inc()
                return
            await self._report(key, podgang, current, result)
            metrics.SYNCS.labels(name, "synced" if isinstance(result, Synced) else "failed").inc()

    def _synced(self, key: ObjectKey, podgang: PodGang, version: str) -> bool:
        """Synced at its generation: as the store shows it (at ``version``), or as this
        backend's last condition write the store does not show yet says."""
        if podgang.holds_now(labels.BACKEND_SYNCED):
            return True
        said = self.said.unshown(key, version)
        return (
            said is not None
            and said.status == "True"
            and said.observed_generation == podgang.metadata.generation
        )

    async def _as_desired(self, podgang: PodGang, mirrored: Sequence[ObjectRecord]) -> bool:
        """Whether backend resources as mirrored are what the backend wants them to be, for a
        PodGang synced at its generation: then nothing is to be done, read or written. Found
        from the store alone (the PodGang, its PodCliqueSet and the pure
        :meth:`Backend.resources`); any doubt answers False and the backend syncs as usual,
        reading the API. A mirror behind the cluster is followed by a newer record."""
        if any(r.deleted for r in mirrored):
            return False
        meta = podgang.metadata
        try:
            pcs = await self.ctx.podcliqueset(meta.namespace, podcliqueset_of(meta))
            desired = self.backend.resources(podgang, pcs)
        except Exception:  # any doubt: the backend's own sync decides
            return False
        return all(_one_as_desired(desired, r) for r in mirrored)

    async def _journaled(self, podgang: PodGang) -> None:
        """A PodGang synced at its generation has its BackendSynced entry: one lost to a
        crash between the condition write and the journal is made up for here."""
        created = podgang.metadata.creation_timestamp
        name = podgang.metadata.name
        if created and self.journal.missing(BackendSynced, _workload(podgang), name):
            event = BackendSynced(resources=[], **self._common(podgang))
            await self.journal.ensure(event, datetime.fromisoformat(created), _step_id(podgang))

    def _common(self, podgang: PodGang) -> dict[str, Any]:
        """The fields every journal entry about ``podgang`` carries."""
        return {
            "workload": _workload(podgang),
            "at": datetime.now(UTC),
            "service": self.durable,
            "trace_id": tracing.trace_id_hex(),
            "podgang": podgang.metadata.name,
            "backend": self.backend.name,
        }

    async def _report(
        self,
        key: ObjectKey,
        podgang: PodGang,
        current: dict[str, Any],
        result: Synced | SyncFailed,
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
        written = await set_podgang_condition(self.ctx.kube, current, condition)
        if written is None:
            if isinstance(result, Synced):  # written before: its entry too, unless a crash
                await self._journaled(podgang)
            return
        self.said.remember(key, written["metadata"]["resourceVersion"], condition)
        common = self._common(podgang)
        event: JournalEvent
        meta = podgang.metadata
        if isinstance(result, Synced):
            event = BackendSynced(resources=result.resources, **common)
            # One line per PodGang synced (its condition written), with the trace to follow.
            log.info(
                "%s/%s: synced: %s (trace %s)",
                meta.namespace,
                meta.name,
                ", ".join(result.resources) or "nothing to write",
                common["trace_id"] or "-",
            )
        else:
            event = BackendSyncFailed(reason=result.reason, message=result.message, **common)
            log.warning("%s/%s: %s: %s", meta.namespace, meta.name, result.reason, result.message)
        # Stored before the message that brought this sync is acknowledged: the step is
        # often a PodGang's last change, and a crash with the entry still buffered left no
        # later message to make it up for.
        await self.journal.store(event, _step_id(podgang) if isinstance(result, Synced) else "")
