"""The fields of a Pod that Gangway's services read."""

from __future__ import annotations

from typing import Final

from gangway_contracts.k8s import ObjectMeta, Wire

# core/v1's condition the scheduler writes, and its reason from the API server while gated.
POD_SCHEDULED: Final = "PodScheduled"
SCHEDULING_GATED: Final = "SchedulingGated"
# How a scheduler marks a pod it evicts to make room for another: kube-scheduler (and
# the schedulers built on its framework) and KAI (``--update-pod-eviction-condition``)
# with core/v1's DisruptionTarget; Volcano with Ready=False, reason Evict.
DISRUPTION_TARGET: Final = "DisruptionTarget"
PREEMPTION_BY_SCHEDULER: Final = "PreemptionByScheduler"
VOLCANO_EVICT: Final = "Evict"
_EVICTED: Final = frozenset(
    {(DISRUPTION_TARGET, "True", PREEMPTION_BY_SCHEDULER), ("Ready", "False", VOLCANO_EVICT)}
)


class SchedulingGate(Wire, frozen=True, kw_only=True):
    name: str


class PodSpecView(Wire, frozen=True, kw_only=True):
    scheduler_name: str | None = None
    scheduling_gates: list[SchedulingGate] = []
    node_name: str | None = None
    node_selector: dict[str, str] = {}


class PodCondition(Wire, frozen=True, kw_only=True):
    """core/v1 PodCondition: unlike metav1.Condition, reason and message are optional."""

    type: str
    status: str
    reason: str | None = None
    message: str | None = None
    last_transition_time: str | None = None


class Terminated(Wire, frozen=True, kw_only=True):
    exit_code: int = 0


class ContainerState(Wire, frozen=True, kw_only=True):
    terminated: Terminated | None = None


class ContainerStatus(Wire, frozen=True, kw_only=True):
    """What the kubelet says of one container: whether it started (its startup probe
    passed), is ready, and how it last ended."""

    ready: bool = False
    started: bool | None = None
    state: ContainerState = ContainerState()
    last_state: ContainerState = ContainerState()

    @property
    def exited_in_error(self) -> bool:
        ended = (self.state.terminated, self.last_state.terminated)
        return any(t is not None and t.exit_code != 0 for t in ended)


class PodStatusView(Wire, frozen=True, kw_only=True):
    phase: str | None = None
    conditions: list[PodCondition] = []
    container_statuses: list[ContainerStatus] = []
    init_container_statuses: list[ContainerStatus] = []


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

    def preemption(self) -> str | None:
        """The scheduler's words when it evicted the pod to make room for another (see
        DISRUPTION_TARGET), else None."""
        for found in self.status.conditions:
            if (found.type, found.status, found.reason) in _EVICTED:
                return found.message or found.reason
        return None

    @property
    def is_ready(self) -> bool:
        """Its Ready condition is True (the kubelet's, or kwok's)."""
        return any(c.type == "Ready" and c.status == "True" for c in self.status.conditions)

    @property
    def readiness_changed_at(self) -> str | None:
        """When its Ready condition last changed (None: it has none yet)."""
        found = next((c for c in self.status.conditions if c.type == "Ready"), None)
        return found.last_transition_time if found else None

    @property
    def is_scheduled(self) -> bool:
        """Bound to a node: what "scheduled" means for a gang's minReplicas."""
        return bool(self.spec.node_name)

    @property
    def is_unavailable(self) -> bool:
        """Placed and had its chance, yet not ready, as Grove counts a clique's availability:
        failed, a container (or init container) that exited in error, or one that started
        and is not ready. A pod still starting is not counted here."""
        if not self.is_scheduled or self.is_ready:
            return False
        status = self.status
        containers = status.container_statuses
        return (
            status.phase == "Failed"
            or any(c.exited_in_error for c in status.init_container_statuses)
            or any(c.exited_in_error or (c.started and not c.ready) for c in containers)
        )
