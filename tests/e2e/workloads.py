"""PodCliqueSets whose pods ask for GPUs on a test's own nodes, and what the scheduler made
of their pods."""

from __future__ import annotations

import asyncio
import copy
import json
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterable
from functools import partial
from pathlib import Path
from typing import Any

import yaml
from kubernetes_asyncio import client, watch
from kubernetes_asyncio.client.api_client import ApiClient

from gangway_contracts import labels
from gangway_localcluster.nodes import HOSTNAME_LABEL, TOPOLOGY_LABELS
from gangway_runtime.kube import ApiResource
from gangway_runtime.status import PODCLIQUESETS
from tests.e2e.conftest import Nodes, Up
from tests.support.backends import live
from tests.support.kube import kube_of, server_side_apply
from tests.support.manifests import on_scheduler
from tests.support.podgang import condition, gated, objects, podgangs, pods, workload
from tests.support.store import eventually
from tests.support.whatif import placed_and_not, whatif

# The garbage collector finds CRDs installed after it started on its next discovery (~30 s).
GC_WITHIN = 90.0
# How long a gang that must not be placed is watched staying unplaced (the schedulers here
# try again every second or on every change).
UNPLACED_FOR = 8.0


async def trace_of(up: Up, workload: str) -> str:
    """What ``gangway trace --all <namespace>/<name>`` prints about the workload: every
    entry, however many (past 60 it would summarise them per step)."""
    done = await asyncio.to_thread(
        subprocess.run,
        [str(Path(sys.executable).parent / "gangway"), "trace", "--all", workload],
        env={**os.environ, **up.env},
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout


async def why_of(up: Up, workload: str) -> dict[str, Any]:
    """What ``gangway why -o json <namespace>/<name>`` says about the workload."""
    done = await asyncio.to_thread(
        subprocess.run,
        [str(Path(sys.executable).parent / "gangway"), "why", "-o", "json", workload],
        env={**os.environ, **up.env},
        capture_output=True,
        text=True,
        check=True,
    )
    said: dict[str, Any] = json.loads(done.stdout)
    return said


def gang_said(said: dict[str, Any], name: str) -> dict[str, Any]:
    """One gang of ``why_of``'s answer."""
    found: dict[str, Any] = next(g for g in said["gangs"] if g["name"] == name)
    return found


async def events_about(api: ApiClient, namespace: str, reason: str) -> list[dict[str, Any]]:
    """The Events of the namespace with this reason."""
    said = await objects(api, namespace, "/apis/events.k8s.io/v1/namespaces/{ns}/events")
    return [e for e in said.values() if e.get("reason") == reason]


def named(resource: ApiResource, kind: str, name: str) -> dict[str, Any]:
    """Enough of a manifest to find an object of ``resource`` by name (``live``)."""
    return {"apiVersion": resource.api_version, "kind": kind, "metadata": {"name": name}}


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


def gpu_workload_on(scheduler: str) -> Callable[..., dict[str, Any]]:
    """:func:`gpu_workload`, its pods on ``scheduler``."""

    def made(*args: Any, **kwargs: Any) -> dict[str, Any]:
        return on_scheduler(gpu_workload(*args, **kwargs), scheduler)

    return made


def leader_and_workers(
    namespace: str, nodes: Nodes, scheduler: str, leaders: int = 1
) -> dict[str, Any]:
    """One gang "serve-0" on ``scheduler``: a leader role (``leaders`` pods, one needed) and
    a worker role (two, both needed), a whole 4-GPU node each pod."""
    return on_scheduler(
        gpu_workload(
            namespace,
            "serve",
            nodes,
            gpu_clique("leader", leaders, 1, gpus=4),
            gpu_clique("worker", 2, 2, gpus=4),
        ),
        scheduler,
    )


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


def bound_by_clique(found: dict[str, dict[str, Any]]) -> dict[str, int]:
    """How many pods of each clique have a node."""
    counts: dict[str, int] = {}
    for pod in found.values():
        clique = pod["metadata"]["labels"][labels.PODCLIQUE]
        counts[clique] = counts.get(clique, 0) + bool(pod["spec"].get("nodeName"))
    return counts


async def stays_unbound(api: ApiClient, namespace: str, prefix: str = "") -> None:
    """For UNPLACED_FOR seconds no pod (whose name starts with ``prefix``) gets a node."""

    def some_bound(found: dict[str, dict[str, Any]]) -> bool:
        return any(n.startswith(prefix) for n, p in found.items() if p["spec"].get("nodeName"))

    try:
        await eventually(partial(pods, api, namespace), some_bound, UNPLACED_FOR)
    except AssertionError as exc:
        if "not reached" in str(exc):
            return
        raise
    raise AssertionError(f"a pod {prefix}… was bound although its gang cannot be placed whole")


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

    await kube_of(api).request("DELETE", PODCLIQUESETS.path(namespace, pcs["metadata"]["name"]))
    await eventually(partial(pods, api, namespace), lambda f: not f, GC_WITHIN)
    await eventually(
        partial(live, api, made_for("trainer-0"), namespace), lambda g: not g, GC_WITHIN
    )


async def one_of_two_runs_whole(
    api: ApiClient,
    namespace: str,
    pcs: dict[str, Any],
    nodes: Nodes,
    workdir: Path,
    *also: dict[str, Any],
) -> None:
    """``pcs``: two gangs (``<name>-0``, ``<name>-1``) of four 4-GPU pods on the test's four
    4-GPU nodes. `gangway whatif` on a copy of those nodes, with the same scheduler (and
    ``also``, the queues it names), says one gang placed and why the other is not; then the
    cluster does just that: one runs whole, the other gets no node, and its PodGang says why
    in the words every backend uses (``gangway_contracts.why``), with the scheduler's own."""
    name = pcs["metadata"]["name"]
    gangs = (f"{name}-0", f"{name}-1")
    manifest = workdir / f"{name}.yaml"
    manifest.write_text(yaml.safe_dump_all([*also, pcs]))
    room = {"nodes": [{"count": 4, "gpus": 4, "labels": nodes.selector}]}
    code, answer, said = await asyncio.to_thread(whatif, manifest, room, workdir)
    assert (code, placed_and_not(answer)) == (3, (1, ["Unschedulable"])), said
    await server_side_apply(api, pcs, namespace)
    within = PLACED_WITHIN

    def one_gang_running(found: dict[str, dict[str, Any]]) -> bool:
        counts = sorted(running(of_gang(found, g)) for g in gangs)
        return len(found) == 8 and counts == [0, 4]

    found = await eventually(partial(pods, api, namespace), one_gang_running, within)
    assert bound(found.values()) == 4
    waiting = next(g for g in gangs if running(of_gang(found, g)) == 0)
    gang = await gang_where(
        api, namespace, waiting, lambda g: scheduled(g).get("reason") == "Unschedulable", within
    )
    assert scheduled(gang)["message"], gang


# How long a test waits for a gang that fits to be placed.
PLACED_WITHIN = 60.0


def scheduled(gang: dict[str, Any]) -> dict[str, Any]:
    """A PodGang's Scheduled condition."""
    return condition(gang, labels.SCHEDULED)


async def gang_where(
    api: ApiClient, namespace: str, name: str, check: Any, within: float = PLACED_WITHIN
) -> dict[str, Any]:
    """The PodGang ``name`` once ``check`` holds for it."""
    found: dict[str, dict[str, Any]] = await eventually(
        partial(podgangs, api, namespace), lambda g: name in g and check(g[name]), within
    )
    return found[name]


async def pods_version(api: ApiClient, namespace: str) -> str:
    """The resourceVersion of the namespace's pods now: watch from it to miss no change."""
    listed = await client.CoreV1Api(api).list_namespaced_pod(namespace)
    return str(listed.metadata.resource_version)


async def pod_changes(
    api: ApiClient,
    namespace: str,
    since: str,
    now: dict[str, dict[str, Any]],
    within: float = 120.0,
) -> AsyncIterator[dict[str, dict[str, Any]]]:
    """Every pod change from resourceVersion ``since``: ``now`` (name → pod) kept as the
    cluster has it and yielded after each, so no moment goes unseen."""
    core = client.CoreV1Api(api)
    async with watch.Watch() as w:
        async for event in w.stream(
            core.list_namespaced_pod, namespace, resource_version=since, timeout_seconds=int(within)
        ):
            pod = event["raw_object"]
            if event["type"] == "DELETED":
                now.pop(pod["metadata"]["name"], None)
            else:
                now[pod["metadata"]["name"]] = pod
            yield now


async def rolled_within_its_budget(
    api: ApiClient,
    namespace: str,
    nodes: Nodes,
    made: Callable[..., dict[str, Any]] = gpu_workload,
    within: float = 120.0,
) -> None:
    """A scaling group of three replicas (one in the base gang, two scaled gangs), each one
    whole 4-GPU node, on exactly three nodes, rolled to a new image with
    ``rollingUpdate.maxUnavailable: 2``. Every pod event is watched from before the change:
    at no moment are more than two replicas down (not Running and Ready, or being deleted),
    at some moment two are (the budget is used, not just kept), and every replica ends on
    the new image, placed on the nodes the old gangs freed by the scheduler of the
    PodCliqueSet ``made`` makes (``gpu_workload``'s arguments)."""
    await nodes.add(3, gpus=4)
    pcs = made(namespace, "roll", nodes, gpu_clique("worker", 1, 1, gpus=4))
    pcs["spec"]["template"]["podCliqueScalingGroups"] = [
        {
            "name": "model",
            "cliqueNames": ["worker"],
            "replicas": 3,
            "minAvailable": 1,
            "rollingUpdate": {"maxUnavailable": 2},
        }
    ]
    await server_side_apply(api, pcs, namespace)
    now = await eventually(
        partial(pods, api, namespace), lambda p: len(p) == 3 and all(map(ready, p.values())), within
    )
    old = {pod["metadata"]["uid"] for pod in now.values()}
    start = await pods_version(api, namespace)
    container = pcs["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["containers"][0]
    container["image"] = "registry.example.com/next:2"
    await server_side_apply(api, pcs, namespace)
    most_down = 0
    async for _ in pod_changes(api, namespace, start, now, within):
        up = {
            p["metadata"]["labels"][labels.SCALING_GROUP_REPLICA_INDEX]
            for p in now.values()
            if ready(p) and not p["metadata"].get("deletionTimestamp")
        }
        down = 3 - len(up)
        assert down <= 2, f"{down} replicas down at once: {sorted(now)}"
        most_down = max(most_down, down)
        new = [p for p in now.values() if p["metadata"]["uid"] not in old]
        if len(new) == 3 and all(map(ready, new)):
            break
    assert {p["spec"]["containers"][0]["image"] for p in now.values()} == {container["image"]}
    assert most_down == 2, "two replicas replaced at once, as the budget allows"


def ready(pod: dict[str, Any]) -> bool:
    """Running and Ready (kwok's, or the kubelet's)."""
    return running([pod]) == 1 and condition(pod, "Ready").get("status") == "True"


async def made_again_under_its_names_stays_whole(
    api: ApiClient,
    namespace: str,
    nodes: Nodes,
    made: Callable[..., dict[str, Any]] = gpu_workload,
    within: float = 60.0,
) -> None:
    """A rolled gang is made again under the same PodGang and scheduler-object names: the
    scheduler must not take the new gang for the old one it placed (Kubernetes #139914,
    KAI #2095). One gang of three pods, a whole 4-GPU node each, runs; its new template
    fits on only two of the three nodes (node affinity): no pod of the new gang may bind.
    A third node the affinity names comes: the whole gang binds."""
    names = await nodes.add(3, gpus=4)
    pcs = made(namespace, "again", nodes, gpu_clique("worker", 3, 3, gpus=4))
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), lambda p: running(p.values()) == 3, within)
    spare = f"{nodes.pool}-{nodes.made}"  # the node added last, below
    pod_spec = pcs["spec"]["template"]["cliques"][0]["spec"]["podSpec"]
    pod_spec["affinity"] = {
        "nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": [*names[:2], spare],
                            }
                        ]
                    }
                ]
            }
        }
    }
    await server_side_apply(api, pcs, namespace)

    def made_again(found: dict[str, dict[str, Any]]) -> bool:
        return len(found) == 3 and all(
            p["spec"].get("affinity") and not gated(p) for p in found.values()
        )

    await eventually(partial(pods, api, namespace), made_again, within)
    await stays_unbound(api, namespace)
    assert await nodes.add(1, gpus=4) == [spare]
    placed = await eventually(
        partial(pods, api, namespace), lambda p: running(p.values()) == 3, within
    )
    assert {p["spec"]["nodeName"] for p in placed.values()} == {*names[:2], spare}


# A ClusterTopologyBinding over kwok's node labels (zone, block, rack), for packed gangs.
TOPOLOGY = "kwok-racks"


async def topology(api: ApiClient) -> None:
    """A ClusterTopologyBinding over the node labels kwok's nodes carry (backend-kai makes
    KAI's Topology of the same name from it)."""
    levels = [(domain, key) for domain, key in TOPOLOGY_LABELS.items() if key != HOSTNAME_LABEL]
    binding = {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "ClusterTopologyBinding",
        "metadata": {"name": TOPOLOGY},
        "spec": {"levels": [{"domain": d, "key": k} for d, k in levels]},
    }
    await server_side_apply(api, binding, "")


def packed(pcs: dict[str, Any], **pack: str) -> dict[str, Any]:
    """The PodCliqueSet packed as a whole (``required=``/``preferred=`` a domain)."""
    pcs["spec"]["template"]["topologyConstraint"] = {"topologyName": TOPOLOGY, "pack": pack}
    return pcs


async def racks_of(api: ApiClient, found: dict[str, dict[str, Any]]) -> set[str]:
    """The racks the pods ``found`` are on."""
    kube = kube_of(api)
    racks = set()
    for pod in found.values():
        node = await kube.request("GET", f"/api/v1/nodes/{pod['spec']['nodeName']}")
        racks.add(json.loads(node)["metadata"]["labels"][TOPOLOGY_LABELS["rack"]])
    return racks


async def two_racks_the_first_half_taken(api: ApiClient, namespace: str, nodes: Nodes) -> None:
    """The topology binding, two racks of four 4-GPU nodes, and a whole-node filler
    (default-scheduler) running on each of the first rack's first two: a gang of four whole
    nodes then fits in one rack only in the second."""
    await topology(api)
    names = await nodes.add(8, gpus=4)
    for i, node in enumerate(names[:2]):
        filler = gpu_workload(namespace, f"filler{i}", nodes, gpu_clique("f", 1, 1, gpus=4))
        filler["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["nodeSelector"] = {
            HOSTNAME_LABEL: node
        }
        await server_side_apply(api, on_scheduler(filler, "default-scheduler"), namespace)
    await eventually(
        partial(pods, api, namespace), lambda f: running(f.values()) == 2, PLACED_WITHIN
    )


async def running_pods_of(
    api: ApiClient, namespace: str, workload: str, count: int
) -> dict[str, dict[str, Any]]:
    """The ``workload``'s pods, once ``count`` of them run."""
    found = await eventually(
        partial(pods, api, namespace),
        lambda f: running(p for n, p in f.items() if n.startswith(f"{workload}-")) == count,
        PLACED_WITHIN,
    )
    return {n: p for n, p in found.items() if n.startswith(f"{workload}-")}
