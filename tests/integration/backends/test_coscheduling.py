"""backend-coscheduling against the real API server serving scheduler-plugins' PodGroup CRD
(from its module download): the PodGroup it keeps (the API server validates it), updates
and drift repair, BackendSynced saying what one minimum cannot keep, pods the API accepts."""

from __future__ import annotations

from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient
from prometheus_client import REGISTRY

from gangway_backend_coscheduling import translate
from gangway_backend_coscheduling.backend import CoschedulingBackend
from gangway_backend_coscheduling.builtin import NAME as COSCHEDULING
from gangway_backend_coscheduling.builtin import CoschedulingConfig
from gangway_backend_coscheduling.translate import POD_GROUP_LABEL, PODGROUPS
from gangway_backendkit.context import BackendContext
from gangway_backendkit.converge import Change
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodGang
from gangway_contracts.subjects import Subjects
from tests.support.backends import (
    backend_synced,
    gated_pod,
    live,
    prepared_and_created,
    running_backend,
)
from tests.support.coscheduling import CONFIG, base_gang, podgroup
from tests.support.kube import kube_of, resource_path, server_side_apply
from tests.support.store import eventually


async def test_a_podgang_becomes_one_coscheduling_podgroup(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    gang = base_gang(namespace)
    minimum = sum(g["minReplicas"] for g in gang["spec"]["podgroups"])
    backend = CoschedulingBackend(CoschedulingConfig(schedule_timeout_seconds=20))
    async with running_backend(api, nc, subjects, namespace, backend, CONFIG):
        await server_side_apply(api, gang, namespace)
        group = await eventually(lambda: live(api, podgroup("llama-disagg-0"), namespace), bool)
        assert group["spec"] == {"minMember": minimum, "scheduleTimeoutSeconds": 20}
        owner = group["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"]) == ("PodGang", "llama-disagg-0")
        synced = await eventually(
            lambda: live(api, gang, namespace), lambda g: backend_synced(g).get("status") == "True"
        )
        said = backend_synced(synced)["message"]
        assert f"minMember {minimum}" in said
        # Three pworkers for a minimum of two beside other roles: their spare pod counts.
        assert "spare pods of llama-disagg-0-prefill-0-pworker" in said, said

        # Someone deletes it: made again.
        await kube_of(api).request(
            "DELETE", await resource_path(api, podgroup("llama-disagg-0"), namespace)
        )
        await eventually(
            lambda: live(api, podgroup("llama-disagg-0"), namespace),
            lambda g: bool(g) and g["metadata"]["uid"] != group["metadata"]["uid"],
        )

        # A podgroup's minimum changes: the PodGroup follows, in place.
        gang["spec"]["podgroups"][0]["minReplicas"] += 1
        await server_side_apply(api, gang, namespace)
        await eventually(
            lambda: live(api, podgroup("llama-disagg-0"), namespace),
            lambda g: g["spec"]["minMember"] == minimum + 1,
        )

        # Pods prepared by the backend are accepted by the API server, gated.
        member = gated_pod(namespace, "llama-disagg-0-prefill-0-pworker-0", gang)
        created = await prepared_and_created(api, nc, subjects, COSCHEDULING, gang, member)
        assert created["spec"]["schedulerName"] == "scheduler-plugins-scheduler"
        assert created["metadata"]["labels"][POD_GROUP_LABEL] == "llama-disagg-0"


def synced_now(podgang: dict[str, Any]) -> bool:
    synced = backend_synced(podgang)
    return bool(synced) and synced["observedGeneration"] == podgang["metadata"]["generation"]


def podgroup_reads() -> float:
    """GETs of scheduler-plugins PodGroups this process made (the API request metric)."""
    samples = (
        REGISTRY.get_sample_value(
            "gangway_api_requests_total",
            {"method": "GET", "resource": f"podgroups.{PODGROUPS.group}", "code": code},
        )
        for code in ("200", "404")
    )
    return sum(s or 0.0 for s in samples)


async def test_syncs_write_from_the_mirror_without_reading(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """#22: the PodGroup is written from the watcher's mirror of it (its resourceVersion the
    precondition), not read first; a mirror behind the cluster costs one read."""
    gang = base_gang(namespace)
    backend = CoschedulingBackend(CoschedulingConfig(schedule_timeout_seconds=20))
    async with running_backend(api, nc, subjects, namespace, backend, CONFIG):
        await server_side_apply(api, gang, namespace)
        await eventually(lambda: live(api, gang, namespace), synced_now)
        before = podgroup_reads()  # the watcher's list and watch (GETs too) are behind us
        for _ in (1, 2):  # two changes, each a new generation the backend syncs
            gang["spec"]["podgroups"][0]["minReplicas"] += 1
            await server_side_apply(api, gang, namespace)
            await eventually(lambda: live(api, gang, namespace), synced_now)
        assert podgroup_reads() == before

    # A mirror that has not seen the PodGroup (a backend name nothing is mirrored under): the
    # kit starts from "absent", the create meets the PodGroup (409), and the write is made
    # again from one read.
    behind = BackendContext("unmirrored", kube_of(api), nc.jetstream(), subjects, "t")
    desired = translate.podgroup(
        from_object(await live(api, gang, namespace), PodGang), CoschedulingConfig()
    )
    desired["spec"]["minMember"] += 5
    change = await behind.ensure(PODGROUPS, desired)
    assert change == Change.UPDATED
    assert podgroup_reads() == before + 1
    assert (await live(api, podgroup("llama-disagg-0"), namespace))["spec"]["minMember"] == (
        desired["spec"]["minMember"]
    )
