"""PodClique and scaling-group status as Grove's operator writes it, counted from pods; and
which objects are made, set back or deleted. Pure."""

from __future__ import annotations

import msgspec

from gangway_contracts import labels
from gangway_contracts.cliques import (
    PodCliqueScalingGroupSpec,
    PodCliqueScalingGroupStatus,
    PodCliqueStatus,
)
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import ObjectMeta, OwnerReference
from gangway_contracts.subjects import Kind
from gangway_podgang.cliques import (
    PodCliqueView,
    ScalingGroupView,
    clique_status,
    cliques_to_write,
    group_status,
    statuses_to_write,
)
from gangway_podgang.compact import PodRecord
from gangway_podgang.plan import PlannedPodGroup, plan_podgangs
from tests.support.manifests import fixture

SAMPLE = "grove/samples/user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml"
NOW, LATER = "2026-11-27T10:00:00Z", "2026-11-27T11:00:00Z"


def pcs() -> PodCliqueSet:
    manifest = fixture(SAMPLE)
    manifest["metadata"]["uid"] = "pcs-uid"
    return from_object(manifest, PodCliqueSet)


def pod(
    name: str,
    *,
    gates: tuple[str, ...] = (),
    node_name: str | None = None,
    phase: str | None = None,
    ready: bool = False,
    unavailable: bool = False,
) -> PodRecord:
    return PodRecord(
        name=name,
        namespace="default",
        uid=f"uid-{name}",
        resource_version="1",
        gang="g",
        template_hash=None,
        controller_uid="gang-uid",
        deleting=False,
        gates=gates,
        node_name=node_name,
        phase=phase,
        verdict=None,
        ready=ready,
        unavailable=unavailable,
    )


def workers() -> tuple[PodCliqueSet, PlannedPodGroup]:
    found = pcs()
    group = next(g for g in plan_podgangs(found).gangs[0].podgroups if g.name.endswith("worker"))
    return found, group


def condition(status: PodCliqueStatus, type_: str) -> tuple[str, str]:
    found = next(c for c in status.conditions if c.type == type_)
    return found.status, found.reason


def test_counts_follow_the_pods_and_the_minimum_breach_grove_s_reasons() -> None:
    found, group = workers()
    names = group.pods
    gated = {n: pod(n, gates=(labels.PODGANG_PENDING_CREATION_GATE,)) for n in names}
    status = clique_status(found, group, gated, None, NOW)
    assert (status.replicas, status.schedule_gated_replicas, status.scheduled_replicas) == (3, 3, 0)
    assert condition(status, "MinAvailableBreached") == (
        "True",
        "ScheduledReplicasBelowMinAvailable",
    )
    assert condition(status, "PodCliqueScheduled") == ("False", "InsufficientScheduledPods")

    running = {n: pod(n, node_name="node-a", phase="Running", ready=True) for n in names}
    status = clique_status(found, group, running, None, NOW)
    assert (status.ready_replicas, status.scheduled_replicas) == (3, 3)
    assert condition(status, "MinAvailableBreached") == ("False", "SufficientReadyPods")
    assert condition(status, "PodCliqueScheduled") == ("True", "SufficientScheduledPods")

    # One pod failed where it runs: fewer ready or starting than the minimum (3).
    failed = running | {
        names[0]: pod(names[0], node_name="node-a", phase="Failed", unavailable=True)
    }
    status = clique_status(found, group, failed, None, NOW)
    assert condition(status, "MinAvailableBreached") == ("True", "InsufficientReadyPods")


def test_a_condition_keeps_its_transition_time_while_its_status_holds() -> None:
    found, group = workers()
    names = group.pods
    first = clique_status(found, group, {}, None, NOW)
    meta = ObjectMeta(name=group.name, generation=1)
    live = PodCliqueView(metadata=meta, status=first)
    some = {names[0]: pod(names[0], node_name="node-a")}
    again = clique_status(found, group, some, live, LATER)
    breached = next(c for c in again.conditions if c.type == "MinAvailableBreached")
    assert breached.last_transition_time == NOW  # still True: same time, new message
    assert breached.message == "Scheduled replicas (1) below MinAvailable (3)"


def test_a_group_is_available_by_its_replicas_none_breached() -> None:
    found = pcs()
    plan = plan_podgangs(found)
    members: dict[int, list[tuple[PlannedPodGroup, PodCliqueStatus]]] = {}
    running: dict[str, PodRecord] = {}
    for gang in plan.gangs:
        for group in gang.podgroups:
            if group.scaling_group_replica == 0:  # only the first replica runs
                running |= {n: pod(n, node_name="n", ready=True) for n in group.pods}
    for gang in plan.gangs:
        for group in gang.podgroups:
            counted = clique_status(found, group, running, None, NOW)
            members.setdefault(group.scaling_group_replica or 0, []).append((group, counted))
    spec = PodCliqueScalingGroupSpec(replicas=2, min_available=1, clique_names=["leader", "worker"])
    status = group_status(
        found,
        "env-demo-pcsg-0-model-instance",
        spec,
        members,
        live=None,
        now=NOW,
    )
    assert (status.available_replicas, status.scheduled_replicas, status.replicas) == (1, 1, 2)
    assert status.conditions[0].status == "False"  # 1 available, 1 needed


def test_the_group_first_then_its_cliques_owned_by_it_then_only_statuses_that_moved() -> None:
    found = pcs()
    plan = plan_podgangs(found)
    writes, stale = cliques_to_write(found, plan, cliques={}, groups={})
    assert [(w.kind, w.name) for w in writes] == [
        (Kind.PODCLIQUESCALINGGROUP, "env-demo-pcsg-0-model-instance")
    ]
    assert stale == ()
    group_meta = ObjectMeta(
        name="env-demo-pcsg-0-model-instance",
        uid="group-uid",
        resource_version="5",
        annotations={"gangway.dev/template-replicas": "2"},
        labels={"grove.io/podcliqueset-replica-index": "0"},
        owner_references=[
            OwnerReference(
                api_version="grove.io/v1alpha1",
                kind="PodCliqueSet",
                name="env-demo-pcsg",
                uid="pcs-uid",
                controller=True,
            )
        ],
    )
    group_spec = PodCliqueScalingGroupSpec(
        replicas=2, min_available=1, clique_names=["leader", "worker"]
    )
    groups = {group_meta.name: ScalingGroupView(metadata=group_meta, spec=group_spec)}
    writes, _ = cliques_to_write(found, plan, cliques={}, groups=groups)
    made = [w for w in writes if w.kind == Kind.PODCLIQUE]
    assert len(made) == 4
    cliques = {}
    for write in made:
        assert write.create is not None
        assert write.create["metadata"]["ownerReferences"][0]["uid"] == "group-uid"
        meta = {**write.create["metadata"], "uid": f"u-{write.name}", "generation": 1}
        cliques[write.name] = msgspec.convert({**write.create, "metadata": meta}, PodCliqueView)
    # Made: nothing more to create; every one's first status, the group's too.
    writes, stale = cliques_to_write(found, plan, cliques=cliques, groups=groups)
    assert (writes, stale) == ((), ())
    statuses = statuses_to_write(found, plan, cliques=cliques, groups=groups, pods={}, now=NOW)
    assert len(statuses) == 5
    # Written and mirrored back: nothing moved, nothing written, an hour later too.
    cliques = {
        s.name: msgspec.structs.replace(
            cliques[s.name], status=msgspec.convert(s.status, PodCliqueStatus)
        )
        for s in statuses
        if s.kind == Kind.PODCLIQUE
    }
    [group_write] = [s for s in statuses if s.kind == Kind.PODCLIQUESCALINGGROUP]
    groups = {
        group_meta.name: ScalingGroupView(
            metadata=group_meta,
            spec=group_spec,
            status=msgspec.convert(group_write.status, PodCliqueScalingGroupStatus),
        )
    }
    again = statuses_to_write(found, plan, cliques=cliques, groups=groups, pods={}, now=LATER)
    assert again == []
