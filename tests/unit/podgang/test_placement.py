"""A gang's placement, read off its pods the way Grove's operator reports it: the phase and
the Scheduled condition, with the scheduler's own words when it did not place the gang."""

from __future__ import annotations

from typing import Any

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
    assert found == Placement("Pending", 0, 0, "Unschedulable", UNSCHEDULABLE["message"])


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
