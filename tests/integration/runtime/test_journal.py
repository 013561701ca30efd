"""Journal entries against a real nats-server that goes away: buffered, stored in order once
it is back, each once, never dropped unsaid (they were logged and dropped in a failover)."""

from __future__ import annotations

import asyncio
import contextlib
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from gangway_contracts import events as ev
from gangway_contracts.k8s import NamespacedName
from gangway_contracts.permissions import PODGANG
from gangway_contracts.subjects import Subjects
from gangway_localcluster.nats import NatsServer
from gangway_runtime import bus, journal, tasks
from gangway_runtime.journal import JOURNAL_DROPPED, JournalWriter
from gangway_runtime.settings import ServiceSettings, StreamSettings
from gangway_runtime.streams import ensure_streams
from tests.support.store import eventually


def observed(generation: int) -> ev.PodCliqueSetObserved:
    return ev.PodCliqueSetObserved(
        workload=NamespacedName(namespace="ml", name="trainer"),
        at=datetime(2026, 11, 24, tzinfo=UTC),
        service="test",
        trace_id="",
        generation=generation,
    )


@contextlib.asynccontextmanager
async def writer_on_own_server(
    subjects: Subjects,
) -> AsyncIterator[tuple[NatsServer, JetStreamContext, JournalWriter]]:
    """A running journal writer on a nats-server of its own, which a test may stop."""
    with NatsServer.start() as server:
        settings = ServiceSettings(nats_url=server.url, subject_prefix=subjects.prefix)
        nc = await bus.connect(settings, "journal-under-test")
        js = nc.jetstream()
        await ensure_streams(js, subjects, settings.streams)
        writer = JournalWriter(js, subjects, PODGANG)
        running = asyncio.create_task(writer.run())
        try:
            yield server, js, writer
        finally:
            await tasks.stop(running)
            await nc.close()


async def test_entries_put_while_nats_is_away_are_stored_in_order_once_it_is_back(
    subjects: Subjects,
) -> None:
    async with writer_on_own_server(subjects) as (server, js, writer):
        writer.put(observed(1))
        await eventually(lambda: asyncio.sleep(0, writer.pending), lambda n: n == 0)

        await asyncio.to_thread(server.stop_server)
        for generation in range(2, 7):
            writer.put(observed(generation))
        await asyncio.sleep(2)  # the writer keeps trying meanwhile
        assert writer.pending == 5
        await asyncio.to_thread(server.restart)

        await eventually(lambda: asyncio.sleep(0, writer.pending), lambda n: n == 0)
        stored = await journal.read(js, subjects, "ml", "trainer")
    assert [e.generation for e in stored] == [1, 2, 3, 4, 5, 6]  # type: ignore[union-attr]


async def test_a_full_buffer_drops_its_oldest_entry_and_counts_it(subjects: Subjects) -> None:
    writer = JournalWriter(None, subjects, PODGANG, capacity=2)  # type: ignore[arg-type]  # never run
    before = JOURNAL_DROPPED._value.get()
    for generation in range(1, 4):
        writer.put(observed(generation))
    assert writer.pending == 2
    assert JOURNAL_DROPPED._value.get() == before + 1


def test_a_dropped_entry_is_missing_again_so_ensure_may_make_it_up(subjects: Subjects) -> None:
    writer = JournalWriter(None, subjects, PODGANG, capacity=1)  # type: ignore[arg-type]  # never run
    workload = NamespacedName(namespace="ml", name="trainer")
    writer.put(created("gang-a", datetime(2026, 11, 24, tzinfo=UTC)))
    assert not writer.missing(ev.PodGangCreated, workload, "gang-a")
    writer.put(created("gang-b", datetime(2026, 11, 24, tzinfo=UTC)))  # drops gang-a's
    assert writer.missing(ev.PodGangCreated, workload, "gang-a")
    assert not writer.missing(ev.PodGangCreated, workload, "gang-b")


async def test_a_burst_of_entries_is_stored_whole_and_once(
    nc: NatsClient, subjects: Subjects
) -> None:
    """More entries than are published at once, several on one subject: each stored once."""
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings())
    writer = JournalWriter(js, subjects, PODGANG)
    at = datetime(2026, 11, 24, 12, tzinfo=UTC)
    for n in range(1000):
        writer.put(created(f"gang-{n % 400}", at), once=f"gang-{n}")
    await run_until_stored(writer)

    found = await journal.read(js, subjects, "ml", "trainer")
    assert Counter(e.podgang for e in found if isinstance(e, ev.PodGangCreated)) == {
        f"gang-{g}": len(range(g, 1000, 400)) for g in range(400)
    }


async def test_an_entry_stored_is_waited_for_until_the_stream_holds_it(
    subjects: Subjects,
) -> None:
    """store() returns once the stream holds the entry, not when it is buffered: with the
    server away it waits, and returns once the server is back and the entry stored."""
    async with writer_on_own_server(subjects) as (server, js, writer):
        await asyncio.to_thread(server.stop_server)
        storing = asyncio.create_task(writer.store(observed(1)))
        await asyncio.sleep(2)
        assert not storing.done(), "returned with the entry only buffered"
        await asyncio.to_thread(server.restart)
        await asyncio.wait_for(storing, 60)
        stored = await journal.read(js, subjects, "ml", "trainer")
    assert [e.generation for e in stored] == [1]  # type: ignore[union-attr]


def created(podgang: str, at: datetime) -> ev.PodGangCreated:
    return ev.PodGangCreated(
        workload=NamespacedName(namespace="ml", name="trainer"),
        at=at,
        service="test",
        podgang=podgang,
        backend="default-scheduler",
    )


async def test_a_step_done_but_not_journaled_is_made_up_for_once(
    nc: NatsClient, subjects: Subjects
) -> None:
    """What a crash between a write and its entry loses, ensure() journals when the cluster
    shows the step done; an entry already stored for the object (not for a namesake made
    before it) is left alone, and the store is asked once per subject per process."""
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings())
    earlier = JournalWriter(js, subjects, PODGANG)  # a process that journaled gang-a, then died
    earlier.put(created("gang-a", datetime(2026, 11, 24, 12, 0, 5, tzinfo=UTC)))
    earlier.put(created("gang-c", datetime(2026, 11, 24, 11, 0, tzinfo=UTC)))  # a namesake's
    await run_until_stored(earlier)

    writer = JournalWriter(js, subjects, PODGANG)
    since = datetime(2026, 11, 24, 12, 0, tzinfo=UTC)
    now = datetime(2026, 11, 24, 12, 1, tzinfo=UTC)
    for _ in range(2):
        for gang in ("gang-a", "gang-b", "gang-c"):
            await writer.ensure(created(gang, now), since)
    await run_until_stored(writer)

    found = await journal.read(js, subjects, "ml", "trainer")
    made = Counter(e.podgang for e in found if isinstance(e, ev.PodGangCreated))
    assert made == {"gang-a": 1, "gang-b": 1, "gang-c": 2}


async def run_until_stored(writer: JournalWriter) -> None:
    running = asyncio.create_task(writer.run())
    try:
        await eventually(lambda: asyncio.sleep(0, writer.pending), lambda n: n == 0)
    finally:
        await tasks.stop(running)
