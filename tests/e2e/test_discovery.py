"""Names resolve as under Grove: Grove's discovery sample, shaped as Dynamo's multi-node
workers are (each worker's leader address built from its own GROVE_* variables), placed by
the default scheduler with gang scheduling on kwok nodes, and asked of a real CoreDNS (built
from its Go module, its kubernetes plugin reading the local API server). kwok gives the pods
IPs; kube-controller-manager's endpoint-slice controller fills each replica's headless
Service with them. No record is made by hand."""

from __future__ import annotations

import asyncio
from functools import partial
from typing import Any

import pytest
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_contracts import labels
from gangway_localcluster.controlplane import ControlPlane
from gangway_podgang.startup import INIT_CONTAINER
from gangway_podgang.wait_ready import parse, resolver_for, wait
from tests.e2e.conftest import Nodes
from tests.integration.watcher.conftest import labelled
from tests.support.discovery import DYNAMO_LEADER, expanded, fqdn, resolve
from tests.support.kube import kube_of, server_side_apply
from tests.support.manifests import fixture
from tests.support.podgang import pods
from tests.support.store import eventually

CONFIG = {
    "profiles": [{"name": "default-scheduler", "default": True, "config": {"gangScheduling": True}}]
}
SAMPLE = "grove/samples/user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml"
RUNNING_WITHIN = 90.0


@pytest.fixture(scope="module")
def dns_port(e2e_cluster: ControlPlane) -> int:
    return e2e_cluster.start_dns()


def dynamo_shaped(namespace: str, nodes: Nodes) -> dict[str, Any]:
    """Grove's sample with two PodCliqueSet replicas, three scaling-group replicas (one
    beyond minAvailable: a scaled gang), each worker told its leader as Dynamo's operator
    tells it."""
    pcs = labelled(fixture(SAMPLE), namespace, "multinode")
    pcs["spec"]["replicas"] = 2
    template = pcs["spec"]["template"]
    template["podCliqueScalingGroups"][0].update(replicas=3, minAvailable=2)
    for clique in template["cliques"]:
        clique["labels"] = {**clique.get("labels", {}), **pcs["metadata"]["labels"]}
        if clique["name"] == "worker":
            container = clique["spec"]["podSpec"]["containers"][0]
            container["env"] = [{"name": "LEADER_ADDRESS", "value": DYNAMO_LEADER}]
    return nodes.pin(pcs)


def placed_with_ips(count: int) -> Any:
    return lambda found: (
        len(found) == count and all(p.get("status", {}).get("podIP") for p in found.values())
    )


async def test_every_worker_resolves_its_own_leader_through_coredns(
    api: ApiClient, namespace: str, nodes: Nodes, dns_port: int
) -> None:
    await nodes.add(4, gpus=0)
    await server_side_apply(api, dynamo_shaped(namespace, nodes), namespace)
    # 2 replicas x 3 group replicas x (1 leader + 3 workers)
    found = await eventually(partial(pods, api, namespace), placed_with_ips(24), RUNNING_WITHIN)

    async def every_name_resolves() -> dict[str, list[str]]:
        return {name: await resolve(dns_port, fqdn(pod)) for name, pod in found.items()}

    # The endpoint slices follow the pods' IPs a moment later.
    names = await eventually(
        every_name_resolves,
        lambda r: all(r[n] == [found[n]["status"]["podIP"]] for n in found),
        RUNNING_WITHIN,
    )
    assert len(names) == 24

    leaders = {}
    for pod in found.values():
        if pod["metadata"]["labels"][labels.PODCLIQUE].endswith("-worker"):
            env = expanded(pod, pod["spec"]["containers"][0])
            address = env["LEADER_ADDRESS"]
            [ip] = await resolve(dns_port, address)
            leader = next(p for p in found.values() if p["status"]["podIP"] == ip)
            # Its own replica's leader, in its own scaling-group replica.
            for same in (labels.PCS_REPLICA_INDEX, labels.SCALING_GROUP_REPLICA_INDEX):
                assert leader["metadata"]["labels"][same] == pod["metadata"]["labels"][same]
            assert leader["metadata"]["labels"][labels.PODCLIQUE].endswith("-leader")
            leaders[address] = ip
    # Six leaders (2 replicas x 3 group replicas), each a different pod.
    assert len(leaders) == 6
    assert len(set(leaders.values())) == 6


def ready(pod: dict[str, Any], ready: bool) -> dict[str, Any]:
    """A status patch that sets the pod's Ready condition (kwok leaves a Running pod's
    conditions alone: its stages only make Pending pods ready)."""
    conditions = [c for c in pod["status"]["conditions"] if c["type"] != "Ready"]
    condition = {"type": "Ready", "status": "True" if ready else "False"}
    return {"status": {"conditions": [*conditions, condition]}}


async def test_a_worker_starts_once_its_leader_is_ready_and_not_before(
    api: ApiClient, namespace: str, nodes: Nodes, dns_port: int
) -> None:
    """Startup order in Grove's meaning, asked of a real CoreDNS as the init container asks
    it: the worker's wait ends while its leader is ready; once the leader's readiness is
    taken away the same wait does not end, and ends when the leader is ready again. No
    container runs on kwok nodes: the waiter runs here, with the pod's own arguments."""
    await nodes.add(2, gpus=0)
    pcs = labelled(fixture(SAMPLE), namespace, "ordered")
    pcs["spec"]["template"]["cliqueStartupType"] = "CliqueStartupTypeInOrder"
    pcs["spec"]["template"]["podCliqueScalingGroups"][0]["replicas"] = 1
    await server_side_apply(api, nodes.pin(pcs), namespace)
    found = await eventually(partial(pods, api, namespace), placed_with_ips(4), RUNNING_WITHIN)
    worker = found["ordered-0-model-instance-0-worker-0"]
    leader = found["ordered-0-model-instance-0-leader-0"]
    (init,) = [c for c in worker["spec"]["initContainers"] if c["name"] == INIT_CONTAINER]
    (address,) = [a.split("=")[0] for a in init["args"]]
    waiter = parse([*init["args"], "--nameserver", f"127.0.0.1:{dns_port}"])

    def waits_until_ready() -> Any:
        resolver = resolver_for(waiter.nameserver)
        return asyncio.to_thread(wait, waiter.waits, resolver, 0.2)

    # The leader is ready: the Service of ready leaders lists it, the wait ends.
    leader_ip = leader["status"]["podIP"]
    await eventually(partial(resolve, dns_port, address), lambda r: r == [leader_ip])
    await asyncio.wait_for(waits_until_ready(), RUNNING_WITHIN)

    # Its readiness taken away: the Service lists nobody; a worker starting now waits.
    path = f"/api/v1/namespaces/{namespace}/pods/{leader['metadata']['name']}/status"
    patch = "application/strategic-merge-patch+json"
    await kube_of(api).request("PATCH", path, body=ready(leader, False), content_type=patch)
    await eventually(partial(resolve, dns_port, address), lambda r: r == [], RUNNING_WITHIN)
    waiting = asyncio.ensure_future(waits_until_ready())
    # Asked several times over (each lookup answers nobody), it is still waiting.
    for _ in range(3):
        assert await resolve(dns_port, address) == []
        await asyncio.sleep(0.5)
    assert not waiting.done()
    await kube_of(api).request("PATCH", path, body=ready(leader, True), content_type=patch)
    await asyncio.wait_for(waiting, RUNNING_WITHIN)
