"""Publishing is bounded, ordered per subject, coalescing, and outlasts NATS outages.

The store here is a stand-in that records calls and can be held or made to fail: this tests
the publisher's own scheduling, not NATS (the integration tests do that with a real server).
"""

from __future__ import annotations

import asyncio

import msgspec
import nats.errors
import pytest

from gangway_contracts.records import ObjectRecord
from gangway_watcher import publisher as publisher_module
from gangway_watcher.publisher import Outgoing, Publisher
from gangway_watcher.store import Outcome


class HeldStore:
    def __init__(self, failures: int = 0) -> None:
        self.calls: list[tuple[str, str]] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.failures = failures
        self.active = 0
        self.most_active = 0

    async def put(self, subject: str, record: ObjectRecord, headers: dict[str, str]) -> Outcome:
        self.active += 1
        self.most_active = max(self.most_active, self.active)
        try:
            await self.gate.wait()
            if self.failures:
                self.failures -= 1
                raise nats.errors.TimeoutError
            self.calls.append((subject, record.resource_version))
            return Outcome.STORED
        finally:
            self.active -= 1


def item(subject: str, rv: int) -> Outgoing:
    record = ObjectRecord(
        kind="pod",
        namespace="ns",
        name=subject,
        uid="u",
        resource_version=str(rv),
        observed_at="",
        object=msgspec.Raw(b"{}"),
    )
    return Outgoing(subject, record)


async def test_in_flight_is_bounded_and_put_waits_for_a_slot() -> None:
    store = HeldStore()
    store.gate.clear()
    pub = Publisher(store, max_in_flight=2)
    await pub.put(item("a", 1))
    await pub.put(item("b", 1))
    third = asyncio.create_task(pub.put(item("c", 1)))
    await asyncio.sleep(0.05)
    assert not third.done(), "a third subject waits: the watch is not read further"
    store.gate.set()
    await third
    await pub.flush()
    assert store.most_active == 2
    assert sorted(store.calls) == [("a", "1"), ("b", "1"), ("c", "1")]


async def test_one_subject_is_published_in_order_and_coalesced_to_the_newest() -> None:
    store = HeldStore()
    store.gate.clear()
    pub = Publisher(store, max_in_flight=4)
    for rv in (1, 2, 3, 4):
        await pub.put(item("a", rv))  # 2 and 3 arrive while 1 is in flight
    store.gate.set()
    await pub.flush()
    assert store.calls == [("a", "1"), ("a", "4")]
    assert store.most_active == 1


async def test_nats_unavailable_is_retried_until_stored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(publisher_module, "_BACKOFF_FIRST", 0.001)
    store = HeldStore(failures=5)
    pub = Publisher(store, max_in_flight=1)
    await pub.put(item("a", 1))
    await pub.flush()
    assert store.calls == [("a", "1")]
