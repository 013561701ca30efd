"""Pod scheduling gates as the API server enforces them (GA since 1.30)."""

from __future__ import annotations

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.api_client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from gangway_contracts.labels import PODGANG_PENDING_CREATION_GATE

GATE = PODGANG_PENDING_CREATION_GATE


def gated_pod(name: str, gates: list[str]) -> client.V1Pod:
    return client.V1Pod(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="c", image="pause")],
            scheduling_gates=[client.V1PodSchedulingGate(name=g) for g in gates],
        ),
    )


async def test_gate_set_at_creation_then_removed(api: ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    created = await core.create_namespaced_pod(namespace, gated_pod("p", [GATE, "other/gate"]))
    scheduled = next(c for c in created.status.conditions if c.type == "PodScheduled")
    assert (scheduled.status, scheduled.reason) == ("False", "SchedulingGated")

    # Strategic merge patch with $patch: delete drops exactly our gate, keeps the others.
    patched = await core.patch_namespaced_pod(
        "p",
        namespace,
        {"spec": {"schedulingGates": [{"$patch": "delete", "name": GATE}]}},
    )
    assert [g.name for g in patched.spec.scheduling_gates] == ["other/gate"]


async def test_adding_a_gate_later_is_refused(api: ApiClient, namespace: str) -> None:
    core = client.CoreV1Api(api)
    await core.create_namespaced_pod(namespace, gated_pod("p", []))
    with pytest.raises(ApiException) as caught:
        await core.patch_namespaced_pod(
            "p", namespace, {"spec": {"schedulingGates": [{"name": GATE}]}}
        )
    assert caught.value.status == 422
    assert "only deletion is allowed" in str(caught.value.body)


async def test_a_gated_pod_with_a_node_name_is_refused(api: ApiClient, namespace: str) -> None:
    """Why admission refuses a clique podSpec with nodeName: its pods could not be made."""
    pod = gated_pod("p", [GATE])
    pod.spec.node_name = "node-1"
    with pytest.raises(ApiException) as caught:
        await client.CoreV1Api(api).create_namespaced_pod(namespace, pod)
    assert caught.value.status == 422
    assert "spec.nodeName" in str(caught.value.body)
