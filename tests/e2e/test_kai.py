"""KAI's real scheduler and binder place what backend-kai writes, on kwok nodes: a gang binds
whole or not at all, each subgroup's minimum holds, a queue's limit makes a second gang wait
whole, required rack packing keeps a gang in one rack (by the KAI Topology backend-kai makes
from a ClusterTopologyBinding) while preferred packing gives way, and a
PodGang's priority class reaches KAI. No pod is bound by hand; the only pods bound by another
scheduler are kube-scheduler's fillers that take room away."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_backend_kai.translate import PODGROUPS, QUEUE_LABEL, TOPOLOGIES
from gangway_contracts import labels
from gangway_localcluster.kai import queues
from gangway_localcluster.nodes import (
    BLOCK_LABEL,
    RACK_LABEL,
    ZONE_LABEL,
)
from gangway_runtime.status import PODCLIQUESETS
from tests.e2e.conftest import Nodes, Up
from tests.e2e.workloads import (
    TOPOLOGY,
    bound,
    gang_said,
    gang_where,
    gpu_clique,
    gpu_workload,
    made_again_under_its_names_stays_whole,
    one_of_two_runs_whole,
    packed,
    racks_of,
    rolled_within_its_budget,
    running,
    running_pods_of,
    scheduled,
    stays_unbound,
    topology,
    two_racks_the_first_half_taken,
    ungated,
    why_of,
)
from tests.support.admission import create
from tests.support.backends import live
from tests.support.kai import DEPARTMENT, ensure_queue
from tests.support.kube import ensure_priority_class, kube_of, server_side_apply
from tests.support.manifests import on_scheduler
from tests.support.podgang import condition, podgangs, pods
from tests.support.store import eventually

CONFIG = {"profiles": [{"name": "kai-scheduler", "default": True}]}
QUEUE = "e2e-kai"
# Long enough for KAI (a cycle a second) to have tried a gang, and kwok to run it.
PLACED_WITHIN = 60.0


def kai_workload(
    namespace: str, name: str, nodes: Nodes, *cliques: dict[str, Any], queue: str = QUEUE
) -> dict[str, Any]:
    """A PodCliqueSet of ``cliques`` on kai-scheduler in ``queue``, on this test's nodes."""
    pcs = gpu_workload(namespace, name, nodes, *cliques)
    pcs["metadata"]["labels"][QUEUE_LABEL] = queue
    return on_scheduler(pcs, "kai-scheduler")


@pytest.fixture
async def queue(api: ApiClient) -> str:
    return await ensure_queue(api, QUEUE)


async def test_two_gangs_with_room_for_one_one_runs_whole_the_other_not_at_all(
    api: ApiClient, namespace: str, nodes: Nodes, queue: str, tmp_path: Path
) -> None:
    await nodes.add(4, gpus=4)
    # Not "trainer", the next test's name: KAI v0.12.0 takes same-named PodGroups in two
    # namespaces for one (KAI #2095), and the next test's gang would count this one's pods.
    pcs = kai_workload(namespace, "pair", nodes, gpu_clique("worker", 4, 4, gpus=4))
    pcs["spec"]["replicas"] = 2
    await one_of_two_runs_whole(api, namespace, pcs, nodes, tmp_path, *queues(queue, DEPARTMENT))


async def test_a_gang_that_does_not_fit_gets_no_pod_until_it_does(
    api: ApiClient, namespace: str, nodes: Nodes, queue: str
) -> None:
    await nodes.add(3, gpus=4)
    pcs = kai_workload(namespace, "trainer", nodes, gpu_clique("worker", 4, 4, gpus=4))
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), ungated(4))
    await stays_unbound(api, namespace)  # three 4-GPU nodes for four 4-GPU pods: none
    # KAI's own verdict, from its pods' PodScheduled condition onto the PodGang.
    unplaced = await eventually(
        partial(podgangs, api, namespace),
        lambda g: condition(g["trainer-0"], labels.SCHEDULED).get("reason") == "Unschedulable",
    )
    verdict = condition(unplaced["trainer-0"], labels.SCHEDULED)
    assert verdict["status"] == "False", verdict
    assert verdict["message"], verdict
    await nodes.add(1, gpus=4)
    await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 4, PLACED_WITHIN
    )
    gangs = await eventually(
        partial(podgangs, api, namespace),
        lambda g: g["trainer-0"].get("status", {}).get("phase") == "Running",
    )
    assert gangs["trainer-0"]["status"]["phase"] == "Running"


async def test_a_queue_with_room_for_one_gang_keeps_the_second_waiting_whole(
    api: ApiClient, namespace: str, nodes: Nodes, up: Up
) -> None:
    small = await ensure_queue(api, "e2e-kai-one-gang", gpu_limit=8)
    await nodes.add(4, gpus=4)  # room for both gangs on the nodes: the queue is the limit
    first = kai_workload(namespace, "first", nodes, gpu_clique("w", 2, 2, gpus=4), queue=small)
    await server_side_apply(api, first, namespace)
    await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 2, PLACED_WITHIN
    )
    second = kai_workload(namespace, "second", nodes, gpu_clique("w", 2, 2, gpus=4), queue=small)
    await server_side_apply(api, second, namespace)
    await eventually(partial(pods, api, namespace), ungated(4))
    await stays_unbound(api, namespace, "second-")
    # KAI's PodGroup says why, the backend carries it onto the PodGang, `gangway why` says
    # it in the words every backend uses: over the queue's quota, in KAI's own numbers.
    gang = await gang_where(
        api, namespace, "second-0", lambda g: scheduled(g).get("reason") == "OverQuota"
    )
    assert "OverLimit" in scheduled(gang)["message"], scheduled(gang)
    assert condition(gang, "SchedulerBlocked")["status"] == "True"
    said = gang_said(await why_of(up, f"{namespace}/second"), "second-0")
    assert said["reason"] == "OverQuota", said
    assert "OverLimit" in said["message"], said

    await kube_of(api).request("DELETE", PODCLIQUESETS.path(namespace, "first"))
    found = await eventually(
        partial(pods, api, namespace),
        lambda f: set(f) == {"second-0-w-0", "second-0-w-1"} and running(f.values()) == 2,
        PLACED_WITHIN,
    )
    assert bound(found.values()) == 2
    placed = await gang_where(
        api, namespace, "second-0", lambda g: condition(g, "SchedulerBlocked")["status"] == "False"
    )
    assert scheduled(placed)["reason"] == "PodGangScheduled"


async def test_a_queue_that_does_not_exist_is_refused_at_admission(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    pcs = kai_workload(namespace, "lost", nodes, gpu_clique("w", 1, 1, gpus=1), queue="no-such")
    refused = await create(api, pcs, namespace)
    assert 'KAI Queue "no-such" does not exist in the cluster' in refused, refused
    assert f"metadata.labels[{QUEUE_LABEL}]" in refused


async def kai_topology_levels(api: ApiClient) -> list[str]:
    made = await kube_of(api).read(TOPOLOGIES, "", TOPOLOGY)
    assert made is not None
    assert made["metadata"]["ownerReferences"][0]["kind"] == "ClusterTopologyBinding"
    return [level["nodeLabel"] for level in made["spec"]["levels"]]


async def test_required_rack_packing_keeps_the_gang_in_one_rack(
    api: ApiClient, namespace: str, nodes: Nodes, queue: str
) -> None:
    """Two racks of four nodes; two nodes of the first rack are taken, so a gang of four
    whole nodes fits only in the second. Without the constraint KAI would use the room
    left in the first rack too."""
    await two_racks_the_first_half_taken(api, namespace, nodes)
    pcs = packed(
        kai_workload(namespace, "packed", nodes, gpu_clique("w", 4, 4, gpus=4)), required="rack"
    )
    await server_side_apply(api, pcs, namespace)
    gang = await running_pods_of(api, namespace, "packed", 4)
    assert await racks_of(api, gang) == {"rack-1"}
    assert await kai_topology_levels(api) == [ZONE_LABEL, BLOCK_LABEL, RACK_LABEL]


async def test_preferred_rack_packing_gives_way_when_no_rack_holds_the_gang(
    api: ApiClient, namespace: str, nodes: Nodes, queue: str
) -> None:
    await topology(api)
    await nodes.add(8, gpus=4)  # racks of four nodes; the gang needs six
    pcs = packed(
        kai_workload(namespace, "spread", nodes, gpu_clique("w", 6, 6, gpus=4)), preferred="rack"
    )
    await server_side_apply(api, pcs, namespace)
    found = await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 6, PLACED_WITHIN
    )
    assert len(await racks_of(api, found)) == 2


async def test_the_priority_class_reaches_kai(
    api: ApiClient, namespace: str, nodes: Nodes, queue: str
) -> None:
    """The PodGang's priorityClassName is the PodGroup's, and KAI schedules by it: with room
    for one gang, the higher-priority gang submitted second is the one that runs."""
    for name, value in (("e2e-kai-low", 10), ("e2e-kai-high", 1000)):
        await ensure_priority_class(api, name, value)
    await nodes.add(2, gpus=4)
    low = kai_workload(namespace, "low", nodes, gpu_clique("w", 2, 2, gpus=4))
    low["spec"]["template"]["priorityClassName"] = "e2e-kai-low"
    high = kai_workload(namespace, "high", nodes, gpu_clique("w", 2, 2, gpus=4))
    high["spec"]["template"]["priorityClassName"] = "e2e-kai-high"
    await server_side_apply(api, low, namespace)
    await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 2, PLACED_WITHIN
    )
    await server_side_apply(api, high, namespace)
    podgroup: dict[str, Any] = {"apiVersion": PODGROUPS.api_version, "kind": "PodGroup"}
    podgroup["metadata"] = {"name": "high-0"}
    group = await eventually(partial(live, api, podgroup, namespace), bool, PLACED_WITHIN)
    assert group["spec"]["priorityClassName"] == "e2e-kai-high"

    def high_runs_low_waits(found: dict[str, dict[str, Any]]) -> bool:
        on_nodes = {n for n, p in found.items() if p["spec"].get("nodeName")}
        return on_nodes == {"high-0-w-0", "high-0-w-1"} and running(found.values()) == 2

    # KAI preempts the low gang (preemptible: priority below 100) for the high one, and
    # marks its victims: the low gang says Preempted, naming the workload that took its room.
    await eventually(partial(pods, api, namespace), high_runs_low_waits, PLACED_WITHIN)
    said = await eventually(
        partial(podgangs, api, namespace),
        lambda g: condition(g.get("low-0", {}), labels.SCHEDULED).get("reason") == "Preempted",
        PLACED_WITHIN,
    )
    assert (
        "was preempted by higher priority workload"
        in (condition(said["low-0"], labels.SCHEDULED)["message"])
    )


async def test_a_scaling_group_rolls_two_replicas_at_a_time_with_max_unavailable_2(
    api: ApiClient, namespace: str, nodes: Nodes, queue: str
) -> None:
    await rolled_within_its_budget(api, namespace, nodes, kai_workload)


async def test_a_gang_made_again_under_its_names_is_not_taken_for_the_old_one(
    api: ApiClient, namespace: str, nodes: Nodes, queue: str
) -> None:
    await made_again_under_its_names_stays_whole(api, namespace, nodes, kai_workload)
