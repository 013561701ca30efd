"""The reconcile's decisions, played against a simulated cluster: whatever writes are lost
(a crash between two writes) or repeated, it converges, and no gate comes off early."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import msgspec
from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, PodGang, PodGangStatus
from gangway_contracts.k8s import Condition, ObjectMeta, OwnerReference
from gangway_contracts.pods import Pod, PodSpecView, SchedulingGate
from gangway_podgang.compact import PodRecord, compact_pod
from gangway_podgang.decide import (
    Decision,
    Observed,
    Placement,
    condition_true_now,
    decide,
    gates_held_by,
    initialized_status,
    outdated,
    scheduled,
    stray_pods,
)
from gangway_podgang.manifests import podgang_spec
from gangway_podgang.plan import PlannedGang, plan_podgangs
from tests.support.strategies import podcliquesets

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
        meta = ObjectMeta(
            name=name,
            namespace="ns",
            labels={labels.PODGANG: gang, labels.POD_TEMPLATE_HASH: made_from},
            owner_references=[owner("PodGang", gang, self.podgangs[gang].metadata.uid)],
        )
        spec = PodSpecView(scheduling_gates=[SchedulingGate(name=GATE)])
        self.pods[name] = compact_pod(Pod(metadata=meta, spec=spec))

    def check_may_lift(self, pod: PodRecord) -> None:
        gang = self.gangs[pod.gang]
        live = self.podgangs[gang.name]
        assert initialized_status(live) is True, "gate lifted before the gang was Initialized"
        assert condition_true_now(live, labels.BACKEND_SYNCED), "before the backend synced"
        if not gang.is_base:
            base = self.gangs[gang.base]
            for group in base.podgroups:
                bound = sum(1 for p in group.pods if p in self.pods and self.pods[p].is_scheduled)
                assert bound >= group.min_replicas, "scaled gang before its base was scheduled"

    def backend_and_scheduler(self, act: Callable[[], bool]) -> bool:
        """The backend syncs PodGangs, the scheduler binds ungated pods; True if either did."""
        moved = False
        for name, live in list(self.podgangs.items()):
            if not condition_true_now(live, labels.BACKEND_SYNCED) and act():
                self.podgangs[name] = with_condition(live, labels.BACKEND_SYNCED, True)
                moved = True
        for name, pod in list(self.pods.items()):
            if not pod.gates and not pod.is_scheduled and act():
                self.pods[name] = replace(pod, node_name="node-1")
                moved = True
        return moved


def converge(
    cluster: Cluster,
    gangs: tuple[PlannedGang, ...],
    rng: random.Random,
    check: Callable[[], None] = lambda: None,
) -> None:
    """Decide and write until nothing is left to write and nobody else has anything to do;
    in the first rounds, with ``rng`` choosing, writes are lost half the time. Each round
    writes the decision gang by gang, as the streaming reconcile does, and in the first
    rounds some gangs' parts are not written yet (still in flight). ``check`` runs after
    every round."""
    flaky = rng.random() < 0.5
    order = [g.name for g in gangs]
    for round_ in range(200):
        decision = decide(gangs, "ns", None, cluster.observed(), PCS_UID)
        assert decision == decide(gangs, "ns", None, cluster.observed(), PCS_UID), "deterministic"
        parts = decision.per_gang(cluster.pods, order)
        assert_partition(decision, [part for _, part in parts])
        if not decision.delete_pods:  # nothing rolled: a partial decision may be taken
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


@settings(max_examples=60, deadline=None)
@given(podcliquesets(), st.randoms(use_true_random=False))
def test_converges_whatever_writes_are_lost_and_never_lifts_a_gate_early(
    manifest: dict[str, Any], rng: random.Random
) -> None:
    gangs = plan_of(manifest)
    cluster = Cluster(gangs)
    converge(cluster, gangs, rng)
    assert_converged(cluster, gangs)


@settings(max_examples=40, deadline=None)
@given(podcliquesets(), st.randoms(use_true_random=False))
def test_scaling_down_removes_the_highest_indices_and_converges(
    manifest: dict[str, Any], rng: random.Random
) -> None:
    cluster = converged_on(manifest, rng)
    for clique in manifest["spec"]["template"]["cliques"]:
        spec = clique["spec"]
        spec["replicas"] = max(1, spec["replicas"] - 1)
        spec["minAvailable"] = min(spec.get("minAvailable", 1), spec["replicas"])
    manifest["spec"]["replicas"] = max(0, manifest["spec"]["replicas"] - 1)
    smaller = replanned(cluster, manifest)
    before = set(cluster.pods)
    converge(cluster, smaller, rng)
    assert_converged(cluster, smaller)
    assert set(cluster.pods) <= before, "shrinking creates nothing"


@settings(max_examples=40, deadline=None)
@given(podcliquesets(), st.randoms(use_true_random=False))
def test_a_template_change_replaces_gangs_one_podcliqueset_replica_at_a_time(
    manifest: dict[str, Any], rng: random.Random
) -> None:
    cluster = converged_on(manifest, rng)
    clique = manifest["spec"]["template"]["cliques"][0]
    clique["spec"]["podSpec"] = {"containers": [{"name": "c", "image": "example.com/next:2"}]}
    newer = replanned(cluster, manifest)

    def one_replica_down() -> None:
        down = {g.pcs_replica for g in newer if not scheduled(g, cluster.pods)}
        assert len(down) <= 1, f"replicas {sorted(down)} down at once"

    converge(cluster, newer, rng, one_replica_down)
    assert_converged(cluster, newer)
    for gang in newer:
        for group, _, pod in gang.pods:
            assert not outdated(group, cluster.pods[pod]), pod


def test_on_delete_replaces_only_what_was_deleted() -> None:
    manifest: dict[str, Any] = {
        "metadata": {"name": "pcs", "namespace": "ns"},
        "spec": {"replicas": 2, "template": {"cliques": [{"name": "w", "spec": {"replicas": 2}}]}},
    }
    cluster = converged_on(manifest, random.Random(0))
    manifest["spec"]["template"]["cliques"][0]["spec"]["podSpec"] = {"priority": 7}
    newer = replanned(cluster, manifest)
    on_delete = decide(newer, "ns", None, cluster.observed(), PCS_UID, rolling=False)
    assert on_delete.done, "OnDelete: a template change deletes nothing"
    rolling = decide(newer, "ns", None, cluster.observed(), PCS_UID)
    assert rolling.delete_pods == ("pcs-0-w-0", "pcs-0-w-1"), "replica 0's gang, whole"


def test_a_fresh_podcliqueset_gets_its_podgangs_before_any_pod() -> None:
    manifest = {
        "metadata": {"name": "pcs", "namespace": "ns"},
        "spec": {
            "replicas": 1,
            "template": {"cliques": [{"name": "w", "spec": {"replicas": 2}}]},
        },
    }
    gangs = plan_of(manifest)
    first = decide(gangs, "ns", None, Observed(podgangs={}, pods={}), PCS_UID)
    assert [g.name for g in first.create_podgangs] == ["pcs-0"]
    assert first.create_pods == ()
    cluster = Cluster(gangs)
    cluster.apply(first, lambda: True)
    second = decide(gangs, "ns", None, cluster.observed(), PCS_UID)
    assert [live.metadata.name for live, status in second.set_initialized] == ["pcs-0"]
    assert [[g.pods[i] for g, i in b.pods] for b in second.create_pods] == [
        ["pcs-0-w-0", "pcs-0-w-1"]
    ]


def test_a_podgang_the_podcliqueset_does_not_control_is_never_deleted() -> None:
    manifest = {
        "metadata": {"name": "pcs", "namespace": "ns"},
        "spec": {"replicas": 1, "template": {"cliques": [{"name": "w", "spec": {"replicas": 1}}]}},
    }
    gangs = plan_of(manifest)
    # Someone else's PodGang that says it is part of the PodCliqueSet.
    stray = PodGang(
        metadata=ObjectMeta(name="pcs-extra", namespace="ns", uid="u-x"),
        spec=podgang_spec(gangs[0], "ns", None),
    )
    decision = decide(gangs, "ns", None, Observed(podgangs={"pcs-extra": stray}, pods={}), PCS_UID)
    assert decision.delete_podgangs == ()
    ours = replace(
        stray, metadata=replace(stray.metadata, owner_references=[owner("P", "pcs", PCS_UID)])
    )
    decision = decide(gangs, "ns", None, Observed(podgangs={"pcs-extra": ours}, pods={}), PCS_UID)
    assert decision.delete_podgangs == ("pcs-extra",)


def test_per_gang_parts_come_in_plan_order_gangs_no_longer_planned_first() -> None:
    manifest: dict[str, Any] = {
        "metadata": {"name": "pcs", "namespace": "ns"},
        "spec": {"replicas": 3, "template": {"cliques": [{"name": "w", "spec": {"replicas": 1}}]}},
    }
    cluster = converged_on(manifest, random.Random(0))
    manifest["spec"]["replicas"] = 2
    fewer = replanned(cluster, manifest)
    del cluster.pods["pcs-0-w-0"]  # someone deleted a pod: gang pcs-0 makes it again
    decision = decide(fewer, "ns", None, cluster.observed(), PCS_UID)
    parts = decision.per_gang(cluster.pods, [g.name for g in fewer])
    assert [gang for gang, _ in parts] == ["pcs-2", "pcs-0"]
    assert parts[0][1].delete_podgangs == ("pcs-2",)
    assert [b.gang.name for b in parts[1][1].create_pods] == ["pcs-0"]


SCALED: dict[str, Any] = {
    "metadata": {"name": "pcs", "namespace": "ns"},
    "spec": {
        "replicas": 1,
        "template": {
            "cliques": [{"name": "w", "spec": {"replicas": 1}}],
            "podCliqueScalingGroups": [
                {"name": "sg", "cliqueNames": ["w"], "replicas": 2, "minAvailable": 1}
            ],
        },
    },
}


def test_gates_stay_on_for_each_reason_of_the_rule_book() -> None:
    """One rule, one reason: the backend, the base gang, a roll; then off."""
    gangs = plan_of(SCALED)
    base, scaled_gang = gangs[0], gangs[1]
    assert (base.is_base, scaled_gang.is_base) == (True, False)
    cluster = Cluster(gangs)
    for gang in gangs:
        cluster.create_podgang(gang)
        for _, _, pod in gang.pods:
            cluster.create_pod(pod, gang.name)
    planned = {g.name: g for g in gangs}
    live = cluster.podgangs[scaled_gang.name]
    pods = cluster.observed().pods
    assert gates_held_by(scaled_gang, live, planned, pods, ()) == (
        "its backend has not synced this generation"
    )
    synced = with_condition(live, labels.BACKEND_SYNCED, True)
    assert gates_held_by(scaled_gang, synced, planned, pods, ()) == (
        "its base gang is not scheduled"
    )
    for _, _, pod in base.pods:
        cluster.pods[pod] = replace(cluster.pods[pod], node_name="node-1")
    pods = cluster.observed().pods
    assert gates_held_by(scaled_gang, synced, planned, pods, {base.name}) == "it is being replaced"
    assert gates_held_by(scaled_gang, synced, planned, pods, ()) is None


def test_pods_a_podgang_no_longer_plans_are_its_strays() -> None:
    gangs = plan_of(SCALED)
    cluster = Cluster(gangs)
    base = gangs[0]
    cluster.create_podgang(base)
    for _, _, pod in base.pods:
        cluster.create_pod(pod, base.name)
    extra = replace(cluster.pods[base.pods[0][2]], name="pcs-0-w-9")
    live = cluster.podgangs[base.name]
    assert stray_pods(base, live, [*cluster.pods.values(), extra]) == ("pcs-0-w-9",)
    foreign = replace(extra, controller_uid="someone-else")
    assert stray_pods(base, live, [foreign]) == ()
