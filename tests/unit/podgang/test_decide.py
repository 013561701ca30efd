"""The reconcile's decisions, played against a simulated cluster (tests/support/
simulated_cluster.py): whatever writes are lost (a crash between two writes) or repeated, it
converges, and no gate comes off early."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st
from msgspec.structs import replace

from gangway_contracts import kueue, kueue_topology, labels
from gangway_contracts.grove import PodGang
from gangway_contracts.k8s import ObjectMeta
from gangway_podgang.decide import (
    Observed,
    decide,
    gates_held_by,
    placement_of,
    scheduled,
    stray_pods,
    unadmitted_pods,
)
from gangway_podgang.manifests import podgang_spec
from gangway_podgang.rolling import ROLLING_RECREATE, RollPolicy, outdated, to_roll
from tests.support.simulated_cluster import (
    PCS_UID,
    Cluster,
    assert_converged,
    converge,
    converged_on,
    owner,
    plan_of,
    replanned,
    with_condition,
)
from tests.support.strategies import podcliquesets


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
    assert to_roll(newer, cluster.pods, RollPolicy(rolls=False)) == []
    assert decide(newer, "ns", None, cluster.observed(), PCS_UID).done, "nothing rolled, nothing"
    roll = to_roll(newer, cluster.pods, ROLLING_RECREATE)
    rolling = decide(newer, "ns", None, cluster.observed(), PCS_UID, roll=roll)
    assert [live.metadata.name for live, _ in rolling.incarnate] == ["pcs-0"], "made again"
    assert rolling.delete_pods == ()
    cluster.apply(rolling, lambda: True)
    after = decide(newer, "ns", None, cluster.observed(), PCS_UID, roll=roll)
    assert after.incarnate == (), "made again once"
    assert after.delete_pods == ("pcs-0-w-0", "pcs-0-w-1"), "replica 0's old gang, whole"
    # An older pod still terminating (a real kubelet's grace period) while its sibling is
    # made again: the gang is still rolled, and not made again a second time.
    cluster.pods["pcs-0-w-0"] = replace(cluster.pods["pcs-0-w-0"], deleting=True)
    del cluster.pods["pcs-0-w-1"]
    cluster.create_pod("pcs-0-w-1", "pcs-0")
    assert to_roll(newer, cluster.pods, ROLLING_RECREATE) == ["pcs-0"], "still outdated"
    meanwhile = decide(newer, "ns", None, cluster.observed(), PCS_UID, roll=roll)
    assert meanwhile.incarnate == (), "its new pods are current: not made again"


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
        "its base gang pcs-0 is not scheduled"
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


def _queued(podgang: PodGang) -> PodGang:
    meta = replace(podgang.metadata, labels={**podgang.metadata.labels, kueue.QUEUE_LABEL: "team"})
    return replace(podgang, metadata=meta)


def test_a_gang_in_a_kueue_queue_keeps_its_gates_until_kueue_admits_it() -> None:
    gangs = plan_of(SCALED)
    base = gangs[0]
    cluster = Cluster(gangs)
    cluster.create_podgang(base)
    for _, _, pod in base.pods:
        cluster.create_pod(pod, base.name)
    planned, pods = {g.name: g for g in gangs}, cluster.observed().pods
    synced = with_condition(_queued(cluster.podgangs[base.name]), labels.BACKEND_SYNCED, True)
    assert gates_held_by(base, synced, planned, pods, ()) == "Kueue has not admitted it"
    over = with_condition(synced, kueue.QUEUE_ADMITTED, False, "OverQuota", "Kueue: 8 more needed")
    assert gates_held_by(base, over, planned, pods, ()) == (
        "Kueue has not admitted it: Kueue: 8 more needed"
    )
    # While held so, the PodGang says why in Kueue's words, which a gate alone would not.
    placement = placement_of(base, pods, over, held="Kueue has not admitted it")
    assert (placement.reason, placement.message) == ("OverQuota", "Kueue: 8 more needed")
    assert placement.worth_saying
    admitted = with_condition(synced, kueue.QUEUE_ADMITTED, True, "Admitted")
    assert gates_held_by(base, admitted, planned, pods, ()) is None
    # A gang naming no queue never waits for Kueue, whatever a condition says.
    unqueued = with_condition(cluster.podgangs[base.name], labels.BACKEND_SYNCED, True)
    assert gates_held_by(base, unqueued, planned, pods, ()) is None
    # Kueue chose the gang's domains: its gates wait until each gated pod carries its own.
    placed = with_condition(synced, kueue.QUEUE_ADMITTED, True, kueue_topology.TOPOLOGY_ASSIGNED)
    assert gates_held_by(base, placed, planned, pods, ()) == (
        "the domains Kueue chose are not on every pod yet"
    )
    given = {name: replace(pod, domain_given=True) for name, pod in pods.items()}
    assert gates_held_by(base, placed, planned, given, ()) is None


def test_a_gang_kueue_evicted_is_stopped_whole_and_made_again_gated() -> None:
    manifest: dict[str, Any] = {
        "metadata": {"name": "pcs", "namespace": "ns"},
        "spec": {"replicas": 1, "template": {"cliques": [{"name": "w", "spec": {"replicas": 3}}]}},
    }
    gangs = plan_of(manifest)
    [gang] = gangs
    cluster = Cluster(gangs)
    cluster.create_podgang(gang)
    names = [pod for _, _, pod in gang.pods]
    for name in names:
        cluster.create_pod(name, gang.name)
    # Two placed, one still gated (its gate not lifted yet when Kueue took it back).
    for name in names[:2]:
        cluster.pods[name] = replace(cluster.pods[name], gates=(), node_name="node-1")
    live = cluster.podgangs[gang.name]
    admitted = with_condition(_queued(live), kueue.QUEUE_ADMITTED, True, "Admitted")
    assert unadmitted_pods(gang, admitted, cluster.pods) == ()
    evicted = with_condition(_queued(live), kueue.QUEUE_ADMITTED, False, "Preempted", "evicted")
    assert unadmitted_pods(gang, evicted, cluster.pods) == tuple(names[:2])
    # Already on their way out: not deleted again.
    for name in names[:2]:
        cluster.pods[name] = replace(cluster.pods[name], deleting=True)
    assert unadmitted_pods(gang, evicted, cluster.pods) == ()
    # The PodGang names no queue (the label went): nothing of Kueue's applies.
    assert unadmitted_pods(gang, with_condition(live, kueue.QUEUE_ADMITTED, False), {}) == ()
