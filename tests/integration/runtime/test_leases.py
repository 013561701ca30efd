"""Leases on keys, shared by a service's replicas through a real nats-server: one holder at
a time, given back at once, lapsing when the holder stops renewing (it died)."""

from __future__ import annotations

import asyncio

from nats.aio.client import Client as NatsClient

from gangway_contracts.subjects import Subjects
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
