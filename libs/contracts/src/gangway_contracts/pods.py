"""The fields of a Pod that Gangway's services read."""

from __future__ import annotations

from typing import Final

from gangway_contracts.k8s import ObjectMeta, Wire

# core/v1's condition the scheduler writes, and its reason from the API server while gated.
POD_SCHEDULED: Final = "PodScheduled"
SCHEDULING_GATED: Final = "SchedulingGated"


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

    def scheduler_verdict(self) -> tuple[str, str] | None:
        """(reason, message) when the scheduler tried the pod and did not place it
        (``Unschedulable``, or ``SchedulerError`` when one of its plugins failed), else None."""
        for found in self.status.conditions:
            if found.type != POD_SCHEDULED or found.status != "False":
                continue
            if found.reason and found.reason != SCHEDULING_GATED:
                return found.reason, found.message or found.reason
        return None

    @property
    def is_ready(self) -> bool:
        """Its Ready condition is True (the kubelet's, or kwok's)."""
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)

    @property
    def is_scheduled(self) -> bool:
        """Bound to a node: what "scheduled" means for a gang's minReplicas."""
        return bool(self.spec.node_name)
