"""Reading what the watcher stored, and running a watcher in the test's event loop."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

import msgspec
from kubernetes_asyncio.client.api_client import ApiClient
from nats.js import JetStreamContext

from gangway_contracts.events import event_type
from gangway_contracts.records import ObjectRecord
from gangway_contracts.resources import MirroredResource
from gangway_contracts.subjects import ERROR_HEADER, SOURCE_SUBJECT_HEADER, Subjects
from gangway_runtime import journal as gangway_journal
from gangway_runtime import tasks
from gangway_runtime.objects import last_per_subject
from gangway_runtime.streams import ensure_streams
from gangway_watcher.settings import WatcherSettings
from gangway_watcher.watcher import Watcher
from tests.support.kube import kube_of

T = TypeVar("T")


async def eventually(
    probe: Callable[[], Awaitable[T]], until: Callable[[T], bool], within: float = 60.0
) -> T:
    """Poll ``probe`` until ``until`` holds for its value; fail with the last value seen."""
    deadline = time.monotonic() + within
    while True:
        value = await probe()
        if until(value):
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {within}s; last value: {value!r}")
        await asyncio.sleep(0.1)


Store = dict[tuple[str, str], ObjectRecord]
Key = tuple[str, str]


async def stored(
    js: JetStreamContext, subjects: Subjects, kind: str = "*", namespace: str | None = None
) -> Store:
    """The store's current record per (namespace, name) of a kind, tombstones included."""
    found: Store = {}
    async for msg in last_per_subject(js, subjects.objects_stream, subjects.objects_filter(kind)):
        record = msgspec.json.decode(msg.data, type=ObjectRecord)
        if namespace is None or record.namespace == namespace:
            found[(record.namespace, record.name)] = record
    return found


def holds(key: Key) -> Callable[[Store], bool]:
    return lambda store: key in store


def holds_deleted(key: Key) -> Callable[[Store], bool]:
    return lambda store: key in store and store[key].deleted


def holds_label(key: Key, label: str) -> Callable[[Store], bool]:
    return lambda store: key in store and label in body(store[key])["metadata"]["labels"]


def body(record: ObjectRecord) -> dict[str, Any]:
    decoded: dict[str, Any] = msgspec.json.decode(record.object)
    return decoded


async def until_ready(task: asyncio.Task[None], ready: asyncio.Event, what: str) -> None:
    """Wait until a service running in ``task`` says it is ready; one that died first
    raises why."""
    waiting = asyncio.create_task(ready.wait())
    await asyncio.wait({task, waiting}, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    if task.done():
        task.result()
    assert ready.is_set(), f"{what} not ready after 30s"


@contextlib.asynccontextmanager
async def running_watcher(
    api: ApiClient,
    js: JetStreamContext,
    subjects: Subjects,
    resources: Sequence[MirroredResource],
    **settings: Any,
) -> AsyncIterator[Watcher]:
    """A watcher in this event loop, synced before the test goes on, cancelled after."""
    watcher_settings = WatcherSettings(subject_prefix=subjects.prefix, **settings)
    await ensure_streams(js, subjects, watcher_settings.streams)
    watcher = Watcher(kube_of(api), js, subjects, resources, watcher_settings)
    task = asyncio.create_task(watcher.run())

    async def synced() -> bool:
        if task.done():
            task.result()  # a watcher that died says why
        return watcher.ready()

    try:
        await eventually(synced, bool)
        yield watcher
    finally:
        await tasks.stop(task)


async def dead_letters(js: JetStreamContext, subjects: Subjects) -> list[tuple[str, str]]:
    """(source subject, error) of every dead letter under this test's prefix."""
    info = await js.stream_info(subjects.deadletter_stream)
    found: list[tuple[str, str]] = []
    if not info.state.messages:
        return found
    for seq in range(info.state.first_seq, info.state.last_seq + 1):
        msg = await js.get_msg(subjects.deadletter_stream, seq)
        headers = msg.headers or {}
        found.append((headers[SOURCE_SUBJECT_HEADER], headers[ERROR_HEADER]))
    return found


async def journal(js: JetStreamContext, subjects: Subjects, namespace: str, pcs: str) -> list[str]:
    """The event types journaled for one workload, in order."""
    return [event_type(e) for e in await gangway_journal.read(js, subjects, namespace, pcs)]
