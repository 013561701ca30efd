"""default-scheduler with gang scheduling off, every service in its own process: the gang is
still planned, created and initialized, but no Workload is made and pods go to the scheduler
one by one."""

from __future__ import annotations

from functools import partial

import msgspec
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_contracts import labels
from gangway_localcluster.controlplane import ControlPlane
from tests.e2e.conftest import Nodes
from tests.e2e.workloads import PLACED_WITHIN, bound, gang_where, scheduled, whole_gang
from tests.support.kube import kube_of, server_side_apply
from tests.support.podgang import condition, gated, podgangs, pods, workload
from tests.support.store import eventually

CONFIG = {
    "profiles": [
        {"name": "default-scheduler", "default": True, "config": {"gangScheduling": False}}
    ]
}


async def test_pods_are_ungated_without_a_workload(
    api: ApiClient, namespace: str, e2e_cluster: ControlPlane
) -> None:
    await server_side_apply(api, workload(namespace, "trainer"), namespace)
    found = await eventually(
        partial(pods, api, namespace),
        lambda f: len(f) == 4 and not any(map(gated, f.values())),
    )
    gang = (await podgangs(api, namespace))["trainer-0"]
    assert condition(gang, labels.INITIALIZED)["status"] == "True"
    for pod in found.values():
        assert "schedulingGroup" not in pod["spec"]
    version = e2e_cluster.workload_api_version  # served, yet not used with gang scheduling off
    listed = await kube_of(api).request(
        "GET", f"/apis/scheduling.k8s.io/{version}/namespaces/{namespace}/workloads"
    )
    assert msgspec.json.decode(listed)["items"] == []


async def test_without_the_gang_the_scheduler_places_what_fits(
    api: ApiClient, namespace: str, nodes: Nodes
) -> None:
    """The contrast that shows the gang mattered: the workload that gets no pod at all with
    gang scheduling on (tests/e2e/test_placement.py) is placed in part without it."""
    await nodes.add(3, gpus=4)
    await server_side_apply(api, whole_gang(namespace, "trainer", nodes, 4, 4), namespace)
    found = await eventually(
        partial(pods, api, namespace),
        lambda f: len(f) == 4 and bound(f.values()) == 3,
        PLACED_WITHIN,
    )
    # Part of the gang placed: below its minimum, which podgroup and how far, in the
    # scheduler's words about the rest.
    gang = await gang_where(
        api, namespace, "trainer-0", lambda g: scheduled(g).get("reason") == "BelowMinCount"
    )
    assert scheduled(gang)["message"].startswith("trainer-0-worker 3 of minimum 4 placed: ")
    assert gang["status"]["phase"] in ("Starting", "Running")
    assert bound(found.values()) == 3
