"""The real schemas accept what backends will write: KAI PodGroups and Workload API objects."""

from __future__ import annotations

from typing import Any

import pytest
from kubernetes_asyncio import client
from kubernetes_asyncio.client.api_client import ApiClient
from kubernetes_asyncio.client.exceptions import ApiException

from gangway_backend_kube.translate import WORKLOAD_VERSIONS
from tests.support.environment import Cluster


def kai_podgroup(min_member: int) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.run.ai/v2alpha2",
        "kind": "PodGroup",
        "metadata": {"name": "gang-0"},
        "spec": {
            "minMember": min_member,
            "queue": "team-a",
            "priorityClassName": "inference-high",
            "subGroups": [
                {"name": "router", "minMember": 2},
                {"name": "prefill"},  # inner: all its children (KAI v0.12 has no minSubGroup)
                {"name": "pleader", "minMember": 1, "parent": "prefill"},
                {"name": "pworker", "minMember": 2, "parent": "prefill"},
            ],
            "topologyConstraint": {
                "topology": "datacenter",
                "preferredTopologyLevel": "topology.kubernetes.io/zone",
            },
        },
    }


async def test_kai_podgroup_v2alpha2(api: ApiClient, namespace: str) -> None:
    custom = client.CustomObjectsApi(api)
    args = ("scheduling.run.ai", "v2alpha2", namespace, "podgroups")
    created = await custom.create_namespaced_custom_object(*args, kai_podgroup(5))
    assert created["spec"]["subGroups"][2]["parent"] == "prefill"
    bad = kai_podgroup(-1)
    bad["metadata"]["name"] = "gang-1"
    with pytest.raises(ApiException) as caught:
        await custom.create_namespaced_custom_object(*args, bad)
    assert "spec.minMember" in str(caught.value.body)


async def workload_api_v1alpha1(custom: client.CustomObjectsApi, namespace: str) -> None:
    workload = {
        "apiVersion": "scheduling.k8s.io/v1alpha1",
        "kind": "Workload",
        "metadata": {"name": "gang-0"},
        "spec": {
            "podGroups": [
                {"name": "router", "policy": {"gang": {"minCount": 2}}},
                {"name": "pworker", "policy": {"basic": {}}},
            ]
        },
    }
    created = await custom.create_namespaced_custom_object(
        "scheduling.k8s.io", "v1alpha1", namespace, "workloads", workload
    )
    assert created["spec"]["podGroups"][0]["policy"] == {"gang": {"minCount": 2}}


async def test_workload_api(api: ApiClient, namespace: str, cluster: Cluster) -> None:
    custom = client.CustomObjectsApi(api)
    version = (
        cluster.control_plane.workload_api_version
        if cluster.control_plane
        else WORKLOAD_VERSIONS[0]
    )
    if version == "v1alpha1":  # Kubernetes 1.35 (GANGWAY_K8S_VERSION=1.35.x)
        await workload_api_v1alpha1(custom, namespace)
        return
    workload = {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "Workload",
        "metadata": {"name": "gang-0"},
        "spec": {
            "podGroupTemplates": [
                {"name": "router", "schedulingPolicy": {"gang": {"minCount": 2}}},
                {"name": "pworker", "schedulingPolicy": {"basic": {}}},
            ]
        },
    }
    await custom.create_namespaced_custom_object(
        "scheduling.k8s.io", version, namespace, "workloads", workload
    )
    # 1.37 (v1beta1) names the template with workloadRef, 1.36 (v1alpha2) podGroupTemplateRef.
    reference = (
        {"workloadRef": {"workloadName": "gang-0", "templateName": "router"}}
        if version == "v1beta1"
        else {
            "podGroupTemplateRef": {
                "workload": {"workloadName": "gang-0", "podGroupTemplateName": "router"}
            }
        }
    )
    podgroup = {
        "apiVersion": f"scheduling.k8s.io/{version}",
        "kind": "PodGroup",
        "metadata": {"name": "gang-0-router"},
        "spec": {**reference, "schedulingPolicy": {"gang": {"minCount": 2}}},
    }
    created = await custom.create_namespaced_custom_object(
        "scheduling.k8s.io", version, namespace, "podgroups", podgroup
    )
    assert created["spec"]["schedulingPolicy"] == {"gang": {"minCount": 2}}
    # A pod joins the gang by naming its PodGroup (1.36 and 1.37: spec.schedulingGroup).
    pod = client.V1Pod(
        metadata=client.V1ObjectMeta(name="router-0"),
        spec=client.V1PodSpec(
            containers=[client.V1Container(name="c", image="pause")],
            scheduling_group=client.V1PodSchedulingGroup(pod_group_name="gang-0-router"),
        ),
    )
    created_pod = await client.CoreV1Api(api).create_namespaced_pod(namespace, pod)
    assert created_pod.metadata.name == "router-0"
