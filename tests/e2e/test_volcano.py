"""Volcano's real vc-scheduler places what backend-volcano writes, on kwok nodes: each role's
minimum or nothing, spare pods never in the way of another role's minimum, a queue at its
capability holding a second gang back whole, two gangs with room for one not split, and
scaling and deleting taking the PodGroups along. No pod is bound by hand."""

from __future__ import annotations

from collections.abc import AsyncIterator
from functools import partial
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_backend_volcano.translate import PODGROUPS, QUEUE_KEY, QUEUES, TASK_SPEC
from gangway_contracts import labels
from gangway_localcluster.volcano import DEFAULT_QUEUE, SCHEDULER_NAME, capped_queue
from tests.e2e.conftest import Nodes
from tests.e2e.workloads import (
    gang_where,
    gpu_workload_on,
    leader_and_workers,
    made_again_under_its_names_stays_whole,
    named,
    of_gang,
    one_of_two_runs_whole,
    rolled_within_its_budget,
    running,
    scaled_up_down_and_deleted,
    scheduled,
    stays_unbound,
    ungated,
    whole_gang,
)
from tests.support.backends import live
from tests.support.kube import kube_of, merge_patch, server_side_apply
from tests.support.manifests import on_scheduler
from tests.support.podgang import pods
from tests.support.store import eventually

# Pods name volcano; the profile is found by it.
CONFIG = {"profiles": [{"name": "volcano", "default": True}]}
PLACED_WITHIN = 60.0


def on_volcano(pcs: dict[str, Any]) -> dict[str, Any]:
    return on_scheduler(pcs, SCHEDULER_NAME)


def podgroup(name: str) -> dict[str, Any]:
    return named(PODGROUPS, "PodGroup", name)


async def test_each_role_gets_its_minimum_or_nothing_binds(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await nodes.add(2, gpus=4)  # room for the leader and one worker: not for all three
    pcs = leader_and_workers(namespace, nodes, SCHEDULER_NAME)
    await server_side_apply(api, pcs, namespace)
    found = await eventually(partial(pods, api, namespace), ungated(3))
    for pod in found.values():
        assert pod["spec"]["schedulerName"] == SCHEDULER_NAME
        clique = pod["metadata"]["labels"][labels.PODCLIQUE]
        assert pod["metadata"]["annotations"][TASK_SPEC] == clique
    group = await live(api, podgroup("serve-0"), namespace)
    assert group["spec"]["minMember"] == 3
    assert group["spec"]["minTaskMember"] == {"serve-0-leader": 1, "serve-0-worker": 2}
    assert group["spec"]["queue"] == DEFAULT_QUEUE
    await stays_unbound(api, namespace)

    await nodes.add(1, gpus=4)
    placed = await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 3, PLACED_WITHIN
    )
    assert len({p["spec"]["nodeName"] for p in placed.values()}) == 3


@pytest.fixture
async def small_queue(api: ApiClient, namespace: str) -> AsyncIterator[str]:
    """A Volcano queue of this test's own that may hold 16 GPUs (four whole nodes)."""
    await kube_of(api).request("POST", QUEUES.path(), body=capped_queue(namespace, 16))
    yield namespace
    await kube_of(api).request("DELETE", QUEUES.path("", namespace))


async def test_a_queue_at_its_capability_holds_the_second_gang_back_whole(
    api: ApiClient, namespace: str, nodes: Nodes, small_queue: str
) -> None:
    """Two gangs of four 4-GPU pods with room for both on the nodes, in a queue that may
    hold one: one runs whole, the other gets no node until the queue grows, and says
    OverQuota (vc-scheduler keeps it out of the queue: its PodGroup's minResources)."""
    await nodes.add(8, gpus=4)
    pcs = on_volcano(whole_gang(namespace, "trainer", nodes, 4, 4, replicas=2))
    pcs["metadata"].setdefault("annotations", {})[QUEUE_KEY] = small_queue
    await server_side_apply(api, pcs, namespace)

    def one_gang_running(found: dict[str, dict[str, Any]]) -> bool:
        counts = sorted(running(of_gang(found, g)) for g in ("trainer-0", "trainer-1"))
        return len(found) == 8 and counts == [0, 4]

    found = await eventually(partial(pods, api, namespace), one_gang_running, PLACED_WITHIN)
    waiting = next(g for g in ("trainer-0", "trainer-1") if running(of_gang(found, g)) == 0)
    group = await live(api, podgroup(waiting), namespace)
    assert group["spec"]["queue"] == small_queue
    assert group["spec"]["minResources"] == {"nvidia.com/gpu": "16"}
    gang = await gang_where(
        api, namespace, waiting, lambda g: scheduled(g).get("reason") == "OverQuota"
    )
    assert f"out of queue {small_queue}" in scheduled(gang)["message"]
    await stays_unbound(api, namespace, f"{waiting}-")

    grow = {"spec": {"capability": {"nvidia.com/gpu": "32"}}}
    await merge_patch(api, QUEUES.path("", small_queue), grow)
    await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 8, PLACED_WITHIN
    )


async def test_two_gangs_with_room_for_one_one_runs_whole_the_other_not_at_all(
    api: ApiClient, namespace: str, nodes: Nodes, tmp_path: Path
) -> None:
    await nodes.add(4, gpus=4)
    pcs = on_volcano(whole_gang(namespace, "trainer", nodes, 4, 4, replicas=2))
    await one_of_two_runs_whole(api, namespace, pcs, nodes, tmp_path)


async def test_scaling_and_deleting_take_the_podgroups_along(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await nodes.add(2, gpus=4)
    pcs = on_volcano(whole_gang(namespace, "trainer", nodes, 2, 1))
    await scaled_up_down_and_deleted(api, namespace, pcs, podgroup, PLACED_WITHIN)


async def test_a_scaling_group_rolls_two_replicas_at_a_time_with_max_unavailable_2(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await rolled_within_its_budget(api, namespace, nodes, gpu_workload_on(SCHEDULER_NAME))


async def test_a_gang_made_again_under_its_names_is_not_taken_for_the_old_one(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await made_again_under_its_names_stays_whole(
        api, namespace, nodes, gpu_workload_on(SCHEDULER_NAME)
    )
