"""Leases on keys, shared by a service's replicas through a real nats-server: one holder at
a time, given back at once, lapsing when the holder stops renewing (it died)."""

from __future__ import annotations

import asyncio
import logging

import pytest
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from gangway_contracts.subjects import Subjects
from gangway_runtime import tasks
from gangway_runtime.leases import Leases
from gangway_runtime.settings import ConsumerSettings, StreamSettings


async def test_one_replica_holds_a_key_at_a_time(nc: NatsClient, subjects: Subjects) -> None:
    bucket = subjects.leases_bucket(subjects.service_name("podgang"))
    settings = ConsumerSettings(ack_wait_seconds=2.0, streams=StreamSettings(storage="memory"))
    first, second = (Leases(nc.jetstream(), bucket) for _ in range(2))
    for replica in (first, second):
        await replica.bind(settings)
    key = ("ml", "trainer")
    try:
        assert await first.take(key)
        assert not await second.take(key), "held by the first"
        assert await second.take(("ml", "other")), "other keys are free"
        await first.renew()
        await first.give_back(key)
        assert await second.take(key), "given back: free at once"
        # The second stops renewing, as a killed replica does: its lease lapses.
        await asyncio.sleep(2.5)
        assert await first.take(key)
    finally:
        await nc.jetstream().delete_key_value(bucket)


async def test_a_replica_restarted_under_its_name_takes_its_leases_back_at_once(
    nc: NatsClient, subjects: Subjects, caplog: pytest.LogCaptureFixture
) -> None:
    """A container restarted in its pod keeps the pod's name: the leases its killed
    predecessor held are its own at once, not after their TTL; another replica's are waited
    for, and the wait is said once."""
    bucket = subjects.leases_bucket(subjects.service_name("podgang"))
    settings = ConsumerSettings(ack_wait_seconds=60.0, streams=StreamSettings(storage="memory"))
    killed = Leases(nc.jetstream(), bucket, "podgang-7d9f-abcde")
    restarted = Leases(nc.jetstream(), bucket, "podgang-7d9f-abcde")
    other = Leases(nc.jetstream(), bucket, "podgang-7d9f-fghij")
    for replica in (killed, restarted, other):
        await replica.bind(settings)
    key = ("ml", "trainer")
    try:
        assert await killed.take(key)  # then killed: never given back, never renewed
        caplog.set_level(logging.INFO, logger="gangway_runtime.leases")
        assert not await other.take(key)
        assert not await other.take(key)
        waits = [r for r in caplog.records if "waiting for its lease" in r.getMessage()]
        assert len(waits) == 1
        assert "podgang-7d9f-abcde" in waits[0].getMessage()
        assert await restarted.take(key), "its own lease, from before the restart"
        assert not await other.take(key), "and now held by the restarted replica"
        await restarted.give_back(key)
        assert await other.take(key)
    finally:
        await nc.jetstream().delete_key_value(bucket)


async def test_a_lease_given_back_lingers_then_is_let_go_for_one_write(
    nc: NatsClient, subjects: Subjects
) -> None:
    """A key handled again within the linger costs no bus write; let go after it, the lease
    is free to another replica; and the replica that let it go last takes it again in one
    write."""
    bucket = subjects.leases_bucket(subjects.service_name("podgang"))
    settings = ConsumerSettings(ack_wait_seconds=30.0, streams=StreamSettings(storage="memory"))
    first = Leases(nc.jetstream(), bucket, "podgang-a", linger=0.4)
    second = Leases(nc.jetstream(), bucket, "podgang-b")
    for replica in (first, second):
        await replica.bind(settings)
    writes: list[str] = []

    async def written(msg: Msg) -> None:
        writes.append(msg.subject)

    watching = await nc.subscribe(f"$KV.{bucket}.>", cb=written)
    letting_go = asyncio.create_task(first.run())
    key = ("ml", "trainer")
    try:
        assert await first.take(key)
        await first.give_back(key)
        assert await first.take(key), "lingering: still its own"
        await first.give_back(key)
        await nc.flush()
        assert len(writes) == 1, "the take, nothing for the linger"
        assert not await second.take(key), "held while it lingers"
        await asyncio.sleep(1.0)  # the linger passes: let go
        assert await second.take(key), "let go: free to another replica"
        await second.give_back(key)
        await nc.flush()
        before = len(writes)
        assert await second.take(key), "free again"
        await nc.flush()
        assert len(writes) == before + 1
    finally:
        await tasks.stop(letting_go)
        await watching.unsubscribe()
        await nc.jetstream().delete_key_value(bucket)


async def test_the_lease_freed_by_this_replica_is_taken_again_in_one_write(
    nc: NatsClient, subjects: Subjects
) -> None:
    bucket = subjects.leases_bucket(subjects.service_name("podgang"))
    settings = ConsumerSettings(ack_wait_seconds=30.0, streams=StreamSettings(storage="memory"))
    replica = Leases(nc.jetstream(), bucket, "podgang-a")
    await replica.bind(settings)
    writes: list[str] = []

    async def written(msg: Msg) -> None:
        writes.append(msg.subject)

    watching = await nc.subscribe(f"$KV.{bucket}.>", cb=written)
    key = ("ml", "trainer")
    try:
        for _ in range(3):
            assert await replica.take(key)
            await replica.give_back(key)
        await nc.flush()
        assert len(writes) == 6, "a write to take, a write to let go"
    finally:
        await watching.unsubscribe()
        await nc.jetstream().delete_key_value(bucket)
