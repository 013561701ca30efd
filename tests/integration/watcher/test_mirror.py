"""The watcher mirrors each kind into the store, in order, and relists without ghosts."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import Any

import msgspec
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient
from nats.aio.msg import Msg

from gangway_backend_kai.builtin import KAI_PODGROUPS
from gangway_contracts.codec import from_json
from gangway_contracts.records import ObjectRecord
from gangway_contracts.resources import PODCLIQUESETS, PODGANGS, PODS
from gangway_contracts.subjects import (
    MSG_ID_HEADER,
    TRACEPARENT_HEADER,
    Kind,
    ObjectKey,
    Subjects,
)
from gangway_runtime import tracing
from gangway_runtime.objects import last_record
from gangway_runtime.streams import ensure_streams
from gangway_watcher import metrics
from gangway_watcher.settings import WatcherSettings
from tests.integration.watcher.conftest import (
    kai_podgroup,
    only_this_test,
    pcs_relists,
    pod,
    podcliqueset,
    podgang,
)
from tests.support.kube import delete_object, merge_patch, resource_path, server_side_apply
from tests.support.store import (
    body,
    eventually,
    holds,
    holds_deleted,
    holds_label,
    running_watcher,
    stored,
)

Maker = Callable[[str, str], dict[str, Any]]
KINDS: list[tuple[str, Maker, str]] = [
    (Kind.PODCLIQUESET, podcliqueset, ""),
    (Kind.PODGANG, podgang, "kai-scheduler"),
    (Kind.POD, pod, ""),
    (KAI_PODGROUPS.kind, kai_podgroup, "kai-scheduler"),
]


async def test_create_update_delete_of_each_kind_reach_the_store_in_order(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    js = nc.jetstream()
    seen: list[tuple[str, ObjectRecord, dict[str, str]]] = []

    async def collect(msg: Msg) -> None:
        record = from_json(msg.data, ObjectRecord)
        seen.append((msg.subject, record, dict(msg.headers or {})))

    # Core NATS sees every message as it is published; the store keeps only the last.
    sub = await nc.subscribe(subjects.objects_filter(), cb=collect)
    resources = [only_this_test(r, namespace) for r in (PODCLIQUESETS, PODGANGS, PODS)]
    resources.append(only_this_test(KAI_PODGROUPS, namespace))
    async with running_watcher(api, js, subjects, resources):
        await server_side_apply(api, pod(namespace, "not-ours", managed=False), namespace)
        for kind, make, _ in KINDS:
            doc = make(namespace, f"{kind.split('.')[0]}-a")
            applied = await server_side_apply(api, doc, namespace)
            key = (namespace, applied["metadata"]["name"])
            in_store = partial(stored, js, subjects, kind, namespace)
            # Each step stored before the next: the watcher coalesces changes that arrive
            # while one of the same object is still being published (docs/watcher.md).
            await eventually(in_store, holds(key))
            path = await resource_path(api, doc, namespace)
            await merge_patch(api, path, {"metadata": {"labels": {"step": "updated"}}})
            await eventually(in_store, holds_label(key, "step"))
            await delete_object(api, doc, namespace)
            await eventually(in_store, holds_deleted(key))
    await sub.unsubscribe()

    for kind, _, owner in KINDS:
        mine = [(s, r, h) for s, r, h in seen if r.kind == kind and r.namespace == namespace]
        # A pod's delete is graceful: its deletionTimestamp is one more change before it goes,
        # and may be coalesced with the deletion itself.
        assert len(mine) in ((3, 4) if kind == Kind.POD else (3,)), kind
        assert {s for s, _, _ in mine} == {mine[0][0]}, f"{kind}: one subject for its changes"
        assert subjects.parse_object(mine[0][0]).owner == owner
        created, updated, deleted = mine[0][1], mine[1][1], mine[-1][1]
        assert not created.deleted
        assert not updated.deleted
        assert deleted.deleted
        assert "step" not in body(created)["metadata"]["labels"]
        assert body(updated)["metadata"]["labels"]["step"] == "updated"
        # The tombstone still says what was deleted: its labels, its owner.
        assert body(deleted)["metadata"]["labels"]["step"] == "updated"
        versions = [int(r.resource_version) for _, r, _ in mine]
        assert versions == sorted(versions)
        assert len(set(versions)) == len(versions)
        for _, record, headers in mine:
            assert "managedFields" not in body(record)["metadata"]
            assert headers[MSG_ID_HEADER].startswith(f"{record.uid}:{record.resource_version}")
            assert headers[TRACEPARENT_HEADER]
    assert not [r for _, r, _ in seen if r.name == "not-ours"], "unmanaged pods are not mirrored"

    # Every observation of a PodCliqueSet lands in the trace its uid names.
    pcs = [(r, h) for _, r, h in seen if r.kind == Kind.PODCLIQUESET]
    expected = tracing.trace_id_hex(tracing.workload_context(pcs[0][0].uid))
    for _, headers in pcs:
        context = tracing.context_from_headers(headers)
        assert tracing.trace_id_hex(context) == expected


async def test_relist_turns_objects_deleted_unseen_into_tombstones(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    js = nc.jetstream()
    resources = [only_this_test(PODCLIQUESETS, namespace)]
    for name in ("kept", "removed"):
        await server_side_apply(api, podcliqueset(namespace, name), namespace)
    async with running_watcher(api, js, subjects, resources):
        first = await eventually(
            lambda: stored(js, subjects, "*", namespace), lambda r: len(r) == 2
        )

    # Nobody watches while one is deleted and another created.
    await delete_object(api, podcliqueset(namespace, "removed"), namespace)
    await server_side_apply(api, podcliqueset(namespace, "new"), namespace)
    before = metrics.TOMBSTONES_ON_RELIST.labels(Kind.PODCLIQUESET)._value.get()

    async with running_watcher(api, js, subjects, resources):
        after = await eventually(
            lambda: stored(js, subjects, "*", namespace),
            lambda r: len(r) == 3 and r[(namespace, "removed")].deleted,
        )
    assert not after[(namespace, "kept")].deleted
    assert not after[(namespace, "new")].deleted
    tomb = after[(namespace, "removed")]
    assert body(tomb)["metadata"]["name"] == "removed"
    assert int(tomb.resource_version) > int(first[(namespace, "removed")].resource_version)
    # Unchanged objects are not published again by the relist.
    assert after[(namespace, "kept")].observed_at == first[(namespace, "kept")].observed_at
    assert metrics.TOMBSTONES_ON_RELIST.labels(Kind.PODCLIQUESET)._value.get() == before + 1


async def test_relist_goes_on_past_stored_messages_that_are_not_records(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """Messages on PodCliqueSet subjects of objects the cluster does not hold — not JSON, an
    envelope whose object is a list — are what a relist would turn into tombstones; it read
    them as records and the watcher died at every start. Now it goes past them and mirrors
    what the cluster holds."""
    js = nc.jetstream()
    await ensure_streams(js, subjects, WatcherSettings().streams)
    envelope = {"kind": "PodCliqueSet", "namespace": namespace, "uid": "u", "resourceVersion": "1"}
    listed = {**envelope, "name": "p-list", "observedAt": "", "object": [1]}
    poison = {"p-bytes": b"\xff not json", "p-list": msgspec.json.encode(listed)}
    for name, data in poison.items():
        key = ObjectKey(Kind.PODCLIQUESET, "", namespace, name)
        await js.publish(subjects.object(key), data)
    await server_side_apply(api, podcliqueset(namespace, "new"), namespace)
    resources = [only_this_test(PODCLIQUESETS, namespace)]
    async with running_watcher(api, js, subjects, resources):
        new = ObjectKey(Kind.PODCLIQUESET, "", namespace, "new")
        found = await eventually(partial(last_record, js, subjects, subjects.object(new)), bool)
        assert found is not None
        assert not found.deleted


async def test_relists_on_a_timer_only_where_a_period_is_set(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """A watch misses nothing the API server keeps, and a relist stops the kind's mirroring
    until its last page: by default the watcher relists only when it must (start, 410, a
    failed list); with ``GANGWAY_RESYNC_SECONDS`` set, that often."""
    js = nc.jetstream()
    resources = [only_this_test(PODCLIQUESETS, namespace)]
    await server_side_apply(api, podcliqueset(namespace, "a"), namespace)

    async def resyncs() -> float:
        return pcs_relists("resync")

    before = await resyncs()
    async with running_watcher(api, js, subjects, resources):
        await asyncio.sleep(3)  # three of the periods below: no relist
        assert await resyncs() == before
    async with running_watcher(api, js, subjects, resources, resync_seconds=1):
        await eventually(resyncs, lambda n: n >= before + 2)
