"""PodCliqueSets whose pods ask for GPUs on a test's own nodes, and what the scheduler made
of their pods."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

from kubernetes_asyncio.client.api_client import ApiClient

from gangway_contracts import labels
from gangway_runtime.kube import Kube
from gangway_runtime.status import PODCLIQUESETS
from tests.e2e.conftest import Nodes
from tests.support.backends import live
from tests.support.kube import server_side_apply
from tests.support.podgang import gated, pods, workload
from tests.support.store import eventually

# The garbage collector finds CRDs installed after it started on its next discovery (~30 s).
GC_WITHIN = 90.0


def gpu_clique(name: str, replicas: int, min_available: int, gpus: int) -> dict[str, Any]:
    """The fixture's clique as ``name``: ``replicas`` pods, ``min_available`` of them
    needed, each asking for ``gpus`` GPUs."""
    [template] = workload("unused", "unused")["spec"]["template"]["cliques"]
    found: dict[str, Any] = copy.deepcopy(template)
    found["name"] = found["spec"]["roleName"] = name
    found["spec"]["replicas"], found["spec"]["minAvailable"] = replicas, min_available
    for container in found["spec"]["podSpec"]["containers"]:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    return found


def gpu_workload(
    namespace: str, name: str, nodes: Nodes, *cliques: dict[str, Any], replicas: int = 1
) -> dict[str, Any]:
    """``replicas`` gangs of ``cliques``, on this test's nodes."""
    pcs = workload(namespace, name)
    pcs["spec"]["replicas"] = replicas
    test_label = pcs["spec"]["template"]["cliques"][0]["labels"]
    pcs["spec"]["template"]["cliques"] = [{**c, "labels": dict(test_label)} for c in cliques]
    return nodes.pin(pcs)


def whole_gang(
    namespace: str, name: str, nodes: Nodes, pods_: int, gpus: int, replicas: int = 1
) -> dict[str, Any]:
    """``replicas`` gangs of one clique of ``pods_`` pods, all needed, ``gpus`` GPUs each."""
    return gpu_workload(
        namespace, name, nodes, gpu_clique("worker", pods_, pods_, gpus), replicas=replicas
    )


def ungated(count: int) -> Callable[[dict[str, dict[str, Any]]], bool]:
    """Whether ``count`` pods exist and none is gated."""
    return lambda found: len(found) == count and not any(map(gated, found.values()))


def of_gang(found: dict[str, dict[str, Any]], gang: str) -> list[dict[str, Any]]:
    return [p for p in found.values() if p["metadata"]["labels"][labels.PODGANG] == gang]


def bound(pods: Iterable[dict[str, Any]]) -> int:
    return sum(1 for p in pods if p["spec"].get("nodeName"))


def running(pods: Iterable[dict[str, Any]]) -> int:
    return sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")


async def scaled_up_down_and_deleted(
    api: ApiClient,
    namespace: str,
    pcs: dict[str, Any],
    made_for: Callable[[str], dict[str, Any]],
    within: float = 60.0,
) -> None:
    """``pcs`` (one replica of one 2-pod gang, on room for four pods) scaled to two replicas,
    back to one, then deleted: each step's pods run or go, and the scheduler object
    ``made_for(<PodGang>)`` names comes and goes with its PodGang."""
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), lambda f: running(f.values()) == 2, within)
    pcs["spec"]["replicas"] = 2
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), lambda f: running(f.values()) == 4, within)
    assert await live(api, made_for("trainer-1"), namespace)

    pcs["spec"]["replicas"] = 1
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), lambda f: len(f) == 2, GC_WITHIN)
    await eventually(
        partial(live, api, made_for("trainer-1"), namespace), lambda g: not g, GC_WITHIN
    )
    assert await live(api, made_for("trainer-0"), namespace)

    await Kube(api).request("DELETE", PODCLIQUESETS.path(namespace, pcs["metadata"]["name"]))
    await eventually(partial(pods, api, namespace), lambda f: not f, GC_WITHIN)
    await eventually(
        partial(live, api, made_for("trainer-0"), namespace), lambda g: not g, GC_WITHIN
    )


async def one_of_two_runs_whole(
    api: ApiClient, namespace: str, pcs: dict[str, Any], within: float = 60.0
) -> None:
    """``pcs``: two gangs (trainer-0, trainer-1) of four pods on room for four. One runs
    whole; the other gets no node."""
    await server_side_apply(api, pcs, namespace)

    def one_gang_running(found: dict[str, dict[str, Any]]) -> bool:
        counts = sorted(running(of_gang(found, g)) for g in ("trainer-0", "trainer-1"))
        return len(found) == 8 and counts == [0, 4]

    found = await eventually(partial(pods, api, namespace), one_gang_running, within)
    assert bound(found.values()) == 4
