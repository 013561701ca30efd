"""Grove's RollingRecreate with per-component maxUnavailable and progressDeadline
(rolling.py), decided on a simulated cluster: gangs replaced whole, as many at once as the
budget allows, a gang already down replaced at once, a stalled roll reported."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from msgspec.structs import replace

from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, RollingUpdateConfiguration
from gangway_contracts.incarnations import incarnated, incarnation_of
from gangway_podgang.rolling import (
    CLIQUE,
    GROUP,
    RollPolicy,
    available,
    roll_policy,
    stale,
    stall,
    to_roll,
)
from tests.support.simulated_cluster import (
    assert_converged,
    converge,
    converged_on,
    replanned,
)

T0 = datetime(2026, 11, 28, 4, 0, tzinfo=UTC)


def serving(
    group_replicas: int = 4, rolling_update: dict[str, Any] | None = None
) -> dict[str, Any]:
    """One PodCliqueSet replica: a frontend of 2 pods, a scaling group of leader + 2 workers
    with ``group_replicas`` replicas, 1 of them in the base gang."""
    group: dict[str, Any] = {
        "name": "model",
        "cliqueNames": ["leader", "worker"],
        "replicas": group_replicas,
        "minAvailable": 1,
    }
    if rolling_update is not None:
        group["rollingUpdate"] = rolling_update
    return {
        "metadata": {"name": "pcs", "namespace": "ns"},
        "spec": {
            "replicas": 1,
            "template": {
                "cliques": [
                    {"name": "frontend", "spec": {"replicas": 2}},
                    {"name": "leader", "spec": {"replicas": 1}},
                    {"name": "worker", "spec": {"replicas": 2}},
                ],
                "podCliqueScalingGroups": [group],
            },
        },
    }


def changed(manifest: dict[str, Any], *cliques: str) -> None:
    for clique in manifest["spec"]["template"]["cliques"]:
        if clique["name"] in cliques:
            clique["spec"]["podSpec"] = {"containers": [{"name": "c", "image": "next:2"}]}


def policy_of(manifest: dict[str, Any]) -> RollPolicy:
    return roll_policy(from_object(manifest, PodCliqueSet))


@pytest.mark.parametrize(
    ("max_unavailable", "first"),
    [
        (None, ["pcs-0"]),
        (2, ["pcs-0", "pcs-0-model-0"]),
        ("75%", ["pcs-0", "pcs-0-model-0", "pcs-0-model-1"]),
    ],
)
def test_a_scaling_group_rolls_as_many_replicas_at_once_as_its_budget(
    max_unavailable: int | str | None, first: list[str]
) -> None:
    manifest = serving(rolling_update={"maxUnavailable": max_unavailable})
    cluster = converged_on(manifest, random.Random(0))
    changed(manifest, "leader", "worker")
    newer = replanned(cluster, manifest)
    policy = policy_of(manifest)
    assert to_roll(newer, cluster.pods, policy) == first
    budget = policy.allowed_down((GROUP, "model"), 4)

    def within_budget() -> None:
        down = [g.name for g in newer if not available(g, cluster.pods)]
        assert len(down) <= budget, f"{down} down at once"

    converge(cluster, newer, random.Random(1), within_budget, policy)
    assert_converged(cluster, newer)
    assert not any(stale(g, cluster.pods) for g in newer)


def test_a_base_gang_larger_than_a_budget_is_still_replaced_whole_when_nothing_is_down() -> None:
    # The base gang holds both frontend pods: a budget of 1 pod cannot be kept, and a gang
    # is not replaced in parts.
    manifest = serving()
    manifest["spec"]["template"]["cliques"][0]["rollingUpdate"] = {"maxUnavailable": 1}
    cluster = converged_on(manifest, random.Random(0))
    changed(manifest, "frontend")
    newer = replanned(cluster, manifest)
    assert to_roll(newer, cluster.pods, policy_of(manifest)) == ["pcs-0"]


def test_a_gang_already_down_is_replaced_at_once_whatever_the_budget() -> None:
    # Grove #840: an update may be what makes it available again.
    manifest = serving()
    cluster = converged_on(manifest, random.Random(0))
    for name in ("pcs-0-model-3-leader-0", "pcs-0-model-3-worker-0", "pcs-0-model-3-worker-1"):
        cluster.pods[name] = replace(cluster.pods[name], ready=False, node_name=None)
    changed(manifest, "leader", "worker")
    newer = replanned(cluster, manifest)
    assert to_roll(newer, cluster.pods, policy_of(manifest)) == ["pcs-0-model-2"]


def test_the_next_replica_waits_until_the_one_rolled_before_is_ready() -> None:
    manifest = serving(group_replicas=1)
    manifest["spec"]["replicas"] = 2
    cluster = converged_on(manifest, random.Random(0))
    cluster.pods["pcs-0-frontend-0"] = replace(cluster.pods["pcs-0-frontend-0"], ready=False)
    changed(manifest, "worker")
    newer = replanned(cluster, manifest)
    # Replica 0 is current but not available: replica 1 waits.
    for gang in newer:
        if gang.pcs_replica == 0:
            for group, _, pod in gang.pods:
                cluster.pods[pod] = replace(cluster.pods[pod], template_hash=group.template_hash)
    assert to_roll(newer, cluster.pods, policy_of(manifest)) == []
    cluster.pods["pcs-0-frontend-0"] = replace(cluster.pods["pcs-0-frontend-0"], ready=True)
    assert to_roll(newer, cluster.pods, policy_of(manifest)) == ["pcs-1"]


def test_on_delete_and_coherent_roll_nothing() -> None:
    for kind in ("OnDelete", "Coherent"):
        manifest = serving()
        manifest["spec"]["updateStrategy"] = {"type": kind}
        cluster = converged_on(manifest, random.Random(0))
        changed(manifest, "frontend")
        newer = replanned(cluster, manifest)
        assert to_roll(newer, cluster.pods, policy_of(manifest)) == [], kind


def test_a_roll_without_progress_past_its_deadline_is_stalled() -> None:
    manifest = serving(rolling_update={"progressDeadline": "10m"})
    cluster = converged_on(manifest, random.Random(0))
    changed(manifest, "leader", "worker")
    newer = replanned(cluster, manifest)
    policy = policy_of(manifest)
    # Every pod last changed well before the update began at T0.
    pods = {n: replace(p, changed_at="2026-11-28T03:00:00Z") for n, p in cluster.pods.items()}
    early = stall(newer, pods, policy, {0: T0}, T0 + timedelta(minutes=4))
    assert early.stalled == ()
    assert early.wake_in == pytest.approx(360)
    late = stall(newer, pods, policy, {0: T0}, T0 + timedelta(minutes=11))
    assert late.stalled == (
        "replica 0 scaling group model: no progress within its progressDeadline 10m "
        "(4 of 4 available)",
    )
    # A pod of it made since is progress: the clock starts again from there.
    made = replace(pods["pcs-0-model-0-leader-0"], changed_at="2026-11-28T04:09:00Z")
    moved = stall(newer, {**pods, made.name: made}, policy, {0: T0}, T0 + timedelta(minutes=11))
    assert moved.stalled == ()
    assert moved.wake_in == pytest.approx(480)
    # The frontend has no deadline: never reported.
    assert all(CLIQUE not in line for line in late.stalled)


def test_max_unavailable_reads_counts_and_percentages_at_least_one() -> None:
    def allowed(value: int | str | None, desired: int) -> int:
        return RollingUpdateConfiguration(max_unavailable=value).allowed_down(desired)

    assert [allowed(None, 4), allowed(3, 4), allowed("50%", 4), allowed("10%", 4)] == [1, 3, 2, 1]
    assert allowed("100%", 7) == 7


def test_a_gang_rolled_twice_is_a_new_incarnation_each_time() -> None:
    """Each roll makes the gang again as its next incarnation (its scheduler objects get
    new names): the PodGang says which, every pod of it carries it, none of an older one
    is left, and the PodGang keeps its name and uid."""
    manifest = serving(group_replicas=2)
    cluster = converged_on(manifest, random.Random(0))
    uids = {name: live.metadata.uid for name, live in cluster.podgangs.items()}
    for image, expected in (("next:2", 1), ("next:3", 2)):
        for clique in manifest["spec"]["template"]["cliques"]:
            clique["spec"]["podSpec"] = {"containers": [{"name": "c", "image": image}]}
        newer = replanned(cluster, manifest)
        converge(cluster, newer, random.Random(expected), policy=policy_of(manifest))
        assert_converged(cluster, newer)
        for name, live in cluster.podgangs.items():
            assert incarnation_of(live.metadata.annotations) == expected, name
        assert {p.incarnation for p in cluster.pods.values()} == {expected}
    assert {name: live.metadata.uid for name, live in cluster.podgangs.items()} == uids


def test_an_incarnation_names_scheduler_objects_anew_within_63_characters() -> None:
    assert incarnated("pcs-0", 0) == "pcs-0", "the first keeps its name: an upgrade renames nothing"
    assert incarnated("pcs-0", 2) == "pcs-0-i2"
    long = "x" * 62
    assert len(incarnated(long, 12)) == 63
    assert incarnated(long, 12).endswith("-i12")
    assert incarnated(long, 12) != incarnated("x" * 61 + "y", 12)
