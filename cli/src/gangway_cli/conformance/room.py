"""Where a scenario's pods may go: room counted in nodes that each hold exactly one of its
pods, in pools a scenario's workloads select by a label. On the local cluster the nodes are
made (kwok, 4 GPUs each); on an existing cluster they are found: nodes with room for one pod
of the size the kit then asks, labelled for the scenario and unlabelled after it."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Final, Protocol

import msgspec

from gangway_cli.up import LocalCluster
from gangway_contracts.podspec import pod_requests, quantity
from gangway_localcluster.nodes import NodePool
from gangway_runtime.kube import ApiResource, Kube
from gangway_runtime.status import PODS

POOL_LABEL: Final = "gangway.dev/conformance-pool"
RACK_LABEL: Final = "gangway.dev/conformance-rack"  # the racks of a topology scenario
GPU: Final = "nvidia.com/gpu"
LOCAL_GPUS: Final = 4  # per kwok node, all asked by each pod
NODES: Final = ApiResource("", "v1", "nodes", namespaced=False)


class Lacking(Exception):
    """The cluster has too little room of the kind a scenario needs: it is skipped with
    this reason, not failed."""


class Room(Protocol):
    @property
    def asks(self) -> dict[str, str]:
        """What each pod requests (and is limited to): one fits a node of the room."""

    async def nodes(self, pool: str, count: int, rack: str = "") -> None:
        """``count`` more nodes in ``pool`` (in ``rack``: labelled :data:`RACK_LABEL`);
        Lacking when there are no more."""

    async def release(self) -> None:
        """Every node back as it was (after each scenario)."""


@dataclass
class LocalRoom:
    """kwok nodes made on the local control plane; they stay until it stops."""

    local: LocalCluster
    made: dict[str, int] = field(default_factory=dict)  # nodes per pool

    @property
    def asks(self) -> dict[str, str]:
        return {GPU: str(LOCAL_GPUS)}

    async def nodes(self, pool: str, count: int, rack: str = "") -> None:
        first = self.made.get(pool, 0)
        self.made[pool] = first + count
        placed = {POOL_LABEL: pool, **({RACK_LABEL: rack} if rack else {})}
        made = NodePool(count=count, gpus=LOCAL_GPUS, prefix=pool, first=first, labels=placed)
        await asyncio.to_thread(self.local.cp.add_nodes, made)

    async def release(self) -> None:
        return None


@dataclass
class FoundRoom:
    """An existing cluster's nodes, as found: those that take pods (Ready, schedulable, no
    NoSchedule or NoExecute taint) and have room for one pod of one size but not two — in
    GPUs where nodes have them, else in CPU. The kit labels the ones a scenario takes."""

    kube: Kube
    resource: str = ""
    size: Decimal = Decimal(0)
    free: list[str] = field(default_factory=list)  # nodes not taken yet, by name
    taken: list[str] = field(default_factory=list)

    @property
    def asks(self) -> dict[str, str]:
        return {self.resource: f"{self.size}" if self.resource == GPU else f"{self.size}m"}

    async def survey(self) -> str:
        """Choose the size and the nodes, and unlabel any an interrupted run left labelled;
        what was found, in words."""
        nodes = msgspec.json.decode(await self.kube.request("GET", NODES.path()))["items"]
        for node in nodes:
            if POOL_LABEL in node["metadata"].get("labels", {}):
                await self._label(node["metadata"]["name"], None)
        room = free_room(nodes, await self._running_pods())
        self.resource = GPU if any(GPU in free for free in room.values()) else "cpu"
        by_node = {
            name: free[self.resource] for name, free in room.items() if self.resource in free
        }
        self.size, self.free = one_pod_each(by_node)
        unit = "GPUs" if self.resource == GPU else "millicores"
        return f"{len(self.free)} nodes with room for one pod of {self.size} {unit}"

    async def nodes(self, pool: str, count: int, rack: str = "") -> None:
        if rack:
            raise Lacking("puts nodes in racks of its own: on the local cluster only")
        if not self.resource:  # not surveyed yet
            await self.survey()
        if len(self.free) < count:
            raise Lacking(
                f"too little room: needs {count + len(self.taken)} nodes with room for one pod of "
                f"{self.asks}; the cluster has {len(self.free) + len(self.taken)}"
            )
        for name in self.free[:count]:
            await self._label(name, pool)
        self.taken += self.free[:count]
        del self.free[:count]

    async def release(self) -> None:
        for name in self.taken:
            await self._label(name, None)
        self.free = self.taken + self.free
        self.taken = []

    async def _label(self, node: str, pool: str | None) -> None:
        patch = {"metadata": {"labels": {POOL_LABEL: pool}}}
        await self.kube.request(
            "PATCH",
            NODES.path(name=node),
            body=patch,
            content_type="application/merge-patch+json",
        )

    async def _running_pods(self) -> list[dict[str, Any]]:
        done = [("fieldSelector", "status.phase!=Succeeded,status.phase!=Failed")]
        listed = await self.kube.request("GET", PODS.path(), done)
        pods: list[dict[str, Any]] = msgspec.json.decode(listed)["items"]
        return pods


def free_room(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]]
) -> dict[str, dict[str, Decimal]]:
    """Node → GPUs and millicores not requested yet, for the nodes that take pods."""
    taking = {n["metadata"]["name"]: n for n in nodes if _takes_pods(n)}
    free: dict[str, dict[str, Decimal]] = {}
    for name, node in taking.items():
        allocatable = node["status"].get("allocatable", {})
        free[name] = {r: _amount(r, allocatable[r]) for r in (GPU, "cpu") if allocatable.get(r)}
    for pod in pods:
        on = pod["spec"].get("nodeName")
        if on not in free:
            continue
        for resource, asked in pod_requests(msgspec.json.encode(pod["spec"])).items():
            if resource in free[on]:
                free[on][resource] -= _amount(resource, asked)
    return {name: {r: a for r, a in room.items() if a > 0} for name, room in free.items()}


def one_pod_each(free: dict[str, Decimal]) -> tuple[Decimal, list[str]]:
    """The pod size that the most nodes hold exactly once (the larger on a tie), and those
    nodes, the roomiest last."""
    best: tuple[int, Decimal] = (0, Decimal(0))
    for size in set(free.values()):
        holds = sum(size <= room < 2 * size for room in free.values())
        best = max(best, (holds, size))
    size = best[1]
    return size, sorted((n for n, r in free.items() if size <= r < 2 * size), key=free.__getitem__)


def _takes_pods(node: dict[str, Any]) -> bool:
    spec, status = node.get("spec", {}), node.get("status", {})
    ready = any(
        c["type"] == "Ready" and c["status"] == "True" for c in status.get("conditions", [])
    )
    tainted = any(t.get("effect") in ("NoSchedule", "NoExecute") for t in spec.get("taints", []))
    return ready and not spec.get("unschedulable") and not tainted


def _amount(resource: str, value: Any) -> Decimal:
    """GPUs as counted, CPU in millicores (whole: a pod asks a whole number of them)."""
    amount = value if isinstance(value, Decimal) else (quantity(value) or Decimal(0))
    return amount if resource == GPU else (amount * 1000).to_integral_value()
