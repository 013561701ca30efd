"""backend-kai against the real API server with KAI's real CRDs: the PodGroup it keeps (the
CRD schema validates it), drift repair, what KAI manages kept, cleanup, and its endpoints."""

from __future__ import annotations

import secrets
from functools import partial
from typing import Any

import msgspec
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_backend_kai.backend import KaiBackend
from gangway_backend_kai.translate import PODGROUPS, SKIP_PODGROUPER, TOPOLOGIES, kai_topology
from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import Change, ensure
from gangway_contracts.codec import from_object, to_json
from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet
from gangway_contracts.records import ObjectRecord
from gangway_contracts.rpc import ValidateReply, ValidateRequest
from gangway_contracts.subjects import BackendOperation, Subjects
from tests.support.backends import backend_synced, live, running_backend
from tests.support.kai import QUEUE, inference_manifests
from tests.support.kube import kube_of, merge_patch, resource_path, server_side_apply
from tests.support.store import eventually

CONFIG = {"profiles": [{"name": "kai-scheduler", "default": True}]}


def podgroup_of(gang: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": PODGROUPS.api_version,
        "kind": "PodGroup",
        "metadata": {"name": gang["metadata"]["name"]},
    }


EXPECTED_SPEC = {
    "minMember": 5,
    "queue": QUEUE,
    "priorityClassName": "inference-high",
    "topologyConstraint": {
        "topology": "datacenter",
        "preferredTopologyLevel": "topology.kubernetes.io/zone",
    },
    "subGroups": [
        {"name": "llama-disagg-0-router", "minMember": 2},
        {
            "name": "llama-disagg-0-prefill-0-pleader",
            "minMember": 1,
            "parent": "llama-disagg-0-prefill-0",
        },
        {
            "name": "llama-disagg-0-prefill-0-pworker",
            "minMember": 2,
            "parent": "llama-disagg-0-prefill-0",
        },
        {
            "name": "llama-disagg-0-prefill-0",
            "topologyConstraint": {
                "topology": "datacenter",
                "requiredTopologyLevel": "example.com/block",
            },
        },
    ],
}


def in_shape(podgroup: dict[str, Any]) -> bool:
    spec = podgroup.get("spec", {})
    return all(spec.get(k) == v for k, v in EXPECTED_SPEC.items())


async def test_a_podgang_becomes_a_kai_podgroup_and_stays_in_shape(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, queue: str
) -> None:
    pcs, gang = inference_manifests(namespace)
    async with running_backend(api, nc, subjects, namespace, KaiBackend(), CONFIG):
        await server_side_apply(api, pcs, namespace)
        await server_side_apply(api, gang, namespace)
        group = await eventually(lambda: live(api, podgroup_of(gang), namespace), in_shape)
        meta = group["metadata"]
        assert meta["ownerReferences"][0]["kind"] == "PodGang"
        assert meta["annotations"][SKIP_PODGROUPER] == "true"
        synced = await eventually(
            lambda: live(api, gang, namespace),
            lambda g: backend_synced(g).get("status") == "True",
        )
        condition = backend_synced(synced)
        assert condition["observedGeneration"] == condition["generation"]
        assert synced["metadata"]["annotations"][SKIP_PODGROUPER] == "true"

        # Someone edits what we own: put back. KAI's own fields: kept.
        path = await resource_path(api, podgroup_of(gang), namespace)
        await merge_patch(api, path, {"spec": {"minMember": 99, "markUnschedulable": True}})
        repaired = await eventually(lambda: live(api, podgroup_of(gang), namespace), in_shape)
        assert repaired["spec"]["markUnschedulable"] is True

        # Someone deletes it: created again.
        await kube_of(api).request("DELETE", path)
        recreated = await eventually(
            lambda: live(api, podgroup_of(gang), namespace),
            lambda g: bool(g) and g["metadata"]["uid"] != meta["uid"],
        )
        assert in_shape(recreated)

        # The PodGang changes: the PodGroup follows, still in the queue it was made with.
        await merge_patch(api, path, {"metadata": {"labels": {"kai.scheduler/node-pool": "a"}}})
        gang["spec"]["priorityClassName"] = "inference-low"
        await server_side_apply(api, gang, namespace)
        updated = await eventually(
            lambda: live(api, podgroup_of(gang), namespace),
            lambda g: g.get("spec", {}).get("priorityClassName") == "inference-low",
        )
        assert updated["spec"]["queue"] == QUEUE
        assert updated["metadata"]["labels"]["kai.scheduler/node-pool"] == "a"

        # The PodGang goes: so does its PodGroup.
        await kube_of(api).request("DELETE", await resource_path(api, gang, namespace))
        await eventually(lambda: live(api, podgroup_of(gang), namespace), lambda g: not g)


async def test_explicit_cleanup_deletes_only_what_the_deleted_podgang_owned(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, queue: str
) -> None:
    pcs, gang = inference_manifests(namespace)
    backend = KaiBackend()
    async with running_backend(api, nc, subjects, namespace, backend, CONFIG):
        await server_side_apply(api, pcs, namespace)
        applied = await server_side_apply(api, gang, namespace)
        await eventually(lambda: live(api, podgroup_of(gang), namespace), bool)
    ctx = BackendContext("kai-scheduler", kube_of(api), nc.jetstream(), subjects, "test")

    def last(uid: str) -> ObjectRecord:
        return ObjectRecord(
            kind="PodGang",
            namespace=namespace,
            name=gang["metadata"]["name"],
            uid=uid,
            resource_version="1",
            observed_at="2026-01-01T00:00:00Z",
            object=msgspec.Raw(msgspec.json.encode(applied)),
            deleted=True,
        )

    # A tombstone of an older PodGang of the same name does not touch the current one's group.
    await backend.on_podgang_delete(last("some-older-uid"), ctx)
    assert await live(api, podgroup_of(gang), namespace)
    # Without garbage collection (no controller manager in some clusters) the backend deletes.
    await backend.on_podgang_delete(last(applied["metadata"]["uid"]), ctx)
    await eventually(lambda: live(api, podgroup_of(gang), namespace), lambda g: not g)


async def validate(nc: NatsClient, subjects: Subjects, pcs: dict[str, Any]) -> ValidateReply:
    request = ValidateRequest(operation="CREATE", podcliqueset=from_object(pcs, PodCliqueSet))
    subject = subjects.backend("kai-scheduler", BackendOperation.VALIDATE)
    reply = await nc.request(subject, to_json(request), timeout=10)
    return msgspec.json.decode(reply.data, type=ValidateReply)


async def test_validation_checks_the_queue_exists(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, queue: str
) -> None:
    pcs, _ = inference_manifests(namespace)
    async with running_backend(api, nc, subjects, namespace, KaiBackend(), CONFIG):
        # The fixture's preferred zone packing names no Topology: KAI needs one.
        pcs["spec"]["template"]["topologyConstraint"]["topologyName"] = "datacenter"
        assert (await validate(nc, subjects, pcs)).allowed
        pcs["metadata"]["labels"]["kai.scheduler/queue"] = "no-such-queue"
        reply = await validate(nc, subjects, pcs)
        assert not reply.allowed
        assert [str(e) for e in reply.errors] == [
            'metadata.labels[kai.scheduler/queue]: KAI Queue "no-such-queue" does not exist '
            "in the cluster"
        ]


def without_owner(topology: dict[str, Any]) -> dict[str, Any]:
    """No binding of that uid exists here: the garbage collector would take an owned one."""
    return {**topology, "metadata": {**topology["metadata"], "ownerReferences": []}}


async def test_a_kai_topology_gangway_did_not_make_is_left_alone(api: ApiClient) -> None:
    """KAI Topologies are cluster-wide and may be the cluster's own: only one Gangway made
    (managed-by label) is replaced when the binding's levels change."""
    kube, name = kube_of(api), f"t-{secrets.token_hex(4)}"
    binding = from_object(
        {
            "metadata": {"name": name, "uid": "u-1"},
            "spec": {"levels": [{"domain": "rack", "key": "example.com/rack"}]},
        },
        ClusterTopologyBinding,
    )
    theirs = {**kai_topology(binding), "metadata": {"name": name}}
    theirs["spec"] = {"levels": [{"nodeLabel": "example.com/zone"}]}
    await kube.request("POST", TOPOLOGIES.path(""), body=theirs)
    ours = without_owner(kai_topology(binding))
    change = await ensure(kube, TOPOLOGIES, ours, field_manager="t", only_ours=True)
    assert change is Change.NOT_OURS
    kept = await kube.read(TOPOLOGIES, "", name)
    assert kept is not None
    assert kept["spec"] == theirs["spec"]

    await kube.request("DELETE", TOPOLOGIES.path("", name))
    await eventually(partial(kube.read, TOPOLOGIES, "", name), lambda found: found is None)
    assert await ensure(kube, TOPOLOGIES, ours, field_manager="t", only_ours=True) is (
        Change.CREATED
    )
    changed = from_object(
        {
            "metadata": {"name": name, "uid": "u-1"},
            "spec": {"levels": [{"domain": "zone", "key": "example.com/zone"}]},
        },
        ClusterTopologyBinding,
    )
    newer = without_owner(kai_topology(changed))
    assert await ensure(
        kube, TOPOLOGIES, newer, field_manager="t", immutable_spec=True, only_ours=True
    ) is (Change.REPLACED)
    await kube.request("DELETE", TOPOLOGIES.path("", name))
