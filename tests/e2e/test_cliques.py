"""PodCliques and PodCliqueScalingGroups with the numbers Grove's columns show, once the
default scheduler (gang scheduling on) has placed Grove's discovery sample on kwok nodes and
kwok runs its pods: every clique scheduled and ready, no minimum breached, every group
replica available. Read back through the columns of the CRDs `kubectl get` prints."""

from __future__ import annotations

import subprocess
from functools import partial
from typing import Any

import msgspec
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_contracts import labels
from gangway_localcluster.controlplane import ControlPlane
from tests.e2e.conftest import Nodes, Up
from tests.e2e.workloads import events_about, trace_of
from tests.integration.watcher.conftest import labelled
from tests.support.kube import kube_of, server_side_apply
from tests.support.manifests import fixture
from tests.support.podgang import condition, objects
from tests.support.store import eventually

CONFIG = {
    "profiles": [{"name": "default-scheduler", "default": True, "config": {"gangScheduling": True}}]
}
SAMPLE = "grove/samples/user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml"
PODCLIQUES = "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliques"
SCALING_GROUPS = "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliquescalinggroups"
PODGANGS = "/apis/scheduler.grove.io/v1alpha1/namespaces/{ns}/podgangs"
HPAS = "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"
PODS = "/api/v1/namespaces/{ns}/pods"
RUNNING_WITHIN = 120.0


def kubectl(cp: ControlPlane, *args: str) -> str:
    """The control plane's own kubectl, as a user runs it."""
    done = subprocess.run(
        [cp.binaries.kubectl, f"--kubeconfig={cp.kubeconfig}", *args],
        check=True,
        capture_output=True,
        text=True,
    )
    return done.stdout


def columns(cp: ControlPlane, plural: str, namespace: str) -> list[dict[str, str]]:
    """What `kubectl get <plural> -o wide` prints, by column (the CRD's printer columns)."""
    out = kubectl(cp, "get", plural, "-n", namespace, "-o", "wide")
    header, *rows = out.splitlines()
    names = header.split()
    return [dict(zip(names, row.split(), strict=False)) for row in rows]


def all_running(found: dict[str, dict[str, Any]]) -> bool:
    return len(found) == 4 and all(
        (c.get("status") or {}).get("readyReplicas") == c["spec"]["replicas"]
        and condition(c, "MinAvailableBreached").get("status") == "False"
        for c in found.values()
    )


async def test_podcliques_and_scaling_groups_show_grove_s_numbers(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    await nodes.add(2, gpus=0)
    pcs = nodes.pin(labelled(fixture(SAMPLE), namespace, "serving"))
    await server_side_apply(api, pcs, namespace)
    cliques = await eventually(
        partial(objects, api, namespace, PODCLIQUES), all_running, RUNNING_WITHIN
    )
    for clique in cliques.values():
        status = clique["status"]
        replicas = clique["spec"]["replicas"]
        assert (status["scheduledReplicas"], status["scheduleGatedReplicas"]) == (replicas, 0)
        assert condition(clique, "PodCliqueScheduled")["status"] == "True"
    group = "serving-0-model-instance"
    groups = await eventually(
        partial(objects, api, namespace, SCALING_GROUPS),
        lambda g: (g.get(group, {}).get("status") or {}).get("availableReplicas") == 2,
        RUNNING_WITHIN,
    )
    assert groups[group]["status"]["scheduledReplicas"] == 2
    assert condition(groups[group], "MinAvailableBreached")["status"] == "False"

    printed = {row["NAME"]: row for row in columns(e2e_cluster, "pclq", namespace)}
    assert printed[f"{group}-1-worker"] | {"AGE": ""} == {
        "NAME": f"{group}-1-worker",
        "MINAVAIL": "3",
        "REPLICAS": "3",
        "READY": "3",
        "SCHEDULED": "3",
        "UPDATED": "3",
        "GATED": "0",
        "MINBREACHED": "False",
        "AGE": "",
    }
    [row] = columns(e2e_cluster, "pcsg", namespace)
    assert (row["NAME"], row["REPLICAS"], row["AVAILABLE"], row["SCHEDULED"]) == (
        group,
        "2",
        "2",
        "2",
    )


def gangs_running(names: list[str]) -> Any:
    """Exactly these PodGangs, every one of them scheduled whole."""
    return lambda found: (
        sorted(found) == sorted(names)
        and all((g.get("status") or {}).get("phase") == "Running" for g in found.values())
    )


async def test_an_hpa_scales_a_scaling_group_and_its_gangs_follow_each_whole(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    """kube-controller-manager's HPA controller, on the HPA Gangway made of the group's
    scaleConfig, scales the group through /scale: 1 → 3 → 1 replicas, each extra replica a
    gang of its own, placed whole and taken away whole. No metrics server runs here: the HPA
    acts on its bounds (a raised minReplicas, a lowered maxReplicas), as it does before
    any metric. Then `kubectl scale` on one PodClique adds pods to its gang."""
    await nodes.add(3, gpus=0)
    pcs = nodes.pin(labelled(fixture(SAMPLE), namespace, "auto"))
    group_config = pcs["spec"]["template"]["podCliqueScalingGroups"][0]
    group_config.update(replicas=1, minAvailable=1, scaleConfig={"maxReplicas": 3})
    await server_side_apply(api, pcs, namespace)
    group = "auto-0-model-instance"
    await eventually(
        partial(objects, api, namespace, PODGANGS), gangs_running(["auto-0"]), RUNNING_WITHIN
    )

    group_config["scaleConfig"] = {"minReplicas": 3, "maxReplicas": 3}
    await server_side_apply(api, pcs, namespace)
    scaled_up = ["auto-0", f"{group}-0", f"{group}-1"]
    await eventually(
        partial(objects, api, namespace, PODGANGS), gangs_running(scaled_up), RUNNING_WITHIN
    )
    found = await objects(api, namespace, SCALING_GROUPS)
    assert found[group]["spec"]["replicas"] == 3  # written by the HPA, not by Gangway
    hpa = await objects(api, namespace, HPAS)
    assert hpa[group]["status"]["desiredReplicas"] == 3

    group_config["scaleConfig"] = {"minReplicas": 1, "maxReplicas": 1}
    await server_side_apply(api, pcs, namespace)
    await eventually(
        partial(objects, api, namespace, PODGANGS), gangs_running(["auto-0"]), RUNNING_WITHIN
    )
    await eventually(
        partial(objects, api, namespace, PODCLIQUES),
        lambda c: sorted(c) == [f"{group}-0-leader", f"{group}-0-worker"],
        RUNNING_WITHIN,
    )

    kubectl(e2e_cluster, "scale", "-n", namespace, "pclq", f"{group}-0-worker", "--replicas=4")
    await eventually(
        partial(objects, api, namespace, PODCLIQUES),
        lambda c: (c[f"{group}-0-worker"].get("status") or {}).get("readyReplicas") == 4,
        RUNNING_WITHIN,
    )
    gangs = await objects(api, namespace, PODGANGS)
    (workers,) = [g for g in gangs["auto-0"]["spec"]["podgroups"] if g["name"].endswith("worker")]
    assert (len(workers["podReferences"]), workers["minReplicas"]) == (4, 3)


def readiness_taken(pod: dict[str, Any]) -> dict[str, Any]:
    """What the kubelet writes when a started container fails its readiness probe: the
    container not ready, the pod not Ready (kwok leaves a Running pod's status alone)."""
    status = pod["status"]
    containers = [{**c, "ready": False, "started": True} for c in status["containerStatuses"]]
    conditions = [
        {**c, "status": "False"} if c["type"] in ("Ready", "ContainersReady") else c
        for c in status["conditions"]
    ]
    return {"status": {"containerStatuses": containers, "conditions": conditions}}


def pods_of(found: dict[str, dict[str, Any]]) -> dict[str, set[str]]:
    """Each gang's pods (their uids), of those not being deleted and running."""
    gangs: dict[str, set[str]] = {}
    for pod in found.values():
        meta = pod["metadata"]
        if not meta.get("deletionTimestamp") and pod.get("status", {}).get("phase") == "Running":
            gangs.setdefault(meta["labels"][labels.PODGANG], set()).add(meta["uid"])
    return gangs


async def test_a_gang_below_its_minimum_for_termination_delay_is_recycled_whole(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane, up: Up
) -> None:
    """Grove's gang termination on kube-scheduler and kwok: a worker of the scaled gang
    loses its readiness (the kubelet's words, written here) and, 3 s on, that gang alone is
    deleted and made again, placed afresh; a worker of the base gang then takes the whole
    replica along. Each step is in the journal (``gangway trace``) and a Warning Event."""
    await nodes.add(2, gpus=0)
    pcs = nodes.pin(labelled(fixture(SAMPLE), namespace, "fragile"))
    pcs["spec"]["template"]["terminationDelay"] = "3s"
    await server_side_apply(api, pcs, namespace)
    group = "fragile-0-model-instance"
    gangs = ["fragile-0", f"{group}-0"]
    await eventually(
        partial(objects, api, namespace, PODGANGS), gangs_running(gangs), RUNNING_WITHIN
    )
    await eventually(partial(objects, api, namespace, PODCLIQUES), all_running, RUNNING_WITHIN)
    before = pods_of(await objects(api, namespace, PODS))

    async def replaced(which: list[str], than: dict[str, set[str]]) -> dict[str, set[str]]:
        """Every gang running whole again: those named with none of their pods left from
        ``than``, the others with theirs all kept."""

        def done(found: dict[str, dict[str, Any]]) -> bool:
            now = pods_of(found)
            return all(len(now.get(g, ())) == 4 for g in gangs) and all(
                not now[g] & than[g] if g in which else now[g] == than[g] for g in gangs
            )

        await eventually(partial(objects, api, namespace, PODS), done, RUNNING_WITHIN)
        await eventually(
            partial(objects, api, namespace, PODGANGS), gangs_running(gangs), RUNNING_WITHIN
        )
        return pods_of(await objects(api, namespace, PODS))

    async def break_readiness(pod_name: str) -> None:
        path = f"/api/v1/namespaces/{namespace}/pods/{pod_name}"
        pod = msgspec.json.decode(await kube_of(api).request("GET", path))
        await kube_of(api).request(
            "PATCH",
            f"{path}/status",
            body=readiness_taken(pod),
            content_type="application/strategic-merge-patch+json",
        )

    # The scaled gang (group replica 1): recycled alone, the base gang untouched.
    await break_readiness(f"{group}-1-worker-0")
    after = await replaced([f"{group}-0"], before)

    # The base gang (group replica 0): the whole replica, both gangs.
    await break_readiness(f"{group}-0-worker-0")
    await replaced(gangs, after)

    trace = await trace_of(up, f"{namespace}/fragile")
    assert trace.count("GangTerminated") == 3, trace  # 1 scaled gang, then 2 of the replica
    assert f"{group}-1-worker" in trace
    warned = await events_about(api, namespace, "GangTerminated")
    assert warned
    assert all(e["type"] == "Warning" for e in warned)
