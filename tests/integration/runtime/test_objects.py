"""Reading the object store: the last record of every subject through an ephemeral consumer."""

from __future__ import annotations

from nats.aio.client import Client as NatsClient

from gangway_contracts.subjects import Subjects
from gangway_runtime.objects import last_per_subject
from gangway_runtime.settings import StreamSettings
from gangway_runtime.streams import ensure_streams


async def test_a_scan_whose_consumer_the_server_ended_first_still_ends_cleanly(
    nc: NatsClient, subjects: Subjects
) -> None:
    """On a NATS cluster the server may end the scan's ephemeral consumer before the scan
    deletes it (seen once: the watcher stopped at start over the 404): gone already is as
    good, and every message read is kept."""
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings())
    for name in ("a", "b", "c"):
        await js.publish(f"{subjects.objects_root}.pod._.ns.{name}", b"{}")
    seen = []
    scan = last_per_subject(js, subjects.objects_stream, subjects.objects_filter("pod"))
    async for msg in scan:
        seen.append(msg.subject)
        if len(seen) == 3:
            for consumer in await js.consumers_info(subjects.objects_stream):
                await js.delete_consumer(subjects.objects_stream, consumer.name)
    assert len(seen) == 3
