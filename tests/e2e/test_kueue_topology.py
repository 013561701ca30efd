"""Kueue choosing the domains too (``kueue.topology``): real Kueue (built from its Go
module) with a Topology over the kwok nodes' labels admits a gang only where one rack has
room for all of it, the Kueue stage writes each pod's domain onto it before its gate lifts,
and kube-scheduler binds it there. A leader of one pod and its workers are kept in one rack
as Kueue keeps a LeaderWorkerSet's; a gang no rack has room for waits whole, Unschedulable
in Kueue's words, until one does; a pod deleted from a running gang comes back to the
domain its gang holds. No pod is bound by hand."""

from __future__ import annotations

from functools import partial
from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient

from gangway_contracts import kueue, kueue_topology, labels
from gangway_localcluster import kueue as local_kueue
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.nodes import HOSTNAME_LABEL, RACK_LABEL
from tests.e2e.conftest import Nodes
from tests.e2e.test_kueue import PLACED_WITHIN, WORKLOADS_DOC, queued
from tests.e2e.workloads import (
    gpu_clique,
    gpu_workload,
    of_gang,
    packed,
    racks_of,
    running,
    running_pods_of,
    two_racks_the_first_half_taken,
)
from tests.support.backends import live
from tests.support.kube import delete_object, ensure_priority_class, server_side_apply
from tests.support.podgang import condition, gated, podgangs, pods
from tests.support.store import eventually

CONFIG = {"profiles": [{"name": "default-scheduler", "default": True}]}
OPERATOR = {"scheduler": CONFIG, "kueue": {"enabled": True, "topology": True}}


def racked_quota(cp: ControlPlane, namespace: str, nodes: Nodes, gpus: int) -> str:
    """A Topology over the node labels (zone, block, rack, host), a flavor Kueue chooses
    domains in over this test's nodes, a ClusterQueue of ``gpus`` GPUs of it and a
    LocalQueue in ``namespace``; the LocalQueue's name."""
    name = f"tas-{nodes.pool}"
    for collection, made in local_kueue.flavor_of_domains(name, nodes.selector):
        cp.create(collection, made)
    quota = {"nvidia.com/gpu": str(gpus)}
    cp.create(local_kueue.CLUSTER_QUEUES, local_kueue.cluster_queue(name, quota, flavor=name))
    cp.create(*local_kueue.local_queue(namespace, "team", name))
    return "team"


def in_a_rack(namespace: str, name: str, nodes: Nodes, queue: str, *cliques: Any) -> dict[str, Any]:
    return queued(packed(gpu_workload(namespace, name, nodes, *cliques), required="rack"), queue)


def carry_their_domain(found: list[dict[str, Any]]) -> None:
    """Each pod runs on the node Kueue chose for it (its Topology ends at the hostname: its
    assignment names nodes), and carries Kueue's annotation of a required rack."""
    for pod in found:
        chosen = pod["spec"]["nodeSelector"][HOSTNAME_LABEL]
        assert chosen == pod["spec"]["nodeName"], pod["spec"]["nodeSelector"]
        assert pod["metadata"]["annotations"][kueue_topology.REQUIRED] == RACK_LABEL


async def test_kueue_chooses_the_rack_with_room_and_holds_a_gang_no_rack_fits(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    """Two racks of four whole-GPU nodes, two of the first taken. A leader and three
    workers (one podSet group) go to the second rack, the only one with four nodes free;
    then a gang of three, within quota, fits no rack and waits whole; deleting the first
    frees the second rack for it."""
    await two_racks_the_first_half_taken(api, namespace, nodes)
    queue = racked_quota(e2e_cluster, namespace, nodes, gpus=32)
    first = in_a_rack(
        namespace,
        "serve",
        nodes,
        queue,
        gpu_clique("leader", 1, 1, gpus=4),
        gpu_clique("workers", 3, 3, gpus=4),
    )
    await server_side_apply(api, first, namespace)
    placed = await running_pods_of(api, namespace, "serve", 4)
    assert await racks_of(api, placed) == {"rack-1"}
    carry_their_domain(list(placed.values()))
    said = condition((await podgangs(api, namespace))["serve-0"], kueue.QUEUE_ADMITTED)
    assert said["reason"] == kueue_topology.TOPOLOGY_ASSIGNED, said
    assert said["message"].startswith(f"admitted by Kueue in ClusterQueue tas-{nodes.pool}, in "), (
        said
    )
    assert HOSTNAME_LABEL in said["message"], said

    second = in_a_rack(namespace, "three", nodes, queue, gpu_clique("w", 3, 3, gpus=4))
    await server_side_apply(api, second, namespace)
    held = await eventually(
        partial(podgangs, api, namespace),
        lambda g: (
            "three-0" in g
            and condition(g["three-0"], labels.SCHEDULED).get("reason") == "Unschedulable"
        ),
        PLACED_WITHIN,
    )
    words = condition(held["three-0"], labels.SCHEDULED)["message"]
    assert words.startswith("Kueue: "), words
    assert 'topology "' in words, words
    waiting = of_gang(await pods(api, namespace), "three-0")
    assert len(waiting) == 3
    assert all(gated(p) for p in waiting), "part of the held gang let go"

    made = await live(api, {**WORKLOADS_DOC, "metadata": {"name": "serve-0"}}, namespace)
    asked = [podset["topologyRequest"] for podset in made["spec"]["podSets"]]
    assert asked == [{"required": RACK_LABEL, "podSetGroupName": "gang"}] * 2, asked

    await delete_object(api, first, namespace)
    moved = await running_pods_of(api, namespace, "three", 3)
    assert await racks_of(api, moved) == {"rack-1"}
    carry_their_domain(list(moved.values()))


async def test_a_pod_made_again_goes_back_to_its_gangs_domain(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    """A running gang's pod deleted: podgang makes it again, gated; the stage gives it the
    node Kueue's assignment has room on (the one it left), and it runs there."""
    await two_racks_the_first_half_taken(api, namespace, nodes)
    queue = racked_quota(e2e_cluster, namespace, nodes, gpus=32)
    pcs = in_a_rack(namespace, "solo", nodes, queue, gpu_clique("w", 3, 3, gpus=4))
    await server_side_apply(api, pcs, namespace)
    placed = await running_pods_of(api, namespace, "solo", 3)
    victim, where = next(iter(placed.items()))
    await delete_object(
        api, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": victim}}, namespace
    )
    back = await eventually(
        partial(pods, api, namespace),
        lambda f: (
            victim in f
            and f[victim]["metadata"]["uid"] != where["metadata"]["uid"]
            and running([f[victim]]) == 1
        ),
        PLACED_WITHIN,
    )
    assert back[victim]["spec"]["nodeName"] == where["spec"]["nodeName"]
    carry_their_domain([back[victim]])


async def test_a_gang_kueue_preempts_comes_back_bare_and_its_rival_takes_the_rack(
    api: ApiClient, namespace: str, nodes: Nodes, e2e_cluster: ControlPlane
) -> None:
    """A low gang holds the only rack with room; a high one in the same queue makes Kueue
    preempt it: the low gang's pods are made again gated and without the domain of the
    admission taken back (a new admission gives new ones), the high gang runs in the rack."""
    await ensure_priority_class(api, "e2e-kueue-low", 50)
    await ensure_priority_class(api, "e2e-kueue-high", 100_000)
    await two_racks_the_first_half_taken(api, namespace, nodes)
    queue = racked_quota(e2e_cluster, namespace, nodes, gpus=16)
    low = in_a_rack(namespace, "low", nodes, queue, gpu_clique("w", 3, 3, gpus=4))
    low["spec"]["template"]["priorityClassName"] = "e2e-kueue-low"
    high = in_a_rack(namespace, "high", nodes, queue, gpu_clique("w", 3, 3, gpus=4))
    high["spec"]["template"]["priorityClassName"] = "e2e-kueue-high"
    await server_side_apply(api, low, namespace)
    await running_pods_of(api, namespace, "low", 3)
    await server_side_apply(api, high, namespace)
    placed = await running_pods_of(api, namespace, "high", 3)
    assert await racks_of(api, placed) == {"rack-1"}
    carry_their_domain(list(placed.values()))
    back = await eventually(
        partial(pods, api, namespace),
        lambda f: len(of_gang(f, "low-0")) == 3 and all(gated(p) for p in of_gang(f, "low-0")),
        PLACED_WITHIN,
    )
    for pod in of_gang(back, "low-0"):
        assert not kueue_topology.given(pod["metadata"].get("annotations") or {}), pod
        assert HOSTNAME_LABEL not in (pod["spec"].get("nodeSelector") or {}), pod
