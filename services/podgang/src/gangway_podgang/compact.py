"""What the read model keeps of each object: the fields podgang reads, each repeated string
held once. A PodCliqueSet of 5 000 gangs is 10 000 pods and 5 000 PodGangs in memory.

- A pod is one flat record (:class:`PodRecord`): its name, namespace, uid and
  resourceVersion, the labels podgang reads, its controller, whether it is being deleted,
  its gates, node and phase, the scheduler's verdict, and whether it carries the domain
  Kueue chose for it. As decoded it is about ten objects
  (metadata, labels, owner references, spec, gates, status, conditions…), 1.2 KB; the record
  is one, about 0.4 KB with its own strings.
- A PodGang keeps its spec and status whole (the spec is compared whole with the plan, the
  conditions are patched by position) and of its metadata what a pod's record keeps, its
  generation, its creation time and its Kueue queue label, with its strings interned (a
  pod reference's name is the pod's own name string) but its resourceVersion, and its
  owner reference and conditions shared with equal ones.
"""

from __future__ import annotations

import sys
from typing import Any, TypeVar

import msgspec

from gangway_contracts import kueue, kueue_topology, labels
from gangway_contracts.grove import PodGang
from gangway_contracts.incarnations import incarnation_of
from gangway_contracts.k8s import Condition, ObjectMeta, OwnerReference
from gangway_contracts.pods import Pod

T = TypeVar("T")


# Values many objects hold equal (a PodGang's owner and its conditions, written in one
# second; a pod's gates and the scheduler's verdict): one instance each, shared. Bounded:
# when full it starts again (an equal value met later is then shared from there on).
_SHARED_TYPES = (Condition, OwnerReference)
_SHARED_AT_MOST = 4096
_shared_values: dict[Any, Any] = {}


def _one_of(value: T) -> T:
    found = _shared_values.get(value)
    if found is None:
        if len(_shared_values) >= _SHARED_AT_MOST:
            _shared_values.clear()
        found = _shared_values[value] = value
    return found


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
        kept = msgspec.structs.replace(value, **changes) if changes else value
        return _one_of(kept) if isinstance(kept, _SHARED_TYPES) else kept
    if isinstance(value, list):
        return [_interned(item) for item in value]
    if isinstance(value, dict):
        return {sys.intern(k): _interned(v) for k, v in value.items()}
    return value


class PodRecord(msgspec.Struct, frozen=True, gc=False):
    """A pod as podgang reads it (see the module's docstring)."""

    name: str
    namespace: str
    uid: str
    resource_version: str
    gang: str  # its PodGang's name (labels.PODGANG), "" without one
    template_hash: str | None  # the clique template it was made from (labels.POD_TEMPLATE_HASH)
    controller_uid: str | None  # the uid of its controlling owner
    deleting: bool
    gates: tuple[str, ...]
    node_name: str | None
    phase: str | None
    verdict: tuple[str, str] | None  # see Pod.scheduler_verdict
    ready: bool = False  # its Ready condition is True
    unavailable: bool = False  # placed, had its chance, not ready (Pod.is_unavailable)
    # When its readiness last changed, or it was made (a roll's progress: rolling.py).
    changed_at: str | None = None
    incarnation: int = 0  # of its gang, when it was made (labels.INCARNATION)
    preempted: str | None = None  # the scheduler's words, evicted for another (Pod.preemption)
    # It carries the topology domain Kueue chose for it (kueue_topology.given).
    domain_given: bool = False

    def is_gated(self, gate: str) -> bool:
        return gate in self.gates

    @property
    def is_scheduled(self) -> bool:
        """Bound to a node: what "scheduled" means for a gang's minReplicas."""
        return bool(self.node_name)

    def preemption(self) -> str | None:
        """The scheduler's words when it evicted this pod for another, naming the pod."""
        if not self.preempted:
            return None
        return self.preempted if self.name in self.preempted else f"{self.name}: {self.preempted}"


def compact_pod(pod: Pod) -> PodRecord:
    """The pod as podgang reads it: see the module's docstring. Its own strings (uid,
    resourceVersion) are kept as they are; every other string is one shared copy."""
    meta, verdict = pod.metadata, pod.scheduler_verdict()
    controller = next((ref.uid for ref in meta.owner_references if ref.controller), None)
    return PodRecord(
        name=sys.intern(meta.name),  # the PodGang's reference to it holds the same
        namespace=sys.intern(meta.namespace),
        uid=meta.uid,
        resource_version=meta.resource_version,
        gang=sys.intern(meta.labels.get(labels.PODGANG, "")),
        template_hash=_shared(meta.labels.get(labels.POD_TEMPLATE_HASH)),
        controller_uid=_shared(controller),
        deleting=meta.deletion_timestamp is not None,
        # Most pods have the same gates (or none), and the same verdict: one tuple each.
        gates=_one_of(tuple(sys.intern(gate.name) for gate in pod.spec.scheduling_gates)),
        node_name=_shared(pod.spec.node_name),
        phase=_shared(pod.status.phase),
        verdict=_one_of((sys.intern(verdict[0]), sys.intern(verdict[1]))) if verdict else None,
        ready=pod.is_ready,
        unavailable=pod.is_unavailable,
        # Written in whole seconds: most pods of a roll share one string.
        changed_at=_shared(pod.readiness_changed_at or meta.creation_timestamp),
        incarnation=incarnation_of(meta.labels),
        preempted=pod.preemption(),
        domain_given=kueue_topology.given(meta.annotations),
    )


def compact_podgang(podgang: PodGang) -> PodGang:
    """The PodGang as podgang reads it: see the module's docstring."""
    meta = podgang.metadata
    kept = ObjectMeta(
        name=sys.intern(meta.name),
        namespace=sys.intern(meta.namespace),
        uid=sys.intern(meta.uid),  # its pods' controller: their records hold the same
        resource_version=meta.resource_version,  # its own: interning would only grow the table
        generation=meta.generation,
        owner_references=interned(meta.owner_references),
        # Journal entries a crash lost are made up for from the PodGang's creation on.
        creation_timestamp=_shared(meta.creation_timestamp),
        deletion_timestamp=_shared(meta.deletion_timestamp),
        # Its incarnation among them (its backend names its objects by it), and all: the
        # write that makes the gang again adds to them (a few short strings, interned).
        annotations=interned(meta.annotations),
        # Of its labels, the Kueue queue alone: its gates wait for Kueue's admission.
        labels=interned({k: v for k, v in meta.labels.items() if k == kueue.QUEUE_LABEL}),
    )
    return msgspec.structs.replace(
        podgang,
        api_version=sys.intern(podgang.api_version),
        kind=sys.intern(podgang.kind),
        metadata=kept,
        spec=interned(podgang.spec),
        status=interned(podgang.status),
    )


def _shared(value: str | None) -> str | None:
    return None if value is None else sys.intern(value)
