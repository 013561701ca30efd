"""Both backends enabled, default-scheduler with gang scheduling: GREP-375's flow with every
service in its own process, from a PodCliqueSet to ungated pods the scheduler may place."""

from __future__ import annotations

from functools import partial
from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient

from gangway_backend_kai.translate import POD_GROUP_ANNOTATION, QUEUE_LABEL
from gangway_contracts import labels
from gangway_localcluster.controlplane import ControlPlane
from gangway_runtime.status import PODCLIQUESETS
from tests.support.admission import create
from tests.support.backends import live
from tests.support.kai import ensure_queue
from tests.support.kube import kube_of, server_side_apply
from tests.support.manifests import on_scheduler
from tests.support.podgang import condition, gated, live_when, podgangs, pods, workload
from tests.support.store import eventually

CONFIG = {
    "profiles": [
        {"name": "default-scheduler", "default": True, "config": {"gangScheduling": True}},
        {"name": "kai-scheduler"},
    ]
}
DENIED = 'admission webhook "podcliquesets.gangway.dev" denied the request: '
# The garbage collector finds CRDs installed after it started on its next discovery (~30 s).
GC_WITHIN = 90.0


def kind(api_version: str, kind_: str, name: str) -> dict[str, Any]:
    return {"apiVersion": api_version, "kind": kind_, "metadata": {"name": name}}


def workload_object(cp: ControlPlane, name: str) -> dict[str, Any]:
    return kind(f"scheduling.k8s.io/{cp.workload_api_version}", "Workload", name)


def all_ungated(count: int) -> Any:
    return lambda found: len(found) == count and not any(map(gated, found.values()))


async def test_default_scheduler_gets_a_workload_per_gang_and_pods_in_its_groups(
    api: ApiClient, namespace: str, e2e_cluster: ControlPlane
) -> None:
    await server_side_apply(api, workload(namespace, "trainer"), namespace)
    found = await eventually(partial(pods, api, namespace), all_ungated(4))
    gang = (await podgangs(api, namespace))["trainer-0"]
    assert condition(gang, labels.INITIALIZED)["status"] == "True"
    made = await live(api, workload_object(e2e_cluster, "trainer-0"), namespace)
    owner = made["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["uid"]) == ("PodGang", gang["metadata"]["uid"])
    # Prepared by backend-kube: 1.36 and 1.37 name the PodGroup, 1.35 the Workload's group.
    joins = "workloadRef" if e2e_cluster.workload_api_version == "v1alpha1" else "schedulingGroup"
    for pod in found.values():
        assert pod["spec"][joins]
        assert pod["spec"].get("schedulerName", "default-scheduler") == "default-scheduler"
    pcs = await live_when(
        api, workload(namespace, "trainer"), namespace, "PodGangsReady", status="True"
    )
    # Its pods select no node pool: other tests' nodes may or may not be there to take them.
    [status] = pcs["status"]["podGangStatuses"]
    assert status["name"] == "trainer-0"
    assert status["phase"] in ("Pending", "Starting", "Running")


async def test_kai_scheduler_gets_a_podgroup_in_the_queue_and_pods_that_join_it(
    api: ApiClient, namespace: str
) -> None:
    await ensure_queue(api, "e2e")
    pcs = workload(namespace, "serving")
    pcs["metadata"]["labels"][QUEUE_LABEL] = "e2e"
    on_scheduler(pcs, "kai-scheduler")
    await server_side_apply(api, pcs, namespace)
    found = await eventually(partial(pods, api, namespace), all_ungated(4))
    group = await live(api, kind("scheduling.run.ai/v2alpha2", "PodGroup", "serving-0"), namespace)
    assert (group["spec"]["queue"], group["spec"]["minMember"]) == ("e2e", 4)
    for pod in found.values():
        assert pod["spec"]["schedulerName"] == "kai-scheduler"
        assert pod["metadata"]["annotations"][POD_GROUP_ANNOTATION] == "serving-0"


async def test_scaling_adds_and_removes_whole_gangs_with_their_workloads(
    api: ApiClient, namespace: str, e2e_cluster: ControlPlane
) -> None:
    pcs = workload(namespace, "trainer")
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), all_ungated(4))
    pcs["spec"]["replicas"] = 2
    await server_side_apply(api, pcs, namespace)
    found = await eventually(partial(pods, api, namespace), all_ungated(8))
    assert {p["metadata"]["labels"][labels.PODGANG] for p in found.values()} == {
        "trainer-0",
        "trainer-1",
    }
    assert await live(api, workload_object(e2e_cluster, "trainer-1"), namespace)

    pcs["spec"]["replicas"] = 1
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(podgangs, api, namespace), lambda g: sorted(g) == ["trainer-0"])
    found = await eventually(partial(pods, api, namespace), lambda f: len(f) == 4, GC_WITHIN)
    assert all(name.startswith("trainer-0-") for name in found)
    gone = partial(live, api, workload_object(e2e_cluster, "trainer-1"), namespace)
    await eventually(gone, lambda w: not w, GC_WITHIN)
    assert await live(api, workload_object(e2e_cluster, "trainer-0"), namespace)


async def test_deleting_the_podcliqueset_deletes_gangs_workloads_and_pods(
    api: ApiClient, namespace: str, e2e_cluster: ControlPlane
) -> None:
    await server_side_apply(api, workload(namespace, "trainer"), namespace)
    await eventually(partial(pods, api, namespace), all_ungated(4))
    await kube_of(api).request("DELETE", PODCLIQUESETS.path(namespace, "trainer"))
    await eventually(partial(podgangs, api, namespace), lambda g: not g, GC_WITHIN)
    await eventually(partial(pods, api, namespace), lambda f: not f, GC_WITHIN)
    gone = partial(live, api, workload_object(e2e_cluster, "trainer-0"), namespace)
    await eventually(gone, lambda w: not w, GC_WITHIN)


async def test_the_client_reads_why_admission_refused(api: ApiClient, namespace: str) -> None:
    volcano = workload(namespace, "volcano")
    on_scheduler(volcano, "volcano")
    assert await create(api, volcano, namespace) == (
        f"HTTP 422 Invalid: {DENIED}spec.template.cliques[0].spec.podSpec.schedulerName: "
        '"volcano" is not an enabled scheduler backend (enabled: default-scheduler, '
        "kai-scheduler)"
    )
    no_queue = workload(namespace, "no-queue")
    no_queue["metadata"]["labels"][QUEUE_LABEL] = "no-such-queue"
    on_scheduler(no_queue, "kai-scheduler")
    assert await create(api, no_queue, namespace) == (
        f"HTTP 422 Invalid: {DENIED}metadata.labels[kai.scheduler/queue]: "
        'KAI Queue "no-such-queue" does not exist in the cluster'
    )
    too_many = workload(namespace, "too-many")
    too_many["spec"]["template"]["cliques"][0]["spec"]["minAvailable"] = 99
    message = await create(api, too_many, namespace)
    assert message.startswith(f"HTTP 422 Invalid: {DENIED}spec.template.cliques[0].spec"), message
    assert await kube_of(api).read(PODCLIQUESETS, namespace, "volcano") is None  # none stored
