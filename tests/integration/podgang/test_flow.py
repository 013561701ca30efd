"""The podgang service against the real API server and NATS, with the stub backend's process
answering prepare-pods: GREP-375's flow from a PodCliqueSet to pods the scheduler may see."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import msgspec
import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_contracts import labels
from gangway_contracts.subjects import Subjects
from gangway_runtime.kube import Kube
from tests.support.backends import running_backend
from tests.support.kube import server_side_apply
from tests.support.podgang import Podgang, running_podgang, workload
from tests.support.store import eventually
from tests.support.stub_backend import NAME, StubBackend

CONFIG = {"profiles": [{"name": NAME, "external": True, "default": True}]}
GATE = labels.PODGANG_PENDING_CREATION_GATE


@pytest.fixture
async def gangway(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> AsyncIterator[Podgang]:
    async with (
        running_backend(api, nc, subjects, namespace, StubBackend(), CONFIG),
        running_podgang(api, nc, subjects, namespace, CONFIG) as service,
    ):
        yield service


async def objects(api: ApiClient, namespace: str, path: str) -> dict[str, dict[str, Any]]:
    body = await Kube(api).request("GET", path.format(ns=namespace))
    items: list[dict[str, Any]] = msgspec.json.decode(body)["items"]
    return {item["metadata"]["name"]: item for item in items}


async def podgangs(api: ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    return await objects(
        api, namespace, "/apis/scheduler.grove.io/v1alpha1/namespaces/{ns}/podgangs"
    )


async def pods(api: ApiClient, namespace: str) -> dict[str, dict[str, Any]]:
    return await objects(api, namespace, "/api/v1/namespaces/{ns}/pods")


def condition(obj: dict[str, Any], type_: str) -> dict[str, Any]:
    found = [c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == type_]
    return found[0] if found else {}


def gated(pod: dict[str, Any]) -> bool:
    return any(g["name"] == GATE for g in pod["spec"].get("schedulingGates") or [])


async def test_a_podcliqueset_becomes_an_initialized_gang_of_prepared_ungated_pods(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    pcs = workload(namespace, "trainer")
    await server_side_apply(api, pcs, namespace)

    async def converged() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        gangs = await podgangs(api, namespace)
        return gangs.get("trainer-0", {}), await pods(api, namespace)

    gang, found = await eventually(
        converged, lambda r: bool(r[1]) and len(r[1]) == 4 and not any(map(gated, r[1].values()))
    )
    assert sorted(found) == [f"trainer-0-worker-{i}" for i in range(4)]
    assert condition(gang, labels.INITIALIZED)["status"] == "True"
    refs = gang["spec"]["podgroups"][0]["podReferences"]
    assert [r["name"] for r in refs] == sorted(found)
    for pod in found.values():
        assert pod["spec"]["schedulerName"] == NAME  # prepared by the backend
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"]) == ("PodGang", gang["metadata"]["uid"])
