"""Kueue in front of the scheduler: real Kueue (built from its Go module) admits each gang
against a ClusterQueue's quota, then the real scheduler of the PodCliqueSet's backend places
it whole on kwok nodes. A gang over quota waits whole (every pod gated) with Kueue's words;
a higher-priority gang makes Kueue preempt a lower one, whose pods go away whole and come
back gated. No pod is bound by hand; every pod change is watched where "whole" is the
claim."""

from __future__ import annotations

import asyncio
import contextlib
from functools import partial
from typing import Any

import pytest
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_contracts import kueue, labels
from gangway_localcluster import kueue as local_kueue
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.kai import SCHEDULER_NAME as KAI
from gangway_stage_kueue.workload import WORKLOADS
from tests.e2e.conftest import Nodes
from tests.e2e.workloads import (
    bound,
    gpu_clique,
    gpu_workload,
    of_gang,
    packed,
    pod_changes,
    pods_version,
    racks_of,
    running,
    running_pods_of,
    two_racks_the_first_half_taken,
)
from tests.support.admission import create
from tests.support.backends import live
from tests.support.kai import ensure_queue
from tests.support.kube import delete_object, ensure_priority_class, server_side_apply
from tests.support.manifests import on_scheduler
from tests.support.podgang import condition, gated, podgangs, pods
from tests.support.store import eventually

CONFIG = {
    "profiles": [
        {"name": "default-scheduler", "default": True, "config": {"gangScheduling": True}},
        {"name": "kai-scheduler"},
    ]
}
OPERATOR = {"scheduler": CONFIG, "kueue": {"enabled": True}}
KAI_QUEUE = "e2e-kueue-kai"
PLACED_WITHIN = 90.0


def quota(cp: ControlPlane, namespace: str, gpus: int) -> str:
    """A ClusterQueue of ``gpus`` GPUs of its own and a LocalQueue in ``namespace`` for it;
    the LocalQueue's name."""
    cp.create(local_kueue.RESOURCE_FLAVORS, local_kueue.resource_flavor())
    name = f"cq-{namespace}"
    cp.create(
        local_kueue.CLUSTER_QUEUES, local_kueue.cluster_queue(name, {"nvidia.com/gpu": str(gpus)})
    )
    cp.create(*local_kueue.local_queue(namespace, "team", name))
    return "team"


def queued(pcs: dict[str, Any], queue: str) -> dict[str, Any]:
    pcs["metadata"].setdefault("labels", {})[kueue.QUEUE_LABEL] = queue
    return pcs


def pair(namespace: str, name: str, nodes: Nodes, queue: str) -> dict[str, Any]:
    """One gang of two pods, both needed, a whole 4-GPU node each: 8 GPUs."""
    return queued(gpu_workload(namespace, name, nodes, gpu_clique("w", 2, 2, gpus=4)), queue)


async def runs(api: ApiClient, namespace: str, gang: str, count: int = 2) -> None:
    await eventually(
        partial(pods, api, namespace),
        lambda f: running(of_gang(f, gang)) == count,
        PLACED_WITHIN,
    )


async def over_quota_then_admitted(
    api: ApiClient, cp: ControlPlane, namespace: str, first: dict[str, Any], second: dict[str, Any]
) -> None:
    """``first`` admitted and Running; ``second``, over the quota, waits whole with
    Kueue's words until ``first`` is deleted, then runs."""
    a, b = (f"{pcs['metadata']['name']}-0" for pcs in (first, second))
    await server_side_apply(api, first, namespace)
    await runs(api, namespace, a)
    await server_side_apply(api, second, namespace)
    waiting = await eventually(
        partial(podgangs, api, namespace),
        lambda g: b in g and condition(g[b], labels.SCHEDULED).get("reason") == "OverQuota",
        PLACED_WITHIN,
    )
    said = condition(waiting[b], labels.SCHEDULED)
    assert "insufficient unused quota for nvidia.com/gpu" in said["message"], said
    assert condition(waiting[b], kueue.QUEUE_ADMITTED)["status"] == "False"
    assert condition(waiting[a], kueue.QUEUE_ADMITTED)["message"].startswith(
        "admitted by Kueue in ClusterQueue cq-"
    )
    found = await pods(api, namespace)
    assert len(of_gang(found, b)) == 2
    assert all(gated(p) for p in of_gang(found, b)), "a pod of the gang over quota ungated"
    made = await live(api, {**WORKLOADS_DOC, "metadata": {"name": b}}, namespace)
    assert made["spec"]["queueName"] == "team"
    [podset] = made["spec"]["podSets"]
    assert (podset["name"], podset["count"]) == ("w", 2), podset
    assert podset["template"]["spec"]["containers"][0]["resources"]["requests"] == {
        "nvidia.com/gpu": "4"
    }
    await delete_object(api, first, namespace)
    await runs(api, namespace, b)


WORKLOADS_DOC = {"apiVersion": WORKLOADS.api_version, "kind": "Workload"}


async def test_kueue_admits_one_gang_of_two_for_kube_scheduler_the_other_waits_whole(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    await nodes.add(4, gpus=4)  # room for both on the nodes: the quota is the limit
    queue = quota(e2e_cluster, namespace, gpus=8)
    await over_quota_then_admitted(
        api,
        e2e_cluster,
        namespace,
        pair(namespace, "kube-a", nodes, queue),
        pair(namespace, "kube-b", nodes, queue),
    )


async def test_kueue_admits_and_kai_places(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    await ensure_queue(api, KAI_QUEUE)
    await nodes.add(4, gpus=4)
    queue = quota(e2e_cluster, namespace, gpus=8)

    def on_kai(name: str) -> dict[str, Any]:
        pcs = on_scheduler(pair(namespace, name, nodes, queue), KAI)
        pcs["metadata"]["labels"]["kai.scheduler/queue"] = KAI_QUEUE
        return pcs

    await over_quota_then_admitted(api, e2e_cluster, namespace, on_kai("kai-a"), on_kai("kai-b"))
    placed = await pods(api, namespace)
    assert {p["spec"]["schedulerName"] for p in placed.values()} == {KAI}


async def test_kueue_preempts_a_lower_gang_whole_for_a_higher_one(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    await ensure_priority_class(api, "e2e-kueue-low", 50)
    await ensure_priority_class(api, "e2e-kueue-high", 100_000)
    await nodes.add(4, gpus=4)
    queue = quota(e2e_cluster, namespace, gpus=8)
    low = pair(namespace, "low", nodes, queue)
    low["spec"]["template"]["priorityClassName"] = "e2e-kueue-low"
    high = pair(namespace, "high", nodes, queue)
    high["spec"]["template"]["priorityClassName"] = "e2e-kueue-high"
    await server_side_apply(api, low, namespace)
    await runs(api, namespace, "low-0")
    since, now = await pods_version(api, namespace), dict(await pods(api, namespace))
    moments: list[dict[str, dict[str, Any]]] = []

    async def watch() -> None:
        async for seen in pod_changes(api, namespace, since, now, within=PLACED_WITHIN * 2):
            moments.append(dict(seen))

    watching = asyncio.create_task(watch())
    try:
        await server_side_apply(api, high, namespace)
        await runs(api, namespace, "high-0")
        back = await eventually(
            partial(podgangs, api, namespace),
            lambda g: condition(g["low-0"], labels.SCHEDULED).get("reason") == "Preempted",
        )
        await asyncio.sleep(1.0)  # the last changes reach the watch
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    said = condition(back["low-0"], labels.SCHEDULED)
    assert said["message"].startswith("evicted by Kueue: Preempted"), said
    left = of_gang(await pods(api, namespace), "low-0")
    assert len(left) == 2
    assert all(gated(p) for p in left), "the preempted gang is not back gated"
    assert moments, "no pod change seen"
    for seen in moments:
        lows = of_gang(seen, "low-0")
        placed = [
            p
            for p in lows
            if p["spec"].get("nodeName") and not p["metadata"].get("deletionTimestamp")
        ]
        regated = [p for p in lows if gated(p)]
        # Stopped whole: never a pod of the gang made again gated beside one still placed.
        assert not (placed and regated), "the low gang was stopped in part"
        highs_ungated = [p for p in of_gang(seen, "high-0") if not gated(p)]
        # Admitted only once the quota is handed back: never both gangs let go at once.
        assert not (highs_ungated and placed), "the high gang ungated while the low one ran"
    assert bound(of_gang(await pods(api, namespace), "high-0")) == 2


async def test_a_queue_named_on_a_clique_is_refused_by_field(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    pcs = queued(gpu_workload(namespace, "solo", nodes, gpu_clique("w", 1, 1, gpus=1)), "team")
    pcs["spec"]["template"]["cliques"][0]["labels"][kueue.QUEUE_LABEL] = "team"
    refused = await create(api, pcs, namespace)
    assert "spec.template.cliques[0].labels[kueue.x-k8s.io/queue-name]" in refused, refused


async def test_kueue_admits_and_the_scheduler_keeps_a_required_rack(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    """Kueue decides whether now, the scheduler where: Grove's ``required: rack`` on a gang
    Kueue admitted lands in the one rack with room (two racks of four nodes, two of the
    first taken), as kube-scheduler packs it without Kueue."""
    if e2e_cluster.binaries.minor < 37:
        pytest.skip("CompositePodGroup: Kubernetes 1.37 and later")
    await two_racks_the_first_half_taken(api, namespace, nodes)
    queue = quota(e2e_cluster, namespace, gpus=16)
    roles = (gpu_clique("prefill", 2, 2, gpus=4), gpu_clique("decode", 2, 2, gpus=4))
    pcs = queued(packed(gpu_workload(namespace, "racked", nodes, *roles), required="rack"), queue)
    await server_side_apply(api, pcs, namespace)
    gang = await running_pods_of(api, namespace, "racked", 4)
    assert await racks_of(api, gang) == {"rack-1"}, "the whole PodGang in the rack with room"
    said = condition((await podgangs(api, namespace))["racked-0"], kueue.QUEUE_ADMITTED)
    assert said["status"] == "True", said
