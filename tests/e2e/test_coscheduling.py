"""scheduler-plugins' real scheduler, with the Coscheduling plugin, places what
backend-coscheduling writes, on kwok nodes: a gang binds whole or not at all, two gangs with
room for one do not split it, scaling and deleting take the PodGroups along, and what one
PodGroup cannot express is said. No pod is bound by hand."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient

from gangway_backend_coscheduling.translate import POD_GROUP_LABEL, PODGROUPS
from gangway_contracts import labels
from gangway_localcluster.coscheduling import SCHEDULER_NAME
from tests.e2e.conftest import Nodes
from tests.e2e.workloads import (
    bound,
    gpu_clique,
    gpu_workload,
    gpu_workload_on,
    made_again_under_its_names_stays_whole,
    named,
    one_of_two_runs_whole,
    running,
    scaled_up_down_and_deleted,
    ungated,
    whole_gang,
)
from tests.support.admission import create
from tests.support.backends import live
from tests.support.kube import server_side_apply
from tests.support.manifests import on_scheduler
from tests.support.podgang import condition, live_when, podgangs, pods
from tests.support.store import eventually

# Pods name the scheduler (scheduler-plugins-scheduler); the profile is found by it.
CONFIG = {
    "profiles": [
        {"name": "coscheduling", "default": True, "config": {"scheduleTimeoutSeconds": 10}}
    ]
}
PLACED_WITHIN = 60.0


def coscheduled(pcs: dict[str, Any]) -> dict[str, Any]:
    return on_scheduler(pcs, SCHEDULER_NAME)


def podgroup(name: str) -> dict[str, Any]:
    return named(PODGROUPS, "PodGroup", name)


async def test_a_gang_that_does_not_fit_gets_no_pod_until_it_does(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await nodes.add(3, gpus=4)
    pcs = coscheduled(whole_gang(namespace, "trainer", nodes, 4, 4))
    await server_side_apply(api, pcs, namespace)
    found = await eventually(partial(pods, api, namespace), ungated(4))
    for pod in found.values():
        assert pod["spec"]["schedulerName"] == SCHEDULER_NAME
        assert pod["metadata"]["labels"][POD_GROUP_LABEL] == "trainer-0"
    made = await live(api, podgroup("trainer-0"), namespace)
    assert made["spec"] == {"minMember": 4, "scheduleTimeoutSeconds": 10}
    gang = (await podgangs(api, namespace))["trainer-0"]
    owner = made["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"]) == ("PodGang", gang["metadata"]["uid"])
    # Three 4-GPU nodes for four 4-GPU pods: the scheduler tries, and binds none.
    unplaced = await eventually(
        partial(podgangs, api, namespace),
        lambda g: condition(g["trainer-0"], labels.SCHEDULED).get("status") == "False",
        PLACED_WITHIN,
    )
    assert unplaced["trainer-0"]["status"]["phase"] == "Pending"
    assert bound((await pods(api, namespace)).values()) == 0

    await nodes.add(1, gpus=4)
    placed = await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 4, PLACED_WITHIN
    )
    assert len({p["spec"]["nodeName"] for p in placed.values()}) == 4


async def test_two_gangs_with_room_for_one_one_runs_whole_the_other_not_at_all(
    api: ApiClient, namespace: str, nodes: Nodes, tmp_path: Path
) -> None:
    await nodes.add(4, gpus=4)
    pcs = coscheduled(whole_gang(namespace, "trainer", nodes, 4, 4, replicas=2))
    await one_of_two_runs_whole(api, namespace, pcs, nodes, tmp_path)


async def test_scaling_and_deleting_take_the_podgroups_along(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await nodes.add(2, gpus=4)
    pcs = coscheduled(whole_gang(namespace, "trainer", nodes, 2, 1))
    await scaled_up_down_and_deleted(api, namespace, pcs, podgroup, PLACED_WITHIN)


async def test_a_shared_minimum_is_admitted_said_and_the_gang_placed(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    """A leader (1 of 1) and workers (2 of 3): one PodGroup of minMember 3 cannot say that
    the third worker must not stand in for the leader. The PodCliqueSet's condition says so;
    with room for all, the gang runs."""
    await nodes.add(4, gpus=4)
    pcs = coscheduled(
        gpu_workload(
            namespace,
            "serve",
            nodes,
            gpu_clique("leader", 1, 1, gpus=4),
            gpu_clique("worker", 3, 2, gpus=4),
        )
    )
    await server_side_apply(api, pcs, namespace)
    said = await live_when(api, pcs, namespace, "FeaturesSupported", status="False")
    verdict = condition(said, "FeaturesSupported")
    assert verdict["reason"] == "UnsupportedFeature"
    assert "spec.template.cliques[1].spec.minAvailable: PerPodGroupMinimum" in verdict["message"]
    made = await live(api, podgroup("serve-0"), namespace)
    assert made["spec"]["minMember"] == 3
    await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 4, PLACED_WITHIN
    )


async def test_required_packing_is_refused_naming_the_field(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    pcs = coscheduled(whole_gang(namespace, "packed", nodes, 2, 1))
    pcs["spec"]["template"]["topologyConstraint"] = {"pack": {"required": "rack"}}
    refused = await create(api, pcs, namespace)
    assert "spec.template.topologyConstraint.pack.required" in refused, refused
    assert "coscheduling has no topology-aware gang placement" in refused


async def test_a_gang_made_again_under_its_names_is_not_taken_for_the_old_one(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await made_again_under_its_names_stays_whole(
        api, namespace, nodes, gpu_workload_on(SCHEDULER_NAME)
    )
