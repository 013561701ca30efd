"""PodCliqueSets whose pods ask for GPUs on a test's own nodes, and what the scheduler made
of their pods."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from typing import Any

from tests.e2e.conftest import Nodes
from tests.support.podgang import workload


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


def bound(pods: Iterable[dict[str, Any]]) -> int:
    return sum(1 for p in pods if p["spec"].get("nodeName"))


def running(pods: Iterable[dict[str, Any]]) -> int:
    return sum(1 for p in pods if p.get("status", {}).get("phase") == "Running")
