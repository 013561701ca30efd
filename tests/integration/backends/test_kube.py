"""backend-kube against the real API server serving the Workload API: the Workload and
PodGroups it keeps (the API server validates them), drift repair, pods the API accepts."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_backend_kube.backend import KubeBackend
from gangway_backend_kube.translate import WITH_PODGROUPS, WORKLOAD_VERSIONS
from gangway_contracts.subjects import Subjects
from tests.integration.watcher.conftest import podgang
from tests.support.backends import (
    backend_synced,
    gated_pod,
    live,
    prepared_and_created,
    running_backend,
)
from tests.support.environment import Cluster
from tests.support.kube import ensure_priority_class, kube_of, resource_path, server_side_apply
from tests.support.store import eventually

GANG = {"profiles": [{"name": "default-scheduler", "config": {"gangScheduling": True}}]}
NO_GANG: dict[str, Any] = {"profiles": [{"name": "default-scheduler"}]}
TEMPLATES = ["router", "prefill-0-pleader", "prefill-0-pworker"]


def base_gang(namespace: str) -> dict[str, Any]:
    return podgang(namespace, "llama-disagg-0", "default-scheduler")


DEFAULT_VERSION = WORKLOAD_VERSIONS[0]


def named(kind: str, name: str, version: str = DEFAULT_VERSION) -> dict[str, Any]:
    return {"apiVersion": f"scheduling.k8s.io/{version}", "kind": kind, "metadata": {"name": name}}


def leaves(template: dict[str, Any]) -> list[str]:
    """The pod group templates under a composite template, at any depth."""
    below = template.get("compositePodGroupTemplates", [])
    return [t["name"] for t in template.get("podGroupTemplates", [])] + [
        name for group in below for name in leaves(group)
    ]


def worker_policy(version: str, obj: dict[str, Any]) -> Any:
    """The scheduling policy of the pworker pod group: its PodGroup's (1.36, 1.37), or its
    entry in the Workload (1.35)."""
    spec = obj.get("spec", {})
    if version in WITH_PODGROUPS:
        return spec.get("schedulingPolicy")
    entries = {g["name"]: g["policy"] for g in spec.get("podGroups", [])}
    return entries.get("prefill-0-pworker")


async def test_a_podgang_becomes_workload_api_objects(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, cluster: Cluster
) -> None:
    """On the default control plane (1.37) and on 1.36 Workload + PodGroups; with
    GANGWAY_K8S_VERSION=1.35.x the v1alpha1 Workload alone."""
    gang = base_gang(namespace)
    await ensure_priority_class(api, gang["spec"]["priorityClassName"], 1000)
    backend = KubeBackend(gang_scheduling=True)
    async with running_backend(api, nc, subjects, namespace, backend, GANG):
        version = backend.version
        assert version is not None
        if cluster.control_plane is not None:
            assert version == cluster.control_plane.workload_api_version
        await server_side_apply(api, gang, namespace)
        workload_doc = named("Workload", "llama-disagg-0", version)
        workload = await eventually(lambda: live(api, workload_doc, namespace), bool)
        assert workload["spec"]["controllerRef"]["kind"] == "PodGang"
        spec = workload["spec"]
        if backend.composite is not None:
            # 1.37 with CompositePodGroup (the test control plane's): the gang is one tree.
            # Its packed scaling group is a middle group of the tree.
            [root] = spec["compositePodGroupTemplates"]
            children = root.get("podGroupTemplates", []) + root["compositePodGroupTemplates"]
            assert root["schedulingPolicy"] == {"gang": {"minGroupCount": len(children)}}
            names = sorted(leaves(root))
            tree = named("CompositePodGroup", "llama-disagg-0", backend.composite)
            found = await eventually(lambda: live(api, tree, namespace), bool)
            assert found["spec"]["workloadRef"]["templateName"] == "podgang"
        else:
            names = [t["name"] for t in spec.get("podGroupTemplates") or spec["podGroups"]]
        assert names == sorted(TEMPLATES) if backend.composite else names == TEMPLATES
        worker = (
            named("PodGroup", "llama-disagg-0-prefill-0-pworker", version)
            if version in WITH_PODGROUPS
            else workload_doc
        )
        group = await eventually(lambda: live(api, worker, namespace), bool)
        assert worker_policy(version, group) == {"gang": {"minCount": 2}}
        if version == "v1beta1":
            assert group["spec"]["workloadRef"] == {
                "workloadName": "llama-disagg-0",
                "templateName": "prefill-0-pworker",
            }
            if backend.composite is not None:
                # In its packed scaling group's middle group, named like the group config.
                assert group["spec"]["parentCompositePodGroupName"] == "llama-disagg-0-prefill-0"
        elif version == "v1alpha2":
            assert group["spec"]["podGroupTemplateRef"]["workload"] == {
                "workloadName": "llama-disagg-0",
                "podGroupTemplateName": "prefill-0-pworker",
            }
        synced = await eventually(
            lambda: live(api, gang, namespace), lambda g: backend_synced(g).get("status") == "True"
        )
        assert f"Workload API {version}" in backend_synced(synced)["message"]

        # Someone deletes it: created again.
        await kube_of(api).request("DELETE", await resource_path(api, worker, namespace))
        await eventually(
            lambda: live(api, worker, namespace),
            lambda g: bool(g) and g["metadata"]["uid"] != group["metadata"]["uid"],
        )

        # A podgroup's minReplicas changes: the immutable object is replaced.
        gang["spec"]["podgroups"][2]["minReplicas"] = 3
        await server_side_apply(api, gang, namespace)
        replaced = await eventually(
            lambda: live(api, worker, namespace),
            lambda g: worker_policy(version, g) == {"gang": {"minCount": 3}},
        )
        assert replaced["metadata"]["ownerReferences"][0]["name"] == "llama-disagg-0"

        # Pods prepared by the backend are accepted by the API server, gated.
        member = gated_pod(namespace, "llama-disagg-0-prefill-0-pworker-0", gang)
        created = await prepared_and_created(api, nc, subjects, "default-scheduler", gang, member)
        assert created["spec"]["schedulerName"] == "default-scheduler"
        if version in WITH_PODGROUPS:
            assert created["spec"]["schedulingGroup"] == {
                "podGroupName": "llama-disagg-0-prefill-0-pworker"
            }
        else:
            assert created["spec"]["workloadRef"] == {
                "name": "llama-disagg-0",
                "podGroup": "prefill-0-pworker",
            }


async def test_without_gang_scheduling_there_is_nothing_to_create(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, cluster: Cluster
) -> None:
    gang = base_gang(namespace)
    version = (
        cluster.control_plane.workload_api_version if cluster.control_plane else DEFAULT_VERSION
    )
    async with running_backend(api, nc, subjects, namespace, KubeBackend(False), NO_GANG):
        await server_side_apply(api, gang, namespace)
        synced = await eventually(
            lambda: live(api, gang, namespace), lambda g: backend_synced(g).get("status") == "True"
        )
        assert "gang scheduling off" in backend_synced(synced)["message"]
        assert not await live(api, named("Workload", "llama-disagg-0", version), namespace)


async def test_a_priority_class_the_cluster_lacks_is_said_not_retried(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """The pod groups carry the PodGang's priority class; the API server refuses one that
    does not exist, and the backend says so on BackendSynced (the resync tries again)."""
    gang = base_gang(namespace)
    gang["spec"]["priorityClassName"] = f"missing-{namespace}"
    async with running_backend(api, nc, subjects, namespace, KubeBackend(True), GANG):
        await server_side_apply(api, gang, namespace)
        said = await eventually(
            lambda: live(api, gang, namespace), lambda g: backend_synced(g).get("status") == "False"
        )
    condition = backend_synced(said)
    assert condition["reason"] == "PriorityClassNotFound", condition
    assert f"missing-{namespace}" in condition["message"]


async def test_what_the_api_server_refuses_as_invalid_is_said_not_retried(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """A packing key that is no label key: the API server refuses the tree (422), and the
    backend says so on BackendSynced, in its words, rather than retrying it to the
    dead-letter subject."""
    gang = base_gang(namespace)
    constraint = {"packConstraint": {"required": "not a label key"}}
    gang["spec"]["podgroups"][0]["topologyConstraint"] = constraint
    backend = KubeBackend(True)
    async with running_backend(api, nc, subjects, namespace, backend, GANG):
        if backend.composite is None:
            pytest.skip("CompositePodGroup not served: no packing is written")
        await server_side_apply(api, gang, namespace)
        said = await eventually(
            lambda: live(api, gang, namespace), lambda g: backend_synced(g).get("status") == "False"
        )
    condition = backend_synced(said)
    assert condition["reason"] == "Invalid", condition
    assert "not a label key" in condition["message"]
