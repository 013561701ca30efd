"""A simulated cluster for podgang's decisions: what the API server, a backend and a scheduler
would make of the writes, and a loop that decides and writes until it converges, losing
writes when asked. Pure: no server."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgspec
from msgspec.structs import replace

from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, PodGang, PodGangSpec, PodGangStatus
from gangway_contracts.incarnations import incarnation_of
from gangway_contracts.k8s import Condition, ObjectMeta, OwnerReference
from gangway_contracts.pods import Pod, PodSpecView, SchedulingGate
from gangway_podgang.compact import PodRecord, compact_pod
from gangway_podgang.decide import (
    Decision,
    Observed,
    Placement,
    decide,
    initialized_status,
)
from gangway_podgang.manifests import podgang_spec
from gangway_podgang.plan import PlannedGang, plan_podgangs
from gangway_podgang.rolling import ROLLING_RECREATE, RollPolicy, to_roll

GATE = labels.PODGANG_PENDING_CREATION_GATE
INITIALIZED = labels.INITIALIZED
PCS_UID = "u-pcs"


def owner(kind: str, name: str, uid: str) -> OwnerReference:
    return OwnerReference(api_version="v1", kind=kind, name=name, uid=uid, controller=True)


def with_condition(
    podgang: PodGang, type_: str, status: bool, reason: str = "", message: str = ""
) -> PodGang:
    condition = Condition(
        type=type_,
        status="True" if status else "False",
        reason=reason or ("Ready" if status else "PodsPending"),
        message=message,
        last_transition_time="2026-01-01T00:00:00Z",
        observed_generation=podgang.metadata.generation,
    )
    old = podgang.status.conditions if podgang.status else []
    conditions = [c for c in old if c.type != type_] + [condition]
    phase = podgang.status.phase if podgang.status else "Pending"
    return msgspec.structs.replace(
        podgang, status=PodGangStatus(phase=phase, conditions=conditions)
    )


class Cluster:
    """What the API server, a backend and a scheduler would make of the writes."""

    def __init__(self, gangs: tuple[PlannedGang, ...]) -> None:
        self.podgangs: dict[str, PodGang] = {}
        self.pods: dict[str, PodRecord] = {}
        self.gangs = {g.name: g for g in gangs}

    def observed(self) -> Observed:
        return Observed(podgangs=dict(self.podgangs), pods=dict(self.pods))

    def apply(self, decision: Decision, keep: Callable[[], bool]) -> None:
        """Carry out each write of the decision for which ``keep()`` says yes."""
        for gang in decision.create_podgangs:
            if keep():
                self.create_podgang(gang)
        for name in decision.delete_podgangs:
            if keep():
                self.delete_podgang(name)
        for live, spec in decision.update_specs:
            if keep():
                generation = live.metadata.generation + 1
                meta = msgspec.structs.replace(live.metadata, generation=generation)
                self.podgangs[live.metadata.name] = replace(live, metadata=meta, spec=spec)
        for live, spec in decision.incarnate:
            if keep():
                self.incarnate(live, spec)
        for batch in decision.create_pods:
            for group, index in batch.pods:
                if keep():
                    self.create_pod(group.pods[index], batch.gang.name)
        for name in decision.delete_pods:
            if keep():
                del self.pods[name]
        self.apply_status(decision, keep)
        for pod in decision.lift_gates:
            self.check_may_lift(pod)
            if keep():
                self.pods[pod.name] = replace(pod, gates=())

    def apply_status(self, decision: Decision, keep: Callable[[], bool]) -> None:
        for live, status in decision.set_initialized:
            name = live.metadata.name
            if keep() and name in self.podgangs:
                self.podgangs[name] = with_condition(self.podgangs[name], INITIALIZED, status)
        for live, placement in decision.set_placement:
            if keep():
                self.place(live.metadata.name, placement)

    def place(self, name: str, placement: Placement) -> None:
        if name not in self.podgangs:
            return
        updated = with_condition(
            self.podgangs[name],
            labels.SCHEDULED,
            placement.scheduled,
            placement.reason,
            placement.message,
        )
        assert updated.status is not None
        placed = replace(updated.status, phase=placement.phase)
        self.podgangs[name] = replace(updated, status=placed)

    def incarnate(self, live: PodGang, spec: PodGangSpec) -> None:
        """The gang made again: its next incarnation, a new generation, no pod referenced."""
        meta = live.metadata
        made = str(incarnation_of(meta.annotations) + 1)
        annotations = {**meta.annotations, labels.INCARNATION: made}
        changed = replace(meta, generation=meta.generation + 1, annotations=annotations)
        self.podgangs[meta.name] = replace(live, metadata=changed, spec=spec)

    def create_podgang(self, gang: PlannedGang) -> None:
        meta = ObjectMeta(
            name=gang.name,
            namespace="ns",
            uid=f"u-{gang.name}",
            generation=1,
            owner_references=[owner("PodCliqueSet", "pcs", PCS_UID)],
        )
        self.podgangs[gang.name] = PodGang(metadata=meta, spec=podgang_spec(gang, "ns", None))

    def delete_podgang(self, name: str) -> None:
        del self.podgangs[name]
        owned = [p for p, pod in self.pods.items() if pod.gang == name]
        for pod in owned:  # garbage collection
            del self.pods[pod]

    def create_pod(self, name: str, gang: str) -> None:
        (made_from,) = [g.template_hash for g in self.gangs[gang].podgroups if name in g.pods]
        pod_labels = {labels.PODGANG: gang, labels.POD_TEMPLATE_HASH: made_from}
        if incarnation := incarnation_of(self.podgangs[gang].metadata.annotations):
            pod_labels[labels.INCARNATION] = str(incarnation)
        meta = ObjectMeta(
            name=name,
            namespace="ns",
            labels=pod_labels,
            owner_references=[owner("PodGang", gang, self.podgangs[gang].metadata.uid)],
        )
        spec = PodSpecView(scheduling_gates=[SchedulingGate(name=GATE)])
        self.pods[name] = compact_pod(Pod(metadata=meta, spec=spec))

    def check_may_lift(self, pod: PodRecord) -> None:
        gang = self.gangs[pod.gang]
        live = self.podgangs[gang.name]
        assert initialized_status(live) is True, "gate lifted before the gang was Initialized"
        assert live.holds_now(labels.BACKEND_SYNCED), "before the backend synced"
        now = incarnation_of(live.metadata.annotations)
        assert pod.incarnation == now, "a pod of an earlier incarnation lifted"
        assert all(self.pods[p].incarnation == now for _, _, p in gang.pods if p in self.pods), (
            "lifted while an old gang's pod is still there"
        )
        if not gang.is_base:
            base = self.gangs[gang.base]
            for group in base.podgroups:
                bound = sum(1 for p in group.pods if p in self.pods and self.pods[p].is_scheduled)
                assert bound >= group.min_replicas, "scaled gang before its base was scheduled"

    def backend_and_scheduler(self, act: Callable[[], bool]) -> bool:
        """The backend syncs PodGangs, the scheduler binds ungated pods; True if either did."""
        moved = False
        for name, live in list(self.podgangs.items()):
            if not live.holds_now(labels.BACKEND_SYNCED) and act():
                self.podgangs[name] = with_condition(live, labels.BACKEND_SYNCED, True)
                moved = True
        for name, pod in list(self.pods.items()):
            if not pod.gates and not pod.is_scheduled and act():
                self.pods[name] = replace(pod, node_name="node-1", ready=True)  # as kwok
                moved = True
        return moved


def converge(
    cluster: Cluster,
    gangs: tuple[PlannedGang, ...],
    rng: random.Random,
    check: Callable[[], None] = lambda: None,
    policy: RollPolicy = ROLLING_RECREATE,
) -> None:
    """Decide and write until nothing is left to write and nobody else has anything to do;
    in the first rounds, with ``rng`` choosing, writes are lost half the time. Each round
    writes the decision gang by gang, as the streaming reconcile does, and in the first
    rounds some gangs' parts are not written yet (still in flight). ``check`` runs after
    every round."""
    flaky = rng.random() < 0.5
    order = [g.name for g in gangs]
    for round_ in range(200):
        roll = to_roll(gangs, cluster.pods, policy)
        decision = decide(gangs, "ns", None, cluster.observed(), PCS_UID, roll=roll)
        again = decide(gangs, "ns", None, cluster.observed(), PCS_UID, roll=roll)
        assert decision == again, "deterministic"
        parts = decision.per_gang(cluster.pods, order)
        assert_partition(decision, [part for _, part in parts])
        if not (decision.delete_pods or decision.incarnate):  # nothing rolled: a part may be
            focus = {g.name for g in gangs if rng.random() < 0.5}
            partial = decide(gangs, "ns", None, cluster.observed(), PCS_UID, focus=focus)
            assert partial.per_gang(cluster.pods, order) == [
                (name, part) for name, part in parts if name in focus
            ], "a partial decision is the whole one's part for those gangs"
        lossy = flaky and round_ < 20

        def keep(lossy: bool = lossy) -> bool:
            return not lossy or rng.random() < 0.5

        for _, part in parts:
            if not lossy or rng.random() < 0.7:
                cluster.apply(part, keep)
        moved = cluster.backend_and_scheduler(keep)
        check()
        if decision.done and not moved and not lossy:
            return
    raise AssertionError("no convergence in 200 rounds")


def assert_partition(decision: Decision, parts: list[Decision]) -> None:
    """Every write of the decision is in exactly one part."""
    for what in Decision.__dataclass_fields__:
        whole = getattr(decision, what)
        split = [item for part in parts for item in getattr(part, what)]
        assert sorted(map(repr, split)) == sorted(map(repr, whole)), what


def assert_converged(cluster: Cluster, gangs: tuple[PlannedGang, ...]) -> None:
    assert sorted(cluster.podgangs) == sorted(g.name for g in gangs)
    assert sorted(cluster.pods) == sorted(pod for g in gangs for _, _, pod in g.pods)
    assert all(not p.gates for p in cluster.pods.values())
    for gang in gangs:
        live = cluster.podgangs[gang.name]
        assert initialized_status(live) is True
        assert [len(g.pod_references) for g in live.spec.podgroups] == [
            len(g.pods) for g in gang.podgroups
        ]


def plan_of(manifest: dict[str, Any]) -> tuple[PlannedGang, ...]:
    return plan_podgangs(from_object(manifest, PodCliqueSet)).gangs


def converged_on(manifest: dict[str, Any], rng: random.Random) -> Cluster:
    """A cluster where the manifest's plan has converged."""
    gangs = plan_of(manifest)
    cluster = Cluster(gangs)
    converge(cluster, gangs, rng)
    return cluster


def replanned(cluster: Cluster, manifest: dict[str, Any]) -> tuple[PlannedGang, ...]:
    """The changed manifest's plan, known to the cluster's scheduler and backend."""
    gangs = plan_of(manifest)
    cluster.gangs.update({g.name: g for g in gangs})
    return gangs
