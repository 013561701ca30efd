"""A third-party backend through the kit, against the real apiserver and NATS: PodGangs get
its condition, failures are retried or dead-lettered, requests are answered."""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial
from typing import Any

import msgspec
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient
from nats.errors import Error as NatsError
from prometheus_client import REGISTRY

from gangway_backendkit import metrics
from gangway_backendkit.context import BackendContext
from gangway_backendkit.protocol import Synced
from gangway_backendkit.run import serve
from gangway_backendkit.settings import BackendSettings
from gangway_contracts import labels
from gangway_contracts.codec import from_object, to_json
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.rpc import PodsPrepared, PreparePodsRequest, ValidateReply, ValidateRequest
from gangway_contracts.subjects import (
    BackendOperation,
    Kind,
    ObjectKey,
    Subjects,
)
from gangway_runtime import tasks
from tests.integration.watcher.conftest import podcliqueset, podgang
from tests.support.backends import backend_synced, live, running_backend
from tests.support.kube import kube_of, merge_patch, resource_path, server_side_apply
from tests.support.store import dead_letters, eventually, until_ready
from tests.support.stub_backend import NAME, StubBackend

CONFIG = {"profiles": [{"name": NAME, "external": True}]}


def system(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> contextlib.AbstractAsyncContextManager[StubBackend]:
    return running_backend(api, nc, subjects, namespace, StubBackend(), CONFIG, max_attempts=3)


async def condition(api: ApiClient, namespace: str, name: str) -> dict[str, Any]:
    return backend_synced(await live(api, podgang(namespace, name, NAME), namespace))


async def test_podgangs_get_the_backends_condition(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    async with system(api, nc, subjects, namespace) as backend:
        for name in ("gang-a", "flaky-b", "unsupported-c"):
            await server_side_apply(api, podgang(namespace, name, NAME), namespace)

        synced = await eventually(
            lambda: condition(api, namespace, "gang-a"), lambda c: c.get("status") == "True"
        )
        assert synced["reason"] == "Synced"
        assert synced["observedGeneration"] == synced["generation"]
        # Transient failures are retried until the sync succeeds.
        await eventually(
            lambda: condition(api, namespace, "flaky-b"), lambda c: c.get("status") == "True"
        )
        assert backend.syncs["flaky-b"] == 3, (
            "synced once it worked, not again for its own condition"
        )
        assert metrics.SYNCS.labels(NAME, "error")._value.get() >= 2
        # What the scheduler cannot do is reported, not retried.
        failed = await eventually(lambda: condition(api, namespace, "unsupported-c"), bool)
        assert (failed["status"], failed["reason"]) == ("False", "Unsupported")


async def test_a_podgang_being_filled_is_synced_early_and_said_synced_once_filled(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """Initialized=False at its generation: its pods are being made, and the pod references
    come with the next generation. The backend makes its resources at once but writes
    BackendSynced only for the generation that carries the references: once, not twice."""
    doc = podgang(namespace, "filling-d", NAME)
    doc["metadata"]["labels"][labels.COMPONENT] = labels.COMPONENT_PODGANG
    early = {"backend": NAME, "result": "early"}
    before = REGISTRY.get_sample_value("gangway_backend_syncs_total", early) or 0

    async def synced_early() -> float:
        return REGISTRY.get_sample_value("gangway_backend_syncs_total", early) or 0

    async with system(api, nc, subjects, namespace) as backend:
        made = await server_side_apply(api, doc, namespace)
        path = await resource_path(api, doc, namespace)
        pending = {
            "type": labels.INITIALIZED,
            "status": "False",
            "reason": "PodsPending",
            "message": "pods not all created yet",
            "lastTransitionTime": "2026-11-26T00:00:00Z",
            "observedGeneration": made["metadata"]["generation"],
        }
        status = {"status": {"phase": "Pending", "conditions": [pending]}}
        await merge_patch(api, f"{path}/status", status)
        await eventually(synced_early, lambda n: n > before)
        assert backend.syncs["filling-d"] >= 1, "its resources are made early"
        assert not await condition(api, namespace, "filling-d")

        await merge_patch(api, path, {"spec": {"priorityClassName": "references-filled"}})
        synced = await eventually(
            lambda: condition(api, namespace, "filling-d"), lambda c: c.get("status") == "True"
        )
    filled = made["metadata"]["generation"] + 1
    assert synced["observedGeneration"] == synced["generation"] == filled


async def test_bad_and_hopeless_messages_are_dead_lettered(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    js = nc.jetstream()
    async with system(api, nc, subjects, namespace) as backend:
        junk = subjects.object(ObjectKey(Kind.PODGANG, NAME, namespace, "junk"))
        await js.publish(junk, b"{not json")
        await server_side_apply(api, podgang(namespace, "broken-x", NAME), namespace)
        await server_side_apply(api, podgang(namespace, "gang-after", NAME), namespace)

        # Other keys go on while the bad ones are given up on.
        await eventually(
            lambda: condition(api, namespace, "gang-after"), lambda c: c.get("status") == "True"
        )

        letters = await eventually(
            partial(dead_letters, js, subjects), lambda d: len(d) == 2, within=30
        )
    by_subject = dict(letters)
    assert "malformed record" in by_subject[junk]
    broken = subjects.object(ObjectKey(Kind.PODGANG, NAME, namespace, "broken-x"))
    assert "always fails" in by_subject[broken]
    assert backend.syncs["broken-x"] == 3


async def test_prepare_pods_and_validate_are_answered(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    async with system(api, nc, subjects, namespace):
        gang = from_object(podgang(namespace, "gang-p", NAME), PodGang)
        pods = [{"metadata": {"name": "p-0"}, "spec": {"containers": []}}]
        request = PreparePodsRequest(podgang=gang, pods=pods)
        subject = subjects.backend(NAME, BackendOperation.PREPARE_PODS)
        reply = await nc.request(subject, to_json(request), timeout=5)
        prepared = msgspec.json.decode(reply.data, type=PodsPrepared)
        assert prepared.pods[0]["spec"]["schedulerName"] == NAME

        pcs_doc = podcliqueset(namespace, "rejected")
        pcs_doc["metadata"]["labels"]["stub/reject"] = "yes"
        pcs = from_object(pcs_doc, PodCliqueSet)
        validate = ValidateRequest(operation="CREATE", podcliqueset=pcs)
        subject = subjects.backend(NAME, BackendOperation.VALIDATE)
        answer = msgspec.json.decode(
            (await nc.request(subject, to_json(validate), timeout=5)).data, type=ValidateReply
        )
        assert not answer.allowed
        assert str(answer.errors[0]) == "metadata.labels[stub/reject]: rejected by stub"

        malformed = await nc.request(subject, b"[]", timeout=5)
        assert (malformed.headers or {}).get("Nats-Service-Error-Code") == "400"


async def test_poison_resource_records_are_dead_lettered_and_the_backend_goes_on(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """Well-formed envelopes on the backend's subjects whose object is a list, a string,
    metadata of the wrong shape, or a PodGang without a spec: each dead-lettered at once with
    why (never tried), none stops it."""
    js = nc.jetstream()
    poison = {
        "p-list": [1, 2],
        "p-string": "x",
        "p-meta": {"metadata": {"ownerReferences": 3}},
        # A PodGang that is not one: refused at once, as podgang refuses it, not synced.
        "g-nospec": {"metadata": {"name": "g-nospec"}},
    }
    async with system(api, nc, subjects, namespace) as backend:
        for name, obj in poison.items():
            kind = Kind.PODGANG if name.startswith("g-") else "podgroups.example.com"
            key = ObjectKey(kind, NAME, namespace, name)
            envelope = {
                "kind": key.kind,
                "namespace": namespace,
                "name": name,
                "uid": "u",
                "resourceVersion": "1",
                "observedAt": "2026-11-24T00:00:00Z",
                "object": obj,
            }
            await js.publish(subjects.object(key), msgspec.json.encode(envelope))
        await server_side_apply(api, podgang(namespace, "gang-after", NAME), namespace)
        await eventually(
            lambda: condition(api, namespace, "gang-after"), lambda c: c.get("status") == "True"
        )
        letters = await eventually(
            partial(dead_letters, js, subjects), lambda d: len(d) == len(poison), within=30
        )
    assert all("malformed record" in error for _, error in letters), letters
    assert "g-nospec" not in backend.syncs


class _Slow(StubBackend):
    """Each sync takes a while, as a scheduler API under load does."""

    async def sync_podgang(self, podgang: PodGang, ctx: BackendContext) -> Synced:
        await asyncio.sleep(0.5)
        return await super().sync_podgang(podgang, ctx)


async def test_a_replica_holds_no_message_it_cannot_start(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """Eight slow PodGangs waiting in the stream; two replicas on the same durable consumer,
    one handling slot each. A replica fetches only what it can start, so the consumer never
    has more messages out than the two slots, and both take a share. Before, the first
    fetched several and held them unacknowledged behind its one slot while work waited.
    A message for a key the other replica holds the lease of is the exception: it waits,
    held, for the lease (each such deferral counted), and its slot fetches on."""
    first, second = _Slow(), _Slow()
    settings = BackendSettings(subject_prefix=subjects.prefix, workers=1)
    names = [f"gang-{i}" for i in range(8)]
    for name in names:  # all in the stream before any replica fetches
        await server_side_apply(api, podgang(namespace, name, NAME), namespace)
    out: list[int] = []
    js = nc.jetstream()
    deferred = {"consumer": subjects.backend_service_name(NAME), "result": "deferred"}
    deferred_before = REGISTRY.get_sample_value("gangway_consumer_handled_total", deferred) or 0

    async def watch_outstanding() -> None:
        durable = subjects.backend_service_name(NAME)
        while True:
            with contextlib.suppress(NatsError):
                info = await js.consumer_info(subjects.objects_stream, durable)
                out.append(info.num_ack_pending)
            await asyncio.sleep(0.05)

    async with running_backend(api, nc, subjects, namespace, first, CONFIG, workers=1):
        watching = asyncio.create_task(watch_outstanding())
        ready = asyncio.Event()
        other = asyncio.create_task(serve(second, nc, js, kube_of(api), settings, ready=ready))
        try:
            await until_ready(other, ready, "second replica")
            for name in names:
                await eventually(
                    partial(condition, api, namespace, name), lambda c: c.get("status") == "True"
                )
        finally:
            await tasks.stop(other)
            await tasks.stop(watching)
    waited = (REGISTRY.get_sample_value("gangway_consumer_handled_total", deferred) or 0) - (
        deferred_before
    )
    assert max(out) <= 2 + waited, (out, waited)
    assert sum(second.syncs.values()) >= 2, (first.syncs, second.syncs)
