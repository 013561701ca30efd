"""The watcher: one reflector per mirrored resource, one store, one bounded publisher."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from nats.js import JetStreamContext

from gangway_contracts.resources import MirroredResource
from gangway_contracts.subjects import Subjects
from gangway_runtime.kube import Kube
from gangway_watcher.publisher import Publisher
from gangway_watcher.reflector import Reflector
from gangway_watcher.settings import WatcherSettings
from gangway_watcher.store import ObjectStore


class Watcher:
    def __init__(
        self,
        kube: Kube,
        js: JetStreamContext,
        subjects: Subjects,
        resources: Sequence[MirroredResource],
        settings: WatcherSettings,
    ) -> None:
        self.store = ObjectStore(js, subjects, settings.streams.tombstone_ttl_seconds)
        self.publisher = Publisher(self.store, settings.max_in_flight)
        self.reflectors = [
            Reflector(
                kube,
                self.store,
                self.publisher,
                subjects=subjects,
                resource=resource,
                resync_seconds=settings.resync_seconds,
                watch_timeout_seconds=settings.watch_timeout_seconds,
                page_size=settings.list_page_size,
            )
            for resource in resources
        ]

    def ready(self) -> bool:
        """Every served resource has been listed into the store at least once."""
        return all(r.synced or not r.served for r in self.reflectors)

    def reflector(self, kind: str) -> Reflector:
        return next(r for r in self.reflectors if r.kind == kind)

    async def run(self) -> None:
        try:
            async with asyncio.TaskGroup() as group:
                for reflector in self.reflectors:
                    group.create_task(reflector.run(), name=f"reflect {reflector.kind}")
        finally:
            await self.publisher.close()
