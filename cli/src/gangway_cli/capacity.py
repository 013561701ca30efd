"""The nodes ``gangway whatif`` places a workload on: a capacity file, or the shape of an
existing cluster's nodes read once. Either becomes kwok node pools.

A capacity file::

    nodes:
    - count: 4          # nodes of this shape
      cpu: "32"         # allocatable, as quantities
      memory: 256Gi
      gpus: 8           # nvidia.com/gpu
      maxPods: 110
      labels: {topology.kubernetes.io/zone: zone-a}
      taints: [{key: dedicated, value: infer, effect: NoSchedule}]
      hostsPerRack: 4   # the pool's topology labels (zone/block/rack), unless labels set them
      racksPerBlock: 2
      blocksPerZone: 2
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, field_validator

from gangway_contracts.backend_config import Written
from gangway_contracts.config import read_written
from gangway_contracts.errors import FieldError, FieldErrors
from gangway_contracts.podspec import quantity
from gangway_localcluster.nodes import GPU, HOSTNAME_LABEL, NodePool

# Labels a kubelet (or kwok) sets itself: not copied from a cluster's nodes.
_OWN_LABELS = frozenset({HOSTNAME_LABEL, "type", "kubernetes.io/os", "kubernetes.io/arch"})


class Taint(Written):
    key: str = Field(min_length=1)
    value: str = ""
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]


class NodeShape(Written):
    count: int = Field(ge=0)
    cpu: str = "32"
    memory: str = "256Gi"
    gpus: int = Field(default=0, ge=0)
    max_pods: int = Field(default=110, ge=1)
    labels: dict[str, str] = {}
    taints: list[Taint] = []
    hosts_per_rack: int = Field(default=4, ge=1)
    racks_per_block: int = Field(default=2, ge=1)
    blocks_per_zone: int = Field(default=2, ge=1)

    @field_validator("cpu", "memory")
    @classmethod
    def _a_quantity(cls, value: str) -> str:
        if quantity(value) is None:
            raise ValueError(f"{value!r} is not a quantity (e.g. 32, 500m, 256Gi)")
        return value


class Capacity(Written):
    nodes: list[NodeShape] = Field(min_length=1)


def read_capacity(path: Path) -> list[NodePool]:
    """The pools a capacity file describes; FieldErrors naming each field at fault."""
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise FieldErrors([FieldError(field="", reason=f"not YAML: {exc}")]) from None
    capacity = read_written(Capacity, data)
    first = 0
    pools = []
    for shape in capacity.nodes:
        pools.append(
            NodePool(
                count=shape.count,
                cpu=shape.cpu,
                memory=shape.memory,
                gpus=shape.gpus,
                max_pods=shape.max_pods,
                labels=dict(shape.labels),
                taints=[t.model_dump(exclude_defaults=False) for t in shape.taints],
                hosts_per_rack=shape.hosts_per_rack,
                racks_per_block=shape.racks_per_block,
                blocks_per_zone=shape.blocks_per_zone,
                first=first,
                prefix="whatif-node",
            )
        )
        first += shape.count
    return pools


def pools_like(nodes: list[dict[str, Any]]) -> list[NodePool]:
    """One kwok node per node of a cluster (its labels, allocatable cpu, memory, pods and
    nvidia.com/gpu, its taints), kwok's own and unschedulable ones left out."""
    pools = []
    for node in nodes:
        meta, spec = node.get("metadata") or {}, node.get("spec") or {}
        if spec.get("unschedulable"):
            continue
        allocatable = (node.get("status") or {}).get("allocatable") or {}
        labels = {k: v for k, v in (meta.get("labels") or {}).items() if k not in _OWN_LABELS}
        pools.append(
            NodePool(
                count=1,
                cpu=str(allocatable.get("cpu", "0")),
                memory=str(allocatable.get("memory", "0")),
                gpus=int(quantity(allocatable.get(GPU, "0")) or 0),
                max_pods=max(1, int(quantity(allocatable.get("pods", "110")) or 110)),
                labels=labels,
                taints=[
                    {k: t[k] for k in ("key", "value", "effect") if k in t}
                    for t in spec.get("taints") or []
                ],
                prefix=f"like-{meta.get('name', 'node')}",
            )
        )
    return pools
