"""What the read model keeps of each object: the fields podgang reads, each repeated string
held once. A PodCliqueSet of 5 000 gangs is 10 000 pods and 5 000 PodGangs in memory; a pod
as decoded costs about 4 KB, most of it strings every pod repeats (its namespace, its
labels' values, condition types and times) and fields podgang never reads (annotations,
four of its five conditions).

- A pod keeps its name, namespace, uid, resourceVersion, the labels podgang reads (its gang,
  template hash and PodCliqueSet), its owner references, deletion time, gates, node, phase
  and its PodScheduled condition (the scheduler's verdict).
- A PodGang keeps everything (its spec is compared whole with the plan, its conditions are
  patched by position), with its strings interned: a pod reference's name is the pod's own
  name string.
"""

from __future__ import annotations

import sys
from typing import Any, Final, TypeVar

import msgspec

from gangway_contracts import labels
from gangway_contracts.k8s import ObjectMeta
from gangway_contracts.pods import POD_SCHEDULED, Pod, PodStatusView

POD_LABELS: Final = (labels.PODGANG, labels.POD_TEMPLATE_HASH, labels.PART_OF)

T = TypeVar("T")


def interned(value: T) -> T:
    """The same value with every string in it interned (structs, lists and dicts rebuilt
    only where something inside changed)."""
    return _interned(value)  # type: ignore[no-any-return]


def _interned(value: Any) -> Any:
    if isinstance(value, str):
        return sys.intern(value)
    if isinstance(value, msgspec.Struct):
        changes = {}
        for name in value.__struct_fields__:
            field = getattr(value, name)
            if isinstance(field, str | list | dict | msgspec.Struct):
                changes[name] = _interned(field)
        return msgspec.structs.replace(value, **changes) if changes else value
    if isinstance(value, list):
        return [_interned(item) for item in value]
    if isinstance(value, dict):
        return {sys.intern(k): _interned(v) for k, v in value.items()}
    return value


def compact_pod(pod: Pod) -> Pod:
    """The pod as podgang reads it: see the module's docstring."""
    meta = pod.metadata
    kept = {k: v for k in POD_LABELS if (v := meta.labels.get(k)) is not None}
    return interned(
        Pod(
            metadata=ObjectMeta(
                name=meta.name,
                namespace=meta.namespace,
                uid=meta.uid,
                resource_version=meta.resource_version,
                labels=kept,
                owner_references=meta.owner_references,
                deletion_timestamp=meta.deletion_timestamp,
            ),
            spec=pod.spec,
            status=PodStatusView(
                phase=pod.status.phase,
                conditions=[c for c in pod.status.conditions if c.type == POD_SCHEDULED],
            ),
        )
    )
