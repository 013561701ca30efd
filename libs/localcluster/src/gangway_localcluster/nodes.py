"""Fake nodes for the local control plane: described here, made Ready and run by kwok.

A node is a plain Node object with its capacity in ``status`` and its place in a topology in
its labels (zone → block → rack → host), so that gangs have something to be packed into. kwok
manages only nodes carrying :data:`MANAGED_BY_KWOK`; it marks them Ready and plays the pods
bound to them through Running. Pure: what to create, not how.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Final

# kwok's own convention for the nodes it fakes (its --manage-nodes-with-annotation-selector).
MANAGED_BY_KWOK: Final = ("kwok.x-k8s.io/node", "fake")
GPU: Final = "nvidia.com/gpu"
HOSTNAME_LABEL: Final = "kubernetes.io/hostname"
ZONE_LABEL: Final = "topology.kubernetes.io/zone"
BLOCK_LABEL: Final = "gangway.dev/block"
RACK_LABEL: Final = "gangway.dev/rack"
# Grove's topology domains → the node label that identifies each, broadest first.
TOPOLOGY_LABELS: Final = {
    "zone": ZONE_LABEL,
    "block": BLOCK_LABEL,
    "rack": RACK_LABEL,
    "host": HOSTNAME_LABEL,
}


@dataclass(frozen=True)
class NodePool:
    """``count`` identical nodes, filled rack by rack: ``hosts_per_rack`` nodes a rack,
    ``racks_per_block`` racks a block, ``blocks_per_zone`` blocks a zone."""

    count: int
    cpu: str = "32"
    memory: str = "256Gi"
    gpus: int = 8
    max_pods: int = 110
    prefix: str = "kwok-node"
    hosts_per_rack: int = 4
    racks_per_block: int = 2
    blocks_per_zone: int = 2
    # The pool's own labels; a topology label given here wins over the pool's racks.
    labels: dict[str, str] = field(default_factory=dict)
    first: int = 0  # index of the pool's first node: add to a pool without renaming
    taints: list[dict[str, str]] = field(default_factory=list)  # core/v1 Taints

    def __post_init__(self) -> None:
        for name in ("count", "gpus", "first"):
            if getattr(self, name) < 0:
                raise ValueError(f"{name}: must be >= 0")
        for name in ("max_pods", "hosts_per_rack", "racks_per_block", "blocks_per_zone"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name}: must be >= 1")

    def names(self) -> list[str]:
        return [f"{self.prefix}-{i}" for i in range(self.first, self.first + self.count)]

    def place(self, index: int) -> dict[str, str]:
        """The topology labels of the pool's ``index``-th node."""
        rack = index // self.hosts_per_rack
        block = rack // self.racks_per_block
        zone = block // self.blocks_per_zone
        return {
            ZONE_LABEL: f"zone-{zone}",
            BLOCK_LABEL: f"block-{block}",
            RACK_LABEL: f"rack-{rack}",
        }

    def capacity(self) -> dict[str, str]:
        found = {"cpu": self.cpu, "memory": self.memory, "pods": str(self.max_pods)}
        if self.gpus:
            found[GPU] = str(self.gpus)
        return found

    def manifests(self) -> list[dict[str, Any]]:
        key, value = MANAGED_BY_KWOK
        capacity = self.capacity()
        return [
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {
                    "name": name,
                    "labels": {
                        **self.place(self.first + i),
                        **self.labels,
                        HOSTNAME_LABEL: name,
                        "kubernetes.io/os": "linux",
                        "kubernetes.io/arch": "amd64",
                        "type": "kwok",
                    },
                    "annotations": {key: value},
                },
                **({"spec": {"taints": self.taints}} if self.taints else {}),
                # A kubelet registers its node with its capacity in the create; so do we.
                "status": {"capacity": capacity, "allocatable": capacity},
            }
            for i, name in enumerate(self.names())
        ]


def is_ready(node: dict[str, Any]) -> bool:
    """The node's Ready condition is True (kwok sets it for the nodes it manages)."""
    conditions = (node.get("status") or {}).get("conditions") or []
    return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
