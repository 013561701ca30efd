"""Koordinator's real koord-scheduler places what backend-koordinator writes, on kwok nodes: a
PodGang's roles are one GangGroup (one role fitting alone binds nothing), spare pods that hold
a group back are said at admission, two PodGangs with room for one do not split it, and
scaling and deleting take the gangs along. No pod is bound by hand."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient

from gangway_backend_koordinator.translate import GROUPS, MODE, PODGROUPS
from gangway_localcluster.koordinator import SCHEDULER_NAME
from tests.e2e.conftest import Nodes
from tests.e2e.workloads import (
    bound_by_clique,
    gpu_workload_on,
    leader_and_workers,
    made_again_under_its_names_stays_whole,
    named,
    one_of_two_runs_whole,
    running,
    scaled_up_down_and_deleted,
    stays_unbound,
    ungated,
    whole_gang,
)
from tests.support.backends import live
from tests.support.kube import server_side_apply
from tests.support.manifests import on_scheduler
from tests.support.podgang import condition, live_when, pods
from tests.support.store import eventually

# Pods name koord-scheduler; the profile is found by it.
CONFIG = {"profiles": [{"name": "koordinator", "default": True}]}
PLACED_WITHIN = 60.0
# Seen once in a cold run (2026-11-26): with room for the whole group at last, koord-scheduler
# v1.8.0 bound the workers and rejected the leader in the same moment ("member ... is
# unschedulable"), and did not try the leader again within 60 s; with no further cluster
# event, kube-scheduler's queue retries an unschedulable pod after 5 minutes at the latest.
GROUP_PLACED_WITHIN = 330.0


def koordinated(pcs: dict[str, Any]) -> dict[str, Any]:
    return on_scheduler(pcs, SCHEDULER_NAME)


def podgroup(name: str) -> dict[str, Any]:
    return named(PODGROUPS, "PodGroup", name)


async def test_one_role_fitting_alone_binds_nothing_until_the_group_fits(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await nodes.add(2, gpus=4)  # room for the leader, or for both workers: not for all three
    pcs = leader_and_workers(namespace, nodes, SCHEDULER_NAME)
    await server_side_apply(api, pcs, namespace)
    found = await eventually(partial(pods, api, namespace), ungated(3))
    for pod in found.values():
        assert pod["spec"]["schedulerName"] == SCHEDULER_NAME
    members = [f"{namespace}/serve-0-leader", f"{namespace}/serve-0-worker"]
    for name, minimum in (("serve-0-leader", 1), ("serve-0-worker", 2)):
        gang = await live(api, podgroup(name), namespace)
        assert gang["spec"]["minMember"] == minimum
        assert json.loads(gang["metadata"]["annotations"][GROUPS]) == members
        assert gang["metadata"]["annotations"][MODE] == "Strict"
    await stays_unbound(api, namespace)

    await nodes.add(1, gpus=4)
    placed = await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 3, GROUP_PLACED_WITHIN
    )
    assert len({p["spec"]["nodeName"] for p in placed.values()}) == 3


async def test_spare_pods_are_said_and_the_group_binds_once_every_pod_fits(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    """Three leaders (one needed) and two workers (both) on room for three. A summed minimum
    (three) would let three leaders bind; each role's own minimum does not, and no pod binds.
    Each role's minimum would fit, but koord-scheduler v1.8.0 tries the GangGroup's pods
    leaders first, spare leaders take the workers' room, and the group is rejected and tried
    again. Admission said so; once all five fit, every one binds."""
    await nodes.add(3, gpus=4)
    pcs = leader_and_workers(namespace, nodes, SCHEDULER_NAME, leaders=3)
    await server_side_apply(api, pcs, namespace)
    said = await live_when(api, pcs, namespace, "FeaturesSupported", status="False")
    assert (
        "spec.template.cliques[0].spec.minAvailable: ElasticGangGroup"
        in condition(said, "FeaturesSupported")["message"]
    )
    await eventually(partial(pods, api, namespace), ungated(5))
    await stays_unbound(api, namespace)

    await nodes.add(2, gpus=4)
    placed = await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 5, PLACED_WITHIN
    )
    assert bound_by_clique(placed) == {"serve-0-leader": 3, "serve-0-worker": 2}


async def test_two_gangs_with_room_for_one_one_runs_whole_the_other_not_at_all(
    api: ApiClient, namespace: str, nodes: Nodes, tmp_path: Path
) -> None:
    await nodes.add(4, gpus=4)
    pcs = koordinated(whole_gang(namespace, "trainer", nodes, 4, 4, replicas=2))
    await one_of_two_runs_whole(api, namespace, pcs, nodes, tmp_path)


async def test_scaling_and_deleting_take_the_gangs_along(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    await nodes.add(2, gpus=4)
    pcs = koordinated(whole_gang(namespace, "trainer", nodes, 2, 1))
    await scaled_up_down_and_deleted(
        api, namespace, pcs, lambda gang: podgroup(f"{gang}-worker"), PLACED_WITHIN
    )


async def test_a_gang_made_again_under_its_names_is_not_taken_for_the_old_one(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    """Koordinator's gangs are once-satisfied by default: a gang made again under the old
    gang's PodGroup name would be taken as satisfied and its pods bound one by one (seen
    here before incarnations). The new gang's PodGroup has a name of its own; the old
    one's is gone."""
    # Once the third node comes, koord-scheduler may bind two pods and not try the third
    # again for minutes (GROUP_PLACED_WITHIN; seen in a warm run 2026-11-29).
    await made_again_under_its_names_stays_whole(
        api, namespace, nodes, gpu_workload_on(SCHEDULER_NAME), within=GROUP_PLACED_WITHIN
    )
    assert await live(api, podgroup("again-0-worker-i1"), namespace)
    await eventually(partial(live, api, podgroup("again-0-worker"), namespace), lambda g: not g)
