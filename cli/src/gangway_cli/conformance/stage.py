"""What a scenario acts through: its own nodes, its workloads on the backend under test, and
what the cluster then shows (``gangway why``'s reading of each gang, the pods' nodes)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

from gangway_cli.cluster import apply
from gangway_cli.up import LocalCluster
from gangway_cli.whatif import NAMESPACES, until_decided
from gangway_cli.why import Workload
from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.mirrored import MirroredResource
from gangway_localcluster.nodes import NodePool
from gangway_runtime.kube import ApiResource, Kube, KubeError
from gangway_runtime.status import PODCLIQUESETS, PODGANGS, PODS

POOL_LABEL: Final = "gangway.dev/conformance-pool"
FIELD_MANAGER: Final = "gangway-conformance"
IMAGE: Final = "registry.k8s.io/pause:3.10"  # kwok runs no container: any image will do


def clique(name: str, replicas: int, minimum: int, gpus: int = 4) -> dict[str, Any]:
    """A clique of ``replicas`` pods, ``minimum`` of them needed, ``gpus`` GPUs each."""
    asks = {"nvidia.com/gpu": str(gpus)}
    container = {"name": "main", "image": IMAGE, "resources": {"requests": asks, "limits": asks}}
    return {
        "name": name,
        "spec": {
            "roleName": name,
            "replicas": replicas,
            "minAvailable": minimum,
            "podSpec": {"containers": [container]},
        },
    }


class Declined(Exception):
    """The backend declares it cannot do what the scenario asks (at admission, by field):
    the scenario is skipped with the backend's words, not failed."""


@dataclass
class Stage:
    """One scenario's view of the cluster, on the backend under test."""

    kube: Kube
    local: LocalCluster
    scenario: str
    scheduler_name: str
    workload_labels: dict[str, str]  # what the backend needs of a PodCliqueSet (a queue)
    own: list[MirroredResource]  # the backend's resources, as the watcher mirrors them
    timeout: float
    settle: float
    # What the backend declares unsupported in a PodCliqueSet, by field (its offline
    # admission checks): "field: feature: why" each.
    unsupported: Callable[[PodCliqueSet], Awaitable[list[str]]]
    made: dict[str, int] = field(default_factory=dict)  # nodes per pool
    applied: list[dict[str, Any]] = field(default_factory=list)  # to delete after

    async def nodes(self, count: int, gpus: int = 4, pool: str = "") -> str:
        """``count`` more nodes in ``pool`` (default: the scenario's), ``gpus`` each; the
        pool's name, which its workloads select."""
        pool = pool or f"cf-{self.scenario}"
        first = self.made.get(pool, 0)
        self.made[pool] = first + count
        made = NodePool(count=count, gpus=gpus, prefix=pool, first=first, labels={POOL_LABEL: pool})
        await asyncio.to_thread(self.local.cp.add_nodes, made)
        return pool

    def namespace(self, suffix: str = "") -> str:
        return f"conformance-{self.scenario}{'-' + suffix if suffix else ''}"

    def workload(
        self, namespace: str, name: str, pool: str, *cliques: dict[str, Any]
    ) -> dict[str, Any]:
        """One gang of ``cliques`` on the backend's scheduler and ``pool``'s nodes."""
        for made in cliques:
            pod_spec = made["spec"]["podSpec"]
            pod_spec["schedulerName"] = self.scheduler_name
            pod_spec["nodeSelector"] = {POOL_LABEL: pool}
        return {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "metadata": {"name": name, "namespace": namespace, "labels": self.workload_labels},
            "spec": {"replicas": 1, "template": {"cliques": list(cliques)}},
        }

    async def apply(self, pcs: dict[str, Any]) -> None:
        """Apply a workload; Declined when the backend declares part of it unsupported."""
        if declared := await self.unsupported(from_object(pcs, PodCliqueSet)):
            raise Declined("; ".join(declared))
        namespace = pcs["metadata"]["namespace"]
        made = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        await apply(self.kube, NAMESPACES, made, FIELD_MANAGER)
        await apply(self.kube, PODCLIQUESETS, pcs, FIELD_MANAGER)
        self.applied.append(pcs)

    async def clean_up(self) -> list[str]:
        """Delete what the scenario applied and wait until nothing of it is left, so that
        the next scenario finds the scheduler's queues and shares as they were; what is
        left after ``timeout``."""
        left = []
        for pcs in self.applied:
            try:
                await self.delete(pcs)
            except KubeError as exc:
                if exc.status != 404:
                    raise
            left += await self.until_gone(pcs)
        return left

    async def delete(self, pcs: dict[str, Any]) -> None:
        meta = pcs["metadata"]
        await self.kube.request("DELETE", PODCLIQUESETS.path(meta["namespace"], meta["name"]))

    async def verdict(self, pcs: dict[str, Any]) -> Workload:
        """The workload once every gang is decided (placed, or the scheduler's or backend's
        reason) and has stayed so ``settle`` seconds; as it stands after ``timeout``
        (``gangway whatif``'s wait)."""
        [workload] = await until_decided(
            self.kube, [from_object(pcs, PodCliqueSet)], self.timeout, self.settle
        )
        return workload

    async def bound(self, pcs: dict[str, Any]) -> dict[str, int]:
        """Pods on a node, by clique (Grove's PodClique name)."""
        found: dict[str, int] = {}
        for pod in await self.pods(pcs):
            clique_name = pod["metadata"]["labels"].get(labels.PODCLIQUE, "")
            found.setdefault(clique_name, 0)
            found[clique_name] += bool(pod["spec"].get("nodeName"))
        return found

    async def until_bound(self, pcs: dict[str, Any], count: int) -> int:
        """Pods bound once ``count`` are, or after ``timeout``: how many."""
        deadline = time.monotonic() + self.timeout
        while (bound := sum((await self.bound(pcs)).values())) < count:
            if time.monotonic() > deadline:
                break
            await asyncio.sleep(0.5)
        return bound

    async def until_gone(self, pcs: dict[str, Any]) -> list[str]:
        """What is left of the workload once nothing is, or after ``timeout``."""
        deadline = time.monotonic() + self.timeout
        while True:
            left = await self.left_behind(pcs)
            if not left or time.monotonic() > deadline:
                return left
            await asyncio.sleep(0.5)

    async def pods(self, pcs: dict[str, Any]) -> list[dict[str, Any]]:
        meta = pcs["metadata"]
        selector = [("labelSelector", f"{labels.PART_OF}={meta['name']}")]
        listed = await self.kube.request("GET", PODS.path(meta["namespace"]), selector)
        items: list[dict[str, Any]] = msgspec.json.decode(listed)["items"]
        return items

    async def left_behind(self, pcs: dict[str, Any]) -> list[str]:
        """What of the workload still exists: pods, PodGangs, the backend's objects."""
        namespace, name = pcs["metadata"]["namespace"], pcs["metadata"]["name"]
        part_of = [("labelSelector", f"{labels.PART_OF}={name}")]
        found = [f"Pod {p['metadata']['name']}" for p in await self.pods(pcs)]
        gangs = msgspec.json.decode(
            await self.kube.request("GET", PODGANGS.path(namespace), part_of)
        )["items"]
        found += [f"PodGang {g['metadata']['name']}" for g in gangs]
        for resource in self.own:
            found += [f"{resource.kind} {n}" for n in await self._listed(resource, namespace)]
        return found

    async def _listed(self, resource: MirroredResource, namespace: str) -> list[str]:
        """The names of the backend's objects of ``resource`` in ``namespace`` (Gangway's
        own, by its label), at the first version served."""
        for version in resource.versions:
            api = ApiResource(resource.group, version, resource.plural, resource.namespaced)
            selector = (
                [("labelSelector", resource.label_selector)] if resource.label_selector else []
            )
            try:
                listed = await self.kube.request("GET", api.path(namespace), selector)
            except KubeError as exc:
                if exc.status == 404:
                    continue
                raise
            return [i["metadata"]["name"] for i in msgspec.json.decode(listed)["items"]]
        return []
