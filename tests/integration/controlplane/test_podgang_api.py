"""PodGangs on the real API server: CRUD, watch, status subresource, 410 Gone, GC cascade."""

from __future__ import annotations

import asyncio
from typing import Any

import msgspec
import pytest
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.api_client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException
from msgspec.structs import replace
from prometheus_client import REGISTRY

from gangway_contracts.codec import from_object
from gangway_contracts.grove import PODGANG_PLURAL, SCHEDULER_GROUP, SCHEDULER_VERSION, PodGang
from gangway_contracts.k8s import Condition
from gangway_contracts.labels import BACKEND_SYNCED, INITIALIZED, LAST_TRUE, READY, SCHEDULED
from gangway_runtime.status import PODGANGS, set_podgang_condition
from tests.support.kube import kube_of, merge_patch
from tests.support.manifests import fixture


def podgang_path(namespace: str, name: str) -> str:
    return (
        f"/apis/{SCHEDULER_GROUP}/{SCHEDULER_VERSION}/namespaces/{namespace}/"
        f"{PODGANG_PLURAL}/{name}"
    )


def podgang_manifest(namespace: str, name: str = "gang-0") -> dict[str, Any]:
    manifest = fixture("podgangs/base-gang.yaml")
    manifest["metadata"] = {"name": name, "namespace": namespace, "labels": {"test": "yes"}}
    del manifest["status"]
    for group in manifest["spec"]["podgroups"]:
        group["podReferences"] = []  # created early, pods referenced later (GREP-375)
    return manifest


async def test_create_get_list_patch_and_status(api: ApiClient, namespace: str) -> None:
    custom = client.CustomObjectsApi(api)
    args = (SCHEDULER_GROUP, SCHEDULER_VERSION, namespace, PODGANG_PLURAL)
    created = await custom.create_namespaced_custom_object(*args, podgang_manifest(namespace))
    assert from_object(created, PodGang).metadata.generation == 1

    got = from_object(await custom.get_namespaced_custom_object(*args, "gang-0"), PodGang)
    assert got.spec.podgroups[0].name == "llama-disagg-0-router"
    listed = await custom.list_namespaced_custom_object(*args, label_selector="test=yes")
    assert [i["metadata"]["name"] for i in listed["items"]] == ["gang-0"]

    ref = [{"namespace": namespace, "name": "llama-disagg-0-router-0"}]
    # A merge patch replaces the whole list: podgroups becomes this one entry.
    patch = {
        "spec": {
            "podgroups": [{"name": "llama-disagg-0-router", "minReplicas": 1, "podReferences": ref}]
        }
    }
    patched = await merge_patch(api, podgang_path(namespace, "gang-0"), patch)
    assert patched["metadata"]["generation"] == 2

    condition = {
        "type": "Initialized",
        "status": "False",
        "reason": "PodsPending",
        "message": "waiting for pods",
        "lastTransitionTime": "2026-11-22T10:00:00Z",
    }
    status = await merge_patch(
        api,
        podgang_path(namespace, "gang-0") + "/status",
        {"status": {"phase": "Pending", "conditions": [condition]}},
    )
    view = from_object(status, PodGang)
    assert view.status is not None
    assert view.status.conditions[0].reason == "PodsPending"
    assert view.metadata.generation == 2  # status writes never bump the generation

    # The main resource ignores status, the status subresource ignores spec.
    await merge_patch(api, podgang_path(namespace, "gang-0"), {"status": {"phase": "Running"}})
    again = await custom.get_namespaced_custom_object(*args, "gang-0")
    assert again["status"]["phase"] == "Pending"


async def test_schema_rejects_an_invalid_podgang(api: ApiClient, namespace: str) -> None:
    custom = client.CustomObjectsApi(api)
    bad = podgang_manifest(namespace)
    del bad["spec"]["podgroups"][0]["minReplicas"]
    with pytest.raises(ApiException) as caught:
        await custom.create_namespaced_custom_object(
            SCHEDULER_GROUP, SCHEDULER_VERSION, namespace, PODGANG_PLURAL, bad
        )
    assert caught.value.status == 422
    assert "spec.podgroups[0].minReplicas: Required value" in str(caught.value.body)


async def test_watch_sees_changes_in_order(api: ApiClient, namespace: str) -> None:
    custom = client.CustomObjectsApi(api)
    args = (SCHEDULER_GROUP, SCHEDULER_VERSION, namespace, PODGANG_PLURAL)
    listed = await custom.list_namespaced_custom_object(*args)
    start = listed["metadata"]["resourceVersion"]

    async def change() -> None:
        await custom.create_namespaced_custom_object(*args, podgang_manifest(namespace))
        await merge_patch(
            api, podgang_path(namespace, "gang-0"), {"metadata": {"labels": {"step": "2"}}}
        )
        await custom.delete_namespaced_custom_object(*args, "gang-0")

    seen: list[str] = []
    writer = asyncio.create_task(change())
    async with watch.Watch() as w:
        async for event in w.stream(
            custom.list_namespaced_custom_object,
            *args,
            resource_version=start,
            timeout_seconds=20,
        ):
            seen.append(event["type"])
            if event["type"] == "DELETED":
                break
    await writer
    assert seen == ["ADDED", "MODIFIED", "DELETED"]


async def test_watch_from_a_compacted_resource_version_is_gone(
    api: ApiClient, namespace: str
) -> None:
    custom = client.CustomObjectsApi(api)
    args = (SCHEDULER_GROUP, SCHEDULER_VERSION, namespace, PODGANG_PLURAL)
    await custom.create_namespaced_custom_object(*args, podgang_manifest(namespace))

    async def watch_from_the_start() -> None:
        async with watch.Watch() as w:
            async for _ in w.stream(
                custom.list_namespaced_custom_object,
                *args,
                resource_version="1",
                timeout_seconds=10,
            ):
                pass

    with pytest.raises(ApiException) as caught:
        await watch_from_the_start()
    assert caught.value.status == 410


async def test_pods_owned_by_a_podgang_are_garbage_collected(
    api: ApiClient, namespace: str
) -> None:
    custom = client.CustomObjectsApi(api)
    core = client.CoreV1Api(api)
    args = (SCHEDULER_GROUP, SCHEDULER_VERSION, namespace, PODGANG_PLURAL)
    gang = await custom.create_namespaced_custom_object(*args, podgang_manifest(namespace))
    owner = client.V1OwnerReference(
        api_version=f"{SCHEDULER_GROUP}/{SCHEDULER_VERSION}",
        kind="PodGang",
        name="gang-0",
        uid=gang["metadata"]["uid"],
        controller=True,
        block_owner_deletion=True,
    )
    await core.create_namespaced_pod(
        namespace,
        client.V1Pod(
            metadata=client.V1ObjectMeta(name="member-0", owner_references=[owner]),
            spec=client.V1PodSpec(containers=[client.V1Container(name="c", image="pause")]),
        ),
    )
    await custom.delete_namespaced_custom_object(*args, "gang-0")
    for _ in range(300):
        pods = await core.list_namespaced_pod(namespace)
        if not pods.items:
            return
        await asyncio.sleep(0.2)
    pytest.fail("the garbage collector did not delete the PodGang's pod within 60s")


def gets_of_podgang_status() -> float:
    """Reads of PodGang status this process made (the API request metric)."""
    value = REGISTRY.get_sample_value(
        "gangway_api_requests_total",
        {"method": "GET", "resource": f"{PODGANG_PLURAL}.{SCHEDULER_GROUP}/status", "code": "200"},
    )
    return value or 0.0


def flipped(type_: str, status: bool) -> Condition:
    return Condition(
        type=type_,
        status="True" if status else "False",
        reason="Flipped",
        message=f"{type_} is {status}",
        last_transition_time="2026-11-25T10:00:00Z",
    )


async def test_writers_of_different_conditions_never_collide(
    api: ApiClient, namespace: str
) -> None:
    """#22: podgang's conditions and the backend's, each written from a view that does not
    know the other's latest write, land without a conflict or a read."""
    kube = kube_of(api)
    created = msgspec.json.decode(
        await kube.request("POST", PODGANGS.path(namespace), body=podgang_manifest(namespace))
    )
    first = await set_podgang_condition(kube, created, flipped(INITIALIZED, False))
    assert first is not None
    second = await set_podgang_condition(kube, first, flipped(BACKEND_SYNCED, False))
    assert second is not None
    reads = gets_of_podgang_status()
    # Both written from `second`, stale after the first of them: each replaces its own entry.
    assert await set_podgang_condition(kube, second, flipped(INITIALIZED, True)) is not None
    assert await set_podgang_condition(kube, second, flipped(BACKEND_SYNCED, True)) is not None
    assert gets_of_podgang_status() == reads
    # An append from that stale view: its test (the list as seen) fails, the status is read
    # once, and the write goes through.
    scheduled = flipped(SCHEDULED, True)
    assert await set_podgang_condition(kube, second, scheduled, phase="Running") is not None
    assert gets_of_podgang_status() == reads + 1
    live = from_object(
        await client.CustomObjectsApi(api).get_namespaced_custom_object(
            SCHEDULER_GROUP, SCHEDULER_VERSION, namespace, PODGANG_PLURAL, "gang-0"
        ),
        PodGang,
    )
    assert live.status is not None
    assert live.status.phase == "Running"
    assert {c.type: c.status for c in live.status.conditions} == {
        INITIALIZED: "True",
        BACKEND_SYNCED: "True",
        SCHEDULED: "True",
    }


async def test_a_placeholder_makes_the_backends_first_write_a_replacement(
    api: ApiClient, namespace: str
) -> None:
    """#22: podgang's first status write holds BackendSynced (Unknown): the backend's write
    from that view and Initialized turning True from the same view both land, no read."""
    kube = kube_of(api)
    created = msgspec.json.decode(
        await kube.request("POST", PODGANGS.path(namespace), body=podgang_manifest(namespace))
    )
    unknown = replace(flipped(BACKEND_SYNCED, False), status="Unknown", reason="Pending")
    first = await set_podgang_condition(
        kube, created, flipped(INITIALIZED, False), placeholders=[unknown]
    )
    assert first is not None
    assert [c["type"] for c in first["status"]["conditions"]] == [INITIALIZED, BACKEND_SYNCED]
    reads = gets_of_podgang_status()
    assert await set_podgang_condition(kube, first, flipped(INITIALIZED, True)) is not None
    assert await set_podgang_condition(kube, first, flipped(BACKEND_SYNCED, True)) is not None
    assert gets_of_podgang_status() == reads
    live = await kube.request("GET", PODGANGS.path(namespace, "gang-0", "status"))
    statuses = [(c["type"], c["status"]) for c in msgspec.json.decode(live)["status"]["conditions"]]
    assert statuses == [(INITIALIZED, "True"), (BACKEND_SYNCED, "True")]


async def test_last_scheduled_and_last_ready_say_when_each_last_became_true(
    api: ApiClient, namespace: str
) -> None:
    """Grove #792: Scheduled and Ready written together; lastScheduled and lastReady set when
    each turns True, kept when it turns False, moved when it turns True again."""
    kube = kube_of(api)
    created = msgspec.json.decode(
        await kube.request("POST", PODGANGS.path(namespace), body=podgang_manifest(namespace))
    )

    async def placed(current: dict[str, Any], scheduled: bool, ready: bool, at: str) -> Any:
        conditions = [
            replace(flipped(t, s), last_transition_time=at)
            for t, s in ((SCHEDULED, scheduled), (READY, ready))
        ]
        written = await set_podgang_condition(
            kube,
            current,
            conditions[0],
            phase="Running",
            also=conditions[1:],
            last_true=LAST_TRUE,
        )
        assert written is not None
        return written

    first = await placed(created, False, False, "2026-11-28T10:00:00Z")
    assert "lastScheduled" not in first["status"]
    second = await placed(first, True, False, "2026-11-28T10:01:00Z")
    assert second["status"]["lastScheduled"] == "2026-11-28T10:01:00Z"
    assert "lastReady" not in second["status"]
    third = await placed(second, True, True, "2026-11-28T10:02:00Z")
    assert third["status"]["lastScheduled"] == "2026-11-28T10:01:00Z"
    assert third["status"]["lastReady"] == "2026-11-28T10:02:00Z"
    fourth = await placed(third, True, False, "2026-11-28T10:03:00Z")
    assert fourth["status"]["lastReady"] == "2026-11-28T10:02:00Z"  # kept when it regresses
    fifth = await placed(fourth, True, True, "2026-11-28T10:04:00Z")
    assert fifth["status"]["lastReady"] == "2026-11-28T10:04:00Z"
    assert (
        await set_podgang_condition(
            kube,
            fifth,
            replace(flipped(SCHEDULED, True), last_transition_time="x"),
            phase="Running",
            last_true=LAST_TRUE,
        )
        is None
    ), "nothing changed: no write, not even of a stamp"
