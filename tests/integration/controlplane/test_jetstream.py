"""JetStream on the real nats-server: ack'd consumption, KV by revision, de-duplication."""

from __future__ import annotations

import pytest
from nats.aio.client import Client as NatsClient
from nats.js.api import StreamConfig
from nats.js.errors import KeyWrongLastSequenceError

from gangway_contracts.subjects import MSG_ID_HEADER, Kind, ObjectKey, Subjects


async def test_publish_and_consume_with_ack(nc: NatsClient, subjects: Subjects) -> None:
    js = nc.jetstream()
    await js.add_stream(
        StreamConfig(name=subjects.journal_stream, subjects=[f"{subjects.journal_root}.>"])
    )
    for i in range(3):
        await js.publish(subjects.journal("ns", "pcs", f"E{i}", writer="podgang"), f"{i}".encode())
    sub = await js.pull_subscribe(subjects.journal_filter("ns", "pcs"), durable="reader")
    messages = await sub.fetch(3, timeout=5)
    assert [m.data for m in messages] == [b"0", b"1", b"2"]
    for m in messages[:2]:
        await m.ack()
    await messages[2].nak()  # not acknowledged: delivered again
    again = await sub.fetch(1, timeout=5)
    assert again[0].data == b"2"
    assert again[0].metadata.num_delivered == 2


async def test_dedup_by_message_id_and_one_entry_per_subject(
    nc: NatsClient, subjects: Subjects
) -> None:
    js = nc.jetstream()
    await js.add_stream(
        StreamConfig(
            name=subjects.objects_stream,
            subjects=[f"{subjects.objects_root}.>"],
            max_msgs_per_subject=1,
            duplicate_window=120,
        )
    )
    subject = subjects.object(ObjectKey(Kind.PODGANG, "kai-scheduler", "ns", "gang-0"))
    first = await js.publish(subject, b"v1", headers={MSG_ID_HEADER: "uid:1"})
    double = await js.publish(subject, b"v1", headers={MSG_ID_HEADER: "uid:1"})
    assert double.duplicate
    assert double.seq == first.seq
    await js.publish(subject, b"v2", headers={MSG_ID_HEADER: "uid:2"})
    info = await js.stream_info(subjects.objects_stream)
    assert info.state.messages == 1  # compacted: only the latest state of the object
    last = await js.get_last_msg(subjects.objects_stream, subject)
    assert last.data == b"v2"


async def test_key_value_create_update_delete_by_revision(
    nc: NatsClient, subjects: Subjects
) -> None:
    """What the per-key leases stand on: a create fails while the key is held, and an
    update or delete names the revision it expects."""
    js = nc.jetstream()
    bucket = f"{subjects.objects_stream}_KV"
    kv = await js.create_key_value(bucket=bucket)
    try:
        first = await kv.create("podgang.ns.gang-0", b"a")
        with pytest.raises(KeyWrongLastSequenceError):
            await kv.create("podgang.ns.gang-0", b"b")
        second = await kv.update("podgang.ns.gang-0", b"b", last=first)
        with pytest.raises(KeyWrongLastSequenceError):
            await kv.update("podgang.ns.gang-0", b"c", last=first)
        assert (await kv.get("podgang.ns.gang-0")).value == b"b"
        await kv.delete("podgang.ns.gang-0", last=second)
        assert (await kv.create("podgang.ns.gang-0", b"c")) > second
    finally:
        await js.delete_key_value(bucket)
