"""One resource type, listed then watched, mirrored into the store: client-go's reflector.

    discover the served version → load what the store holds → LIST → reconcile the store
    → WATCH from the list's resourceVersion (bookmarks keep it fresh) → on 410 Gone, relist;
    on a dropped connection, watch again from the last version; where ``resync_seconds`` is
    set, relist anyway that often.

A watch from a resourceVersion misses nothing the API server keeps, so by default, as
client-go's reflector, it never relists on a timer: a relist holds the kind's changes back
until its last page (95 000 pods: 80 s; bench/RESULTS.md, seventeenth round).

A relist publishes only what differs from the store, and turns every stored object that the
list no longer holds into a tombstone: objects deleted while nobody watched leave no ghosts.
"""

from __future__ import annotations

import asyncio
import logging
import math
import random
import time
from collections.abc import Mapping
from typing import Any

import msgspec
from opentelemetry import trace
from opentelemetry.context import Context

from gangway_contracts import labels
from gangway_contracts.codec import MALFORMED
from gangway_contracts.records import ObjectRecord
from gangway_contracts.resources import MirroredResource
from gangway_contracts.subjects import Kind, Subjects
from gangway_runtime import tracing
from gangway_runtime.kube import ApiResource, Kube, KubeError
from gangway_watcher import metrics
from gangway_watcher.mirror import (
    WatchEvent,
    decode_event,
    decode_list,
    object_key,
    object_record,
    tombstone,
)
from gangway_watcher.publisher import Outgoing, Publisher
from gangway_watcher.store import ObjectStore

log = logging.getLogger(__name__)
tracer = trace.get_tracer("gangway.watcher")

_NOT_SERVED_RETRY = 30.0
_ERROR_BACKOFF_MAX = 30.0


class Gone(Exception):
    """410: the watch's resourceVersion is older than the API server still remembers."""


class Reflector:
    def __init__(
        self,
        kube: Kube,
        store: ObjectStore,
        publisher: Publisher,
        *,
        subjects: Subjects,
        resource: MirroredResource,
        resync_seconds: float | None,
        watch_timeout_seconds: int = 300,
        page_size: int = 500,
    ) -> None:
        self.kube = kube
        self.store = store
        self.publisher = publisher
        self.subjects = subjects
        self.resource = resource
        self.resync_seconds = resync_seconds
        self.watch_timeout_seconds = watch_timeout_seconds
        self.page_size = page_size
        self.api: ApiResource | None = None
        self.resource_version = ""  # where the next watch resumes; "" → list first
        self.synced = False  # the store reflects a full list at least once
        self.served = True  # False while the API server does not serve the resource
        self._loaded = False

    @property
    def kind(self) -> str:
        return self.resource.kind

    async def run(self) -> None:
        self.api = await self._discover()
        if not self._loaded:
            live = await self.store.load(self.kind)
            log.info("%s: store holds %d live objects", self.kind, live)
            self._loaded = True
        reason = "start"
        backoff = 1.0
        while True:
            try:
                if not self.resource_version:
                    await self.relist(reason)
                await self._watch_until(self._resync_deadline())
                reason = "resync"
                self.resource_version = ""
                backoff = 1.0
            except Gone:
                log.info("%s: watch expired (410 Gone); relisting", self.kind)
                reason, self.resource_version = "gone", ""
            except (KubeError, OSError, TimeoutError, msgspec.DecodeError) as exc:
                # A dropped watch resumes from the last version; a failed list starts over.
                log.warning("%s: %s; retrying in %.0fs", self.kind, exc, backoff)
                if not self.resource_version:
                    reason = "error"
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _ERROR_BACKOFF_MAX)

    def _resync_deadline(self) -> float:
        if self.resync_seconds is None:
            return math.inf  # watch on; relist only when the API server says so (410)
        # Jitter spreads the resyncs of many resources (and replicas) over time.
        return time.monotonic() + self.resync_seconds * random.uniform(0.9, 1.1)

    async def _discover(self) -> ApiResource:
        """The first of the resource's versions the API server serves; waits until one is
        (a backend's CRD may be installed after Gangway)."""
        warned = False
        while True:
            for version in self.resource.versions:
                candidate = ApiResource(
                    self.resource.group, version, self.resource.plural, self.resource.namespaced
                )
                try:
                    if await self.kube.serves(candidate):
                        self.served = True
                        log.info("%s: watching %s", self.kind, candidate.api_version)
                        return candidate
                except (KubeError, OSError, TimeoutError) as exc:
                    log.warning("%s: discovery failed: %s", self.kind, exc)
            self.served = False
            if not warned:
                versions = ", ".join(f"{self.resource.group}/{v}" for v in self.resource.versions)
                log.warning("%s: not served (%s); waiting for it", self.kind, versions)
                warned = True
            await asyncio.sleep(_NOT_SERVED_RETRY)

    def _query(self, *extra: tuple[str, str]) -> list[tuple[str, str]]:
        query = list(extra)
        if self.resource.label_selector:
            query.append(("labelSelector", self.resource.label_selector))
        return query

    async def relist(self, reason: str) -> None:
        assert self.api is not None
        metrics.RELISTS.labels(self.kind, reason).inc()
        listed: set[str] = set()
        list_rv, token = "", ""
        while True:
            query = self._query(("limit", str(self.page_size)))
            if token:
                query.append(("continue", token))
            try:
                page = decode_list(await self.kube.request("GET", self.api.path(), query))
            except KubeError as exc:
                if exc.status == 410 and token:  # the continue token expired: start over
                    listed.clear()
                    token = ""
                    continue
                raise
            list_rv = list_rv or page.resource_version
            for obj in page.items:
                metrics.OBSERVED.labels(self.kind, "LISTED").inc()
                listed.add(await self._publish(obj))
            token = page.continue_token
            if not token:
                break
        # Everything stored for this kind that the list does not hold was deleted unseen.
        await self.publisher.flush()
        for subject in self.store.live_subjects(self.kind) - listed:
            last = await self.store.last_record(subject)
            if last is None or last.deleted:
                continue
            metrics.TOMBSTONES_ON_RELIST.labels(self.kind).inc()
            record = tombstone(last, list_rv)
            headers = self._trace_headers(last.uid, _stored_traceparent(last), deleted=True)
            await self.publisher.put(Outgoing(subject, record, headers))
        self.resource_version = list_rv
        self.synced = True
        log.info("%s: listed %d objects at resourceVersion %s", self.kind, len(listed), list_rv)

    async def _watch_until(self, deadline: float) -> None:
        assert self.api is not None
        while (remaining := deadline - time.monotonic()) > 0:
            timeout = max(1, int(min(self.watch_timeout_seconds, remaining)))
            query = self._query(
                ("watch", "true"),
                ("allowWatchBookmarks", "true"),
                ("resourceVersion", self.resource_version),
                ("timeoutSeconds", str(timeout)),
            )
            try:
                async for line in self.kube.lines(self.api.path(), query, timeout + 30):
                    await self._on_event(decode_event(line))
            except KubeError as exc:
                if exc.status == 410:
                    raise Gone from exc
                raise

    async def _on_event(self, event: WatchEvent) -> None:
        metrics.OBSERVED.labels(self.kind, event.type).inc()
        if event.type == "ERROR":
            status: Mapping[str, Any] = event.object
            if status.get("code") == 410:
                raise Gone
            raise KubeError(int(status.get("code") or 0), str(status.get("reason")), str(status))
        rv = str((event.object.get("metadata") or {}).get("resourceVersion", ""))
        if event.type != "BOOKMARK":
            await self._publish(event.object, deleted=event.type == "DELETED")
        if rv:
            self.resource_version = rv

    async def _publish(self, obj: dict[str, Any], deleted: bool = False) -> str:
        key = object_key(self.resource, obj)
        subject = self.subjects.object(key)
        meta = obj.get("metadata") or {}
        if not deleted and self.store.holds(subject, str(meta.get("resourceVersion", ""))):
            return subject  # unchanged since stored (a relist): no record, no span
        record = object_record(self.resource, obj, deleted=deleted)
        headers = self._trace_headers(record.uid, _traceparent(meta), deleted)
        await self.publisher.put(Outgoing(subject, record, headers))
        return subject

    def _trace_headers(self, uid: str, traceparent: str | None, deleted: bool) -> dict[str, str]:
        """A span for this observation, inside the workload's trace, and its context for the
        consumers: objects Gangway made carry the trace in an annotation; a PodCliqueSet's
        trace is derived from its uid."""
        parent: Context | None = tracing.context_from_traceparent(traceparent)
        if parent is None and self.kind == Kind.PODCLIQUESET:
            parent = tracing.workload_context(uid)
        name = f"watcher {'delete' if deleted else 'observe'} {self.kind}"
        headers: dict[str, str] = {}
        with tracer.start_as_current_span(name, context=parent) as span:
            span.set_attribute("k8s.object.uid", uid)
            tracing.inject(headers)
        return headers


class _TracedMeta(msgspec.Struct):
    annotations: dict[str, str] = {}


class _Traced(msgspec.Struct):
    metadata: _TracedMeta = msgspec.field(default_factory=_TracedMeta)


def _stored_traceparent(record: ObjectRecord) -> str | None:
    """The trace a stored object carries; None when it carries none, or when what is stored
    is not an object at all (a relist must go on past it)."""
    try:
        traced = msgspec.json.decode(record.object, type=_Traced)
    except MALFORMED:
        return None
    return traced.metadata.annotations.get(labels.TRACEPARENT_ANNOTATION)


def _traceparent(meta: Mapping[str, Any]) -> str | None:
    annotations = meta.get("annotations") or {}
    value = annotations.get(labels.TRACEPARENT_ANNOTATION)
    return value if isinstance(value, str) else None
