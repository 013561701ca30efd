"""A gang's placement, read off its pods the way Grove's operator reports it: the phase and
the Scheduled condition, with the scheduler's own words when it did not place the gang."""

from __future__ import annotations

from typing import Any

import msgspec

from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodGang
from gangway_contracts.pods import Pod
from gangway_podgang.compact import PodRecord, compact_pod
from gangway_podgang.decide import Placement, placement_of
from gangway_podgang.plan import PlannedGang, plan_podgangs
from tests.support.manifests import inference_podcliqueset
from tests.support.simulated_cluster import with_condition

GATE = [{"name": labels.PODGANG_PENDING_CREATION_GATE}]
UNSCHEDULABLE = {
    "type": "PodScheduled",
    "status": "False",
    "reason": "Unschedulable",
    "message": "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.",
}


def base_gang() -> PlannedGang:
    return next(g for g in plan_podgangs(inference_podcliqueset()).gangs if g.is_base)


def pods(gang: PlannedGang, **each: Any) -> dict[str, PodRecord]:
    """Every pod of the gang, each with the given spec and status parts."""
    spec, status = each.get("spec", {}), each.get("status", {})
    return {
        name: compact_pod(
            from_object({"metadata": {"name": name}, "spec": spec, "status": status}, Pod)
        )
        for _, _, name in gang.pods
    }


def test_gated_pods_are_pending_and_say_on_what() -> None:
    gang = base_gang()
    found = placement_of(gang, pods(gang, spec={"schedulingGates": GATE}))
    assert (found.phase, found.scheduled, found.reason) == ("Pending", False, "Gated")
    held = placement_of(
        gang, pods(gang, spec={"schedulingGates": GATE}), held="its base gang g-0 is not scheduled"
    )
    assert held.message == "scheduling gates on: its base gang g-0 is not scheduled"


def test_a_gang_its_backend_refused_says_the_backends_words_and_is_worth_a_write() -> None:
    gang = base_gang()
    refused = with_condition(
        podgang(reported=False), labels.BACKEND_SYNCED, False, "QueueMissing", "no queue named"
    )
    found = placement_of(gang, pods(gang, spec={"schedulingGates": GATE}), refused)
    assert (found.reason, found.message) == ("BackendNotSynced", "QueueMissing: no queue named")
    assert found.to_write(refused)


def test_the_schedulers_own_objects_come_before_the_pods_words() -> None:
    gang = base_gang()
    blocked = with_condition(
        podgang(reported=False), "SchedulerBlocked", True, "OverQuota", "queue team: cpu 4 > 2"
    )
    found = placement_of(gang, pods(gang, status={"conditions": [UNSCHEDULABLE]}), blocked)
    assert (found.reason, found.message) == ("OverQuota", "queue team: cpu 4 > 2")
    cleared = with_condition(blocked, "SchedulerBlocked", False, "NotBlocked", "")
    assert placement_of(gang, pods(gang), cleared).reason == "AwaitingScheduler"


def test_the_schedulers_verdict_is_carried_over() -> None:
    gang = base_gang()
    found = placement_of(gang, pods(gang, status={"conditions": [UNSCHEDULABLE]}))
    assert found == Placement(
        "Pending", 0, 0, "Unschedulable", UNSCHEDULABLE["message"], pods=len(gang.pods)
    )


def test_every_distinct_word_of_the_scheduler_is_kept() -> None:
    gang = base_gang()
    found = pods(gang, status={"conditions": [UNSCHEDULABLE]})
    quorum = {**UNSCHEDULABLE, "message": "minCount (2) cannot be satisfied: 0 scheduled"}
    first = next(iter(found))
    found[first] = compact_pod(
        from_object({"metadata": {"name": first}, "status": {"conditions": [quorum]}}, Pod)
    )
    placement = placement_of(gang, found)
    assert placement.reason == "Unschedulable"
    assert placement.message == f"{UNSCHEDULABLE['message']}; {quorum['message']}"


def test_not_tried_yet_is_awaiting_the_scheduler() -> None:
    gang = base_gang()
    assert placement_of(gang, pods(gang)).reason == "AwaitingScheduler"


def test_bound_is_starting_and_scheduled_then_running() -> None:
    gang = base_gang()
    bound = placement_of(gang, pods(gang, spec={"nodeName": "n1"}))
    assert (bound.phase, bound.scheduled, bound.reason) == ("Starting", True, "PodGangScheduled")
    running = placement_of(gang, pods(gang, spec={"nodeName": "n1"}, status={"phase": "Running"}))
    assert (running.phase, running.running) == ("Running", len(list(gang.pods)))
    assert bound.message == f"{len(gang.pods)} of {len(gang.pods)} pods on nodes"


def test_the_gangs_health_is_counted_and_each_count_is_a_write() -> None:
    """Ready's message counts the gang's ready pods: a change of count is a change (one
    write), an equal count none."""
    gang = base_gang()
    found = pods(gang, spec={"nodeName": "n1"}, status={"phase": "Running"})
    names = [name for _, _, name in gang.pods]
    ready = {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}
    found[names[0]] = compact_pod(
        from_object(
            {"metadata": {"name": names[0]}, "spec": {"nodeName": "n1"}, "status": ready}, Pod
        )
    )
    one = placement_of(gang, found)
    assert (one.ready, one.ready_words) == (False, f"1 of {len(names)} pods ready")
    said = with_condition(
        with_condition(podgang(False), labels.SCHEDULED, True, "PodGangScheduled", one.message),
        labels.READY,
        False,
        "PodGangNotReady",
        one.ready_words,
    )
    assert said.status is not None
    said = msgspec.structs.replace(
        said, status=msgspec.structs.replace(said.status, phase="Running")
    )
    assert not one.to_write(said)
    every = placement_of(gang, pods(gang, spec={"nodeName": "n1"}, status=ready))
    assert (every.ready, every.ready_words) == (True, f"{len(names)} of {len(names)} pods ready")
    assert every.to_write(said)


def test_one_podgroup_below_its_minimum_is_not_scheduled() -> None:
    gang = base_gang()
    found = pods(gang, spec={"nodeName": "n1"})
    short = next(g for g in gang.podgroups if g.min_replicas > 0)
    for name in short.pods:
        found[name] = compact_pod(from_object({"metadata": {"name": name}}, Pod))
    placement = placement_of(gang, found)
    assert (placement.phase, placement.scheduled) == ("Starting", False)
    for name in short.pods:
        found[name] = compact_pod(
            from_object(
                {"metadata": {"name": name}, "status": {"conditions": [UNSCHEDULABLE]}}, Pod
            )
        )
    partly = placement_of(gang, found)
    assert partly.reason == "BelowMinCount"
    assert partly.message == (
        f"{short.name} 0 of minimum {short.min_replicas} placed: {UNSCHEDULABLE['message']}"
    )


def podgang(reported: bool) -> PodGang:
    live = from_object(
        {"metadata": {"name": "g", "generation": 1}, "spec": {"podgroups": []}}, PodGang
    )
    if not reported:
        return live
    return with_condition(live, labels.SCHEDULED, False, "Gated", "scheduling gates coming off")


def test_nothing_is_written_before_the_scheduler_acts_then_every_change_is() -> None:
    gang = base_gang()
    gated = placement_of(gang, pods(gang, spec={"schedulingGates": GATE}))
    assert not gated.to_write(podgang(reported=False))
    refused = placement_of(gang, pods(gang, status={"conditions": [UNSCHEDULABLE]}))
    assert refused.to_write(podgang(reported=False))
    # Once reported, it follows the pods back too (a pod recreated behind its gate).
    assert gated.to_write(podgang(reported=True)) is False  # the same as reported
    assert placement_of(gang, pods(gang)).to_write(podgang(reported=True))


KUBE_EVICTED = {
    "type": "DisruptionTarget",
    "status": "True",
    "reason": "PreemptionByScheduler",
    "message": "default-scheduler: preempting to accommodate a higher priority pod group",
}
VOLCANO_EVICTED = {
    "type": "Ready",
    "status": "False",
    "reason": "Evict",
    "message": "Pod is evicted, because of preempt",
}


def test_a_pod_its_scheduler_evicted_for_another_makes_the_gang_preempted() -> None:
    """kube-scheduler and KAI mark a victim with DisruptionTarget, Volcano with Ready=False
    Evict: the gang is Preempted, in their words and naming the pod, though still bound."""
    gang = base_gang()
    victim = next(name for _, _, name in gang.pods)
    for mark in (KUBE_EVICTED, VOLCANO_EVICTED):
        found = pods(gang, spec={"nodeName": "n1"})
        found[victim] = compact_pod(
            from_object(
                {
                    "metadata": {"name": victim},
                    "spec": {"nodeName": "n1"},
                    "status": {"conditions": [mark]},
                },
                Pod,
            )
        )
        placement = placement_of(gang, found)
        assert (placement.reason, placement.message) == (
            "Preempted",
            f"{victim}: {mark['message']}",
        )


def test_preempted_stays_until_the_gang_is_placed_again() -> None:
    """The victims are gone in a second: the read model's memo says it first, then the
    PodGang's own condition, through the replacements' gates and the scheduler's verdict."""
    gang = base_gang()
    words = "g-0-w-1: default-scheduler: preempting to accommodate a higher priority pod"
    gated = pods(gang, spec={"schedulingGates": GATE})
    assert placement_of(gang, gated, podgang(False), preempted=words).reason == "Preempted"
    said = with_condition(podgang(False), labels.SCHEDULED, False, "Preempted", words)
    waiting = pods(gang, status={"conditions": [UNSCHEDULABLE]})
    for now in (gated, waiting):
        placement = placement_of(gang, now, said)
        assert (placement.reason, placement.message) == ("Preempted", words)
        assert not placement.to_write(said), "no write while it stays so"
    placed = placement_of(gang, pods(gang, spec={"nodeName": "n1"}), said)
    assert placed.reason == "PodGangScheduled"
