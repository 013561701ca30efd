"""What a scenario acts through: its own nodes, its workloads on the backend under test, and
what the cluster then shows (``gangway why``'s reading of each gang, the pods' nodes)."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from http import HTTPStatus
from typing import Any, Final

import msgspec

from gangway_cli.cluster import apply
from gangway_cli.conformance.room import GPU, NODES, POOL_LABEL, RACK_LABEL, Lacking, Room
from gangway_cli.whatif import NAMESPACES, until_decided
from gangway_cli.why import Workload
from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import find_condition
from gangway_contracts.mirrored import MirroredResource
from gangway_localcluster.controlplane import CappedQueue
from gangway_podgang.features import UNSUPPORTED_FEATURE
from gangway_podgang.progress import FEATURES_SUPPORTED
from gangway_runtime.kube import ApiResource, Kube, KubeError
from gangway_runtime.status import PODCLIQUESETS, PODGANGS, PODS

FIELD_MANAGER: Final = "gangway-conformance"
IMAGE: Final = "registry.k8s.io/pause:3.10"  # it only has to be placed


def clique(name: str, replicas: int, minimum: int) -> dict[str, Any]:
    """A clique of ``replicas`` pods, ``minimum`` of them needed; each pod fills a node of
    the room (``Stage.workload``)."""
    return {
        "name": name,
        "spec": {
            "roleName": name,
            "replicas": replicas,
            "minAvailable": minimum,
            "podSpec": {"containers": [{"name": "main", "image": IMAGE}]},
        },
    }


def scaling_group(name: str, cliques: list[str], replicas: int, minimum: int) -> dict[str, Any]:
    """A scaling group of ``cliques``: ``minimum`` of its ``replicas`` in the base gang, each
    other one a scaled gang of its own."""
    return {"name": name, "cliqueNames": cliques, "replicas": replicas, "minAvailable": minimum}


def bound_by(pods: list[dict[str, Any]], key: str = labels.PODCLIQUE) -> dict[str, int]:
    """How many of ``pods`` are on a node, by their label ``key`` (every value, 0 too)."""
    found: dict[str, int] = {}
    for pod in pods:
        value = pod["metadata"]["labels"].get(key, "")
        found[value] = found.get(value, 0) + bool(pod["spec"].get("nodeName"))
    return found


class Declined(Exception):
    """The backend declares it cannot do what the scenario asks (at admission, by field),
    or the cluster lacks the room: the scenario is skipped with those words, not failed."""


@dataclass
class Stage:
    """One scenario's view of the cluster, on the backend under test."""

    kube: Kube
    room: Room
    scenario: str
    scheduler_name: str
    workload_labels: dict[str, str]  # what the backend needs of a PodCliqueSet (a queue)
    own: list[MirroredResource]  # the backend's resources, as the watcher mirrors them
    timeout: float
    settle: float
    # SIGKILL the backend's process and start it again (None: it is not ours to kill).
    restart_backend: Callable[[], Awaitable[None]] | None = None
    # A queue of the backend's scheduler, capped (None: it has none the kit can make).
    capped_queue: Callable[[str, int], CappedQueue] | None = None
    applied: list[dict[str, Any]] = field(default_factory=list)  # to delete after
    cluster_objects: list[str] = field(default_factory=list)  # and these, by path

    async def nodes(self, count: int, pool: str = "", rack: str = "") -> str:
        """``count`` more nodes in ``pool`` (default: the scenario's) and ``rack``; the
        pool's name, which its workloads select. Declined when the cluster has no more."""
        pool = pool or f"cf-{self.scenario}"
        try:
            await self.room.nodes(pool, count, rack)
        except Lacking as exc:
            raise Declined(str(exc)) from None
        return pool

    async def cluster_object(self, resource: ApiResource, made: dict[str, Any]) -> None:
        """A cluster-scoped object the scenario needs (a PriorityClass, a topology), applied
        now and deleted with the scenario's workloads."""
        await apply(self.kube, resource, made, FIELD_MANAGER)
        self.cluster_objects.append(resource.path("", made["metadata"]["name"]))

    def gpus_per_pod(self) -> int:
        return int(self.room.asks.get(GPU, "0"))

    async def queue(self, gpus: int) -> dict[str, str]:
        """A queue of the backend's scheduler that holds ``gpus`` GPUs at most, deleted with
        the scenario; the labels that put a workload in it. Declined where the kit cannot
        make one."""
        if self.capped_queue is None:
            raise Declined(
                "makes a queue of the backend's scheduler: the local cluster knows how only "
                "for a scheduler it runs that has queues"
            )
        made = self.capped_queue(f"cf-{self.scenario}", gpus)
        for collection, queue in made.objects:
            try:
                await self.kube.request("POST", collection, body=queue)
            except KubeError as exc:
                if exc.status != HTTPStatus.CONFLICT:
                    raise
            self.cluster_objects.append(f"{collection}/{queue['metadata']['name']}")
        return made.labels

    def namespace(self, suffix: str = "") -> str:
        return f"conformance-{self.scenario}{'-' + suffix if suffix else ''}"

    def workload(
        self,
        namespace: str,
        name: str,
        pool: str,
        *cliques: dict[str, Any],
        groups: tuple[dict[str, Any], ...] = (),
    ) -> dict[str, Any]:
        """A workload of ``cliques`` (and scaling ``groups`` of them) on the backend's
        scheduler and ``pool``'s nodes."""
        asks = self.room.asks
        for made in cliques:
            pod_spec = made["spec"]["podSpec"]
            pod_spec["schedulerName"] = self.scheduler_name
            pod_spec["nodeSelector"] = {POOL_LABEL: pool}
            for container in pod_spec["containers"]:
                container["resources"] = {"requests": asks, "limits": asks}
        return {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "metadata": {"name": name, "namespace": namespace, "labels": self.workload_labels},
            "spec": {
                "replicas": 1,
                "template": {
                    "cliques": list(cliques),
                    **({"podCliqueScalingGroups": list(groups)} if groups else {}),
                },
            },
        }

    async def apply(self, pcs: dict[str, Any], refusal_declines: bool = False) -> None:
        """Apply a workload; Declined when the backend declares part of it unsupported (or,
        ``refusal_declines``, when admission refuses it: what the scenario asks for is a
        feature the backend may lack)."""
        namespace = pcs["metadata"]["namespace"]
        made = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
        await apply(self.kube, NAMESPACES, made, FIELD_MANAGER)
        try:
            await apply(self.kube, PODCLIQUESETS, pcs, FIELD_MANAGER)
        except KubeError as exc:
            refused = (HTTPStatus.BAD_REQUEST, HTTPStatus.UNPROCESSABLE_ENTITY)
            if refusal_declines and exc.status in refused:
                raise Declined(f"refused at admission: {exc.message}") from None
            raise
        self.applied.append(pcs)
        if declared := await self.declared_unsupported(pcs):
            raise Declined(f"declared unsupported: {declared}")

    async def declared_unsupported(self, pcs: dict[str, Any]) -> str:
        """What the backend, asked by Gangway as it is deployed, declares it cannot do in
        the workload (the PodCliqueSet's ``FeaturesSupported`` condition): "field: feature:
        why", or nothing; nothing either when no verdict comes within ``timeout``."""
        meta = pcs["metadata"]
        deadline = time.monotonic() + self.timeout
        while time.monotonic() < deadline:
            found = await self.kube.read(PODCLIQUESETS, meta["namespace"], meta["name"])
            live = from_object(found, PodCliqueSet) if found else None
            if live is not None and live.status is not None:
                judged = find_condition(live.status.conditions, FEATURES_SUPPORTED)
                if judged is not None and judged.observed_generation == live.metadata.generation:
                    return judged.message if judged.reason == UNSUPPORTED_FEATURE else ""
            await asyncio.sleep(0.5)
        return ""

    async def kill_backend(self) -> None:
        """The backend's process killed and started again; Declined where that is not
        the kit's to do (an existing cluster: its pods are the operator's)."""
        if self.restart_backend is None:
            raise Declined("kills the backend's process: on the local cluster only")
        await self.restart_backend()

    async def clean_up(self) -> list[str]:
        """Delete what the scenario applied and wait until nothing of it is left, so that
        the next scenario finds the scheduler's queues and shares as they were; what is
        left after ``timeout``."""
        workloads = {(p["metadata"]["namespace"], p["metadata"]["name"]): p for p in self.applied}
        for pcs in workloads.values():  # all at once: one may hold what another waits for
            try:
                await self.delete(pcs)
            except KubeError as exc:
                if exc.status != HTTPStatus.NOT_FOUND:
                    raise
        left: dict[str, None] = {}
        for pcs in workloads.values():
            left.update(dict.fromkeys(await self.until_gone(pcs)))
        for path in reversed(self.cluster_objects):  # children before their parents
            try:
                await self.kube.request("DELETE", path)
            except KubeError as exc:
                if exc.status != HTTPStatus.NOT_FOUND:
                    raise
        return list(left)

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

    async def bound(self, pcs: dict[str, Any], by: str = labels.PODCLIQUE) -> dict[str, int]:
        """Pods on a node, by the label ``by``: clique (Grove's PodClique name), or gang."""
        return bound_by(await self.pods(pcs), by)

    async def until_bound(self, pcs: dict[str, Any], count: int) -> int:
        """Pods bound once ``count`` are, or after ``timeout``: how many."""
        pods = await self.until(pcs, lambda pods: sum(bound_by(pods).values()) >= count)
        return sum(bound_by(pods).values())

    async def until(
        self, pcs: dict[str, Any], done: Callable[[list[dict[str, Any]]], bool]
    ) -> list[dict[str, Any]]:
        """The workload's pods once ``done`` says so of them, or after ``timeout``."""
        deadline = time.monotonic() + self.timeout
        while True:
            pods = await self.pods(pcs)
            if done(pods) or time.monotonic() > deadline:
                return pods
            await asyncio.sleep(0.5)

    async def until_gone(self, pcs: dict[str, Any]) -> list[str]:
        """What is left of the workload once nothing is, or after ``timeout``."""
        deadline = time.monotonic() + self.timeout
        while True:
            left = await self.left_behind(pcs)
            if not left or time.monotonic() > deadline:
                return left
            await asyncio.sleep(0.5)

    async def racks(self, pods: list[dict[str, Any]]) -> dict[str, int]:
        """The bound ``pods`` by the rack of their node."""
        found: dict[str, int] = {}
        for pod in pods:
            if node := pod["spec"].get("nodeName"):
                read = await self.kube.read(NODES, "", node)
                rack = ((read or {}).get("metadata", {}).get("labels") or {}).get(RACK_LABEL, "")
                found[rack] = found.get(rack, 0) + 1
        return found

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
        return found + await self.backend_objects(namespace)

    async def backend_objects(self, namespace: str) -> list[str]:
        """The backend's objects in ``namespace``: "<kind> <name>" each."""
        found = []
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
