"""The consumer kit against a real nats-server: long handlings kept alive and never handed
to a second replica, one key at one replica at a time, transient failures retried past the
attempt limit while others go to dead letter, keys taken up with no message at all, and a
message alone taken with one pull request, several with two."""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from functools import partial

from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg
from nats.js.api import ConsumerConfig
from prometheus_client import REGISTRY

from gangway_contracts.durables import Durable
from gangway_contracts.subjects import ObjectKey, Subjects
from gangway_runtime import tasks
from gangway_runtime.consumer import Consumer, Route, Transient, fetch_ready
from gangway_runtime.settings import ConsumerSettings, StreamSettings
from gangway_runtime.streams import ensure_streams
from tests.support.store import dead_letters, eventually


class Recorder:
    """Handles keys by name: "slow…" takes 3 s, "flaky…" fails transiently 4 times,
    "broken…" always fails; counts handlings and how many run at once per key."""

    def __init__(self, resync: Iterable[str] = (), running: Counter[str] | None = None) -> None:
        self.handled: Counter[str] = Counter()
        # Shared by replicas under test: a key handled by two at once shows here.
        self.running: Counter[str] = Counter() if running is None else running
        self.overlapped = False
        self.resync = list(resync)

    def route(self, msg: Msg) -> Route[str]:
        return Route(msg.subject.rsplit(".", 1)[-1])

    async def handle(self, key: str, msgs: Sequence[Msg]) -> None:
        self.running[key] += 1
        self.overlapped |= self.running[key] > 1
        try:
            self.handled[key] += 1
            if key.startswith("slow"):
                await asyncio.sleep(3)
            if key.startswith("flaky") and self.handled[key] <= 4:
                raise Transient("not answering yet")
            if key.startswith("broken"):
                raise RuntimeError("always fails")
        finally:
            self.running[key] -= 1

    async def keys(self) -> AsyncIterator[str]:
        for key in self.resync:
            yield key


@asynccontextmanager
async def consuming(
    nc: NatsClient, subjects: Subjects, handler: Recorder, workers: int = 8
) -> AsyncIterator[None]:
    settings = ConsumerSettings(
        subject_prefix=subjects.prefix,
        workers=workers,
        ack_wait_seconds=1.5,
        max_attempts=2,
        streams=StreamSettings(storage="memory"),
    )
    consumer = Consumer(
        nc.jetstream(),
        subjects,
        handler,
        settings,
        Durable(subjects.service_name("test"), (subjects.objects_filter(),)),
    )
    await consumer.subscribe()
    running = asyncio.create_task(consumer.run())
    try:
        yield
    finally:
        await tasks.stop(running)


async def publish(nc: NatsClient, subjects: Subjects, *names: str) -> None:
    for name in names:
        await nc.jetstream().publish(subjects.object(ObjectKey("pod", "", "ns", name)), b"{}")


async def test_replicas_keep_a_long_handling_alive_and_never_share_a_key(
    nc: NatsClient, subjects: Subjects
) -> None:
    """One worker each: while the first replica handles "slow-a" (past the ack deadline),
    only the second fetches, so the next message about it reaches the second, which must
    wait for the first to finish."""
    await ensure_streams(nc.jetstream(), subjects, StreamSettings(storage="memory"))
    first = Recorder()
    second = Recorder(running=first.running)
    both = lambda: asyncio.sleep(0, first.handled + second.handled)  # noqa: E731
    async with consuming(nc, subjects, first, 1), consuming(nc, subjects, second, 1):
        await publish(nc, subjects, "slow-a")
        await eventually(lambda: asyncio.sleep(0, first.running), lambda r: r["slow-a"] == 1)
        await publish(nc, subjects, "slow-a")
        await eventually(both, lambda h: h["slow-a"] >= 2, within=30)
        await asyncio.sleep(2)  # past the ack deadline: nothing handed out again
        handled = first.handled + second.handled
    assert handled == {"slow-a": 2}, "each message once: kept alive, never redelivered"
    assert not first.overlapped
    assert not second.overlapped


async def test_transient_failures_retry_on_others_go_to_dead_letter(
    nc: NatsClient, subjects: Subjects
) -> None:
    await ensure_streams(nc.jetstream(), subjects, StreamSettings(storage="memory"))
    handler = Recorder(resync=["resynced"])
    async with consuming(nc, subjects, handler):
        await publish(nc, subjects, "flaky-x", "broken-y")
        await eventually(
            lambda: asyncio.sleep(0, handler.handled),
            lambda h: h["flaky-x"] == 5 and h["resynced"] == 1,
            within=30,
        )
        letters = await eventually(
            partial(dead_letters, nc.jetstream(), subjects), lambda d: len(d) == 1
        )
    # Transient: past max_attempts (2) until it worked; not dead-lettered.
    assert handler.handled["broken-y"] == 2
    [(subject, error)] = letters
    assert subject.endswith(".broken-y")
    assert error == "RuntimeError: always fails"


async def test_the_backlog_is_counted_from_the_servers_consumer(
    nc: NatsClient, subjects: Subjects
) -> None:
    """One worker on five slow keys: the messages not yet delivered show as pending, then
    none once all are handled."""
    await ensure_streams(nc.jetstream(), subjects, StreamSettings(storage="memory"))
    handler = Recorder()
    labels = {"consumer": subjects.service_name("test")}

    async def counted() -> float:
        return REGISTRY.get_sample_value("gangway_consumer_pending_messages", labels) or 0.0

    async with consuming(nc, subjects, handler, workers=1):
        await publish(nc, subjects, *[f"slow-{i}" for i in range(5)])
        await eventually(counted, lambda pending: pending >= 2)
        await eventually(lambda: asyncio.sleep(0, handler.handled), lambda h: len(h) == 5)
        await eventually(counted, lambda pending: pending == 0)


async def test_a_message_alone_is_taken_with_one_pull_request(
    nc: NatsClient, subjects: Subjects
) -> None:
    """A second pull for more than the server holds stays open until it expires (every
    lone message then waited for it): fetch_ready asks again only for what the first
    message says is pending."""
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings(storage="memory"))
    durable = subjects.service_name("pulls")
    await js.add_consumer(subjects.objects_stream, ConsumerConfig(durable_name=durable))
    sub = await js.pull_subscribe_bind(durable=durable, stream=subjects.objects_stream)
    pulls: list[Msg] = []

    async def pulled(msg: Msg) -> None:
        pulls.append(msg)

    counting = await nc.subscribe(
        f"$JS.API.CONSUMER.MSG.NEXT.{subjects.objects_stream}.{durable}", cb=pulled
    )
    try:
        await publish(nc, subjects, "alone")
        alone = await fetch_ready(sub, 16, wait=5)
        await nc.flush()
        after_alone = len(pulls)
        await publish(nc, subjects, "a", "b", "c")
        several = await fetch_ready(sub, 16, wait=5)
        await nc.flush()
    finally:
        await counting.unsubscribe()
    assert [m.subject.rsplit(".", 1)[-1] for m in alone] == ["alone"]
    assert after_alone == 1
    assert [m.subject.rsplit(".", 1)[-1] for m in several] == ["a", "b", "c"]
    assert len(pulls) == 3, "the first message, then the two it said were pending"
