"""backend-volcano against the real API server serving Volcano's CRDs (from its module
download): one PodGroup per PodGang in the PodCliqueSet's queue, each podgroup a task with its
minimum (the API server validates it), drift repair, the queue kept, pods the API accepts, and
the queue checked at admission."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import msgspec
import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_backend_volcano.backend import VolcanoBackend
from gangway_backend_volcano.builtin import NAME as VOLCANO
from gangway_backend_volcano.translate import (
    GROUP_NAME,
    PODGROUPS,
    QUEUE_KEY,
    QUEUES,
    TASK_SPEC,
)
from gangway_backendkit.metrics import SYNCS
from gangway_contracts.codec import from_object, to_json
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.rpc import (
    ValidateReply,
    ValidateRequest,
)
from gangway_contracts.subjects import BackendOperation, Subjects
from gangway_runtime.kube import KubeError
from tests.support.backends import (
    backend_synced,
    gated_pod,
    live,
    prepared_and_created,
    running_backend,
)
from tests.support.kai import inference_manifests
from tests.support.kube import kube_of, merge_patch, resource_path, server_side_apply
from tests.support.store import eventually

CONFIG = {"profiles": [{"name": VOLCANO, "default": True}]}
QUEUE = "gangway-tests-volcano"
ROUTER = "llama-disagg-0-router"
WORKER = "llama-disagg-0-prefill-0-pworker"  # the pod helper's clique


async def ensure_queue(api: ApiClient, name: str, state: str | None = None) -> str:
    """A Volcano queue (cluster-wide, kept: tests share it); ``state`` written as Volcano's
    queue controller would (none runs here)."""
    manifest = {"apiVersion": QUEUES.api_version, "kind": "Queue", "metadata": {"name": name}}
    try:
        await kube_of(api).request("POST", QUEUES.path(), body={**manifest, "spec": {"weight": 1}})
    except KubeError as exc:
        if exc.status != 409:
            raise
    if state:
        status = {"status": {"state": state, "allocated": {}}}
        await merge_patch(api, f"{QUEUES.path('', name)}/status", status)
    return name


@pytest.fixture
async def queue(api: ApiClient) -> str:
    return await ensure_queue(api, QUEUE)


def volcano_manifests(namespace: str, queue: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """The inference PodCliqueSet in ``queue`` (its packing, which Volcano v1.10 cannot do,
    left out) and its base PodGang, for the volcano backend."""
    pcs, gang = inference_manifests(namespace)
    pcs["metadata"]["annotations"][QUEUE_KEY] = queue
    template = pcs["spec"]["template"]
    for part in (template, *template["cliques"], *template["podCliqueScalingGroups"]):
        part.pop("topologyConstraint", None)
    gang["metadata"]["labels"]["grove.io/scheduler-name"] = VOLCANO
    return pcs, gang


def podgroup_of(gang: dict[str, Any]) -> dict[str, Any]:
    name = gang["metadata"]["name"]
    return {"apiVersion": PODGROUPS.api_version, "kind": "PodGroup", "metadata": {"name": name}}


EXPECTED_SPEC = {
    "minMember": 5,
    "minTaskMember": {
        ROUTER: 2,
        "llama-disagg-0-prefill-0-pleader": 1,
        WORKER: 2,
    },
    "queue": QUEUE,
    "priorityClassName": "inference-high",
}


def in_shape(group: dict[str, Any]) -> bool:
    return bool(group) and all(group["spec"].get(k) == v for k, v in EXPECTED_SPEC.items())


async def test_a_podgang_becomes_a_podgroup_in_its_queue(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, queue: str
) -> None:
    pcs, gang = volcano_manifests(namespace, queue)
    async with running_backend(api, nc, subjects, namespace, VolcanoBackend(), CONFIG):
        await server_side_apply(api, pcs, namespace)
        await server_side_apply(api, gang, namespace)
        group = await eventually(partial(live, api, podgroup_of(gang), namespace), in_shape)
        assert group["metadata"]["ownerReferences"][0]["kind"] == "PodGang"
        synced = await eventually(
            partial(live, api, gang, namespace),
            lambda g: backend_synced(g).get("status") == "True",
        )
        assert "minMember 5 (3 tasks)" in backend_synced(synced)["message"]

        # vc-scheduler writes the status (no status subresource: a full update, mirrored back
        # to the backend): seen to be as desired from the mirror alone, no API read.
        path = await resource_path(api, podgroup_of(gang), namespace)
        unchanged = SYNCS.labels(VOLCANO, "unchanged")
        before = unchanged._value.get()
        await merge_patch(api, path, {"status": {"phase": "Inqueue"}})
        await eventually(lambda: asyncio.sleep(0, unchanged._value.get()), lambda n: n > before)

        # Someone edits what we own: put back.
        await merge_patch(api, path, {"spec": {"minMember": 1, "minTaskMember": {ROUTER: 0}}})
        await eventually(partial(live, api, podgroup_of(gang), namespace), in_shape)

        # Someone deletes it: made again.
        await kube_of(api).request("DELETE", path)
        await eventually(
            partial(live, api, podgroup_of(gang), namespace),
            lambda g: in_shape(g) and g["metadata"]["uid"] != group["metadata"]["uid"],
        )

        # The workload moves to another queue and its PodGang changes: the PodGroup follows
        # the PodGang and stays in the queue it was made in.
        pcs["metadata"]["annotations"][QUEUE_KEY] = await ensure_queue(api, f"{QUEUE}-b")
        await server_side_apply(api, pcs, namespace)
        gang["spec"]["podgroups"][0]["minReplicas"] = 1
        await server_side_apply(api, gang, namespace)
        moved = await eventually(
            partial(live, api, podgroup_of(gang), namespace),
            lambda g: g["spec"]["minTaskMember"][ROUTER] == 1,
        )
        assert (moved["spec"]["minMember"], moved["spec"]["queue"]) == (4, QUEUE)

        member = gated_pod(namespace, f"{WORKER}-0", gang)
        created = await prepared_and_created(api, nc, subjects, VOLCANO, gang, member)
        assert created["spec"]["schedulerName"] == "volcano"
        notes = created["metadata"]["annotations"]
        assert (notes[GROUP_NAME], notes[TASK_SPEC]) == (gang["metadata"]["name"], WORKER)

        # The PodGang goes: so does its PodGroup.
        await kube_of(api).request("DELETE", await resource_path(api, gang, namespace))
        await eventually(partial(live, api, podgroup_of(gang), namespace), lambda g: not g)


async def validate(nc: NatsClient, subjects: Subjects, pcs: dict[str, Any]) -> ValidateReply:
    request = ValidateRequest(operation="CREATE", podcliqueset=from_object(pcs, PodCliqueSet))
    subject = subjects.backend(VOLCANO, BackendOperation.VALIDATE)
    reply = await nc.request(subject, to_json(request), timeout=10)
    return msgspec.json.decode(reply.data, type=ValidateReply)


async def test_admission_checks_the_queue_is_there_and_open(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, queue: str
) -> None:
    pcs, _ = volcano_manifests(namespace, queue)
    closed = await ensure_queue(api, f"{QUEUE}-closed", state="Closed")
    async with running_backend(api, nc, subjects, namespace, VolcanoBackend(), CONFIG):
        assert (await validate(nc, subjects, pcs)).allowed
        field = f"metadata.annotations[{QUEUE_KEY}]"
        for name, reason in (
            ("no-such-queue", 'Volcano Queue "no-such-queue" does not exist in the cluster'),
            (closed, f'Volcano Queue "{closed}" is Closed: it takes no new PodGroups'),
        ):
            pcs["metadata"]["annotations"][QUEUE_KEY] = name
            reply = await validate(nc, subjects, pcs)
            assert [str(e) for e in reply.errors] == [f"{field}: {reason}"]
