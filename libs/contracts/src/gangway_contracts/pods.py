"""The fields of a Pod that Gangway's services read."""

from __future__ import annotations

from typing import Final

from gangway_contracts.k8s import ObjectMeta, Wire

UNSCHEDULABLE: Final = "Unschedulable"  # core/v1 PodReasonUnschedulable


class SchedulingGate(Wire, frozen=True, kw_only=True):
    name: str


class PodSpecView(Wire, frozen=True, kw_only=True):
    scheduler_name: str | None = None
    scheduling_gates: list[SchedulingGate] = []
    node_name: str | None = None


class PodCondition(Wire, frozen=True, kw_only=True):
    """core/v1 PodCondition: unlike metav1.Condition, reason and message are optional."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class PodStatusView(Wire, frozen=True, kw_only=True):
    phase: str | None = None
    conditions: list[PodCondition] = []


class Pod(Wire, frozen=True, kw_only=True):
    metadata: ObjectMeta
    spec: PodSpecView = PodSpecView()
    status: PodStatusView = PodStatusView()
    api_version: str = "v1"
    kind: str = "Pod"

    def is_gated(self, gate: str) -> bool:
        return any(g.name == gate for g in self.spec.scheduling_gates)

    def unschedulable(self) -> str | None:
        """The scheduler's message when it last found no place for the pod, else None."""
        for found in self.status.conditions:
            if (found.type, found.status, found.reason) == ("PodScheduled", "False", UNSCHEDULABLE):
                return found.message or UNSCHEDULABLE
        return None

    @property
    def is_scheduled(self) -> bool:
        """Bound to a node: what "scheduled" means for a gang's minReplicas."""
        return bool(self.spec.node_name)
