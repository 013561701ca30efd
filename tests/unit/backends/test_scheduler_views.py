"""What each scheduler's own PodGroup says holds a gang back, in Gangway's one vocabulary;
and when the backend kit writes it on the PodGang (only when it changes)."""

from __future__ import annotations

from typing import Any, cast

import msgspec

from gangway_backend_kai import view as kai
from gangway_backend_volcano import view as volcano
from gangway_backend_volcano.backend import VolcanoBackend
from gangway_backend_volcano.builtin import VOLCANO_PODGROUPS, VOLCANO_QUEUES
from gangway_backendkit.view import CLEARED, SchedulerViews, wanted
from gangway_contracts import why
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodGang
from gangway_contracts.records import ObjectRecord
from gangway_contracts.subjects import ObjectKey
from gangway_runtime.kube import Kube
from tests.support.simulated_cluster import with_condition

OVER_LIMIT = {
    "reason": "OverLimit",
    "message": "podgroup requested 8 GPUs, queue team limit is 4",
}


def kai_podgroup(*reasons: dict[str, str], message: str = "") -> dict[str, Any]:
    condition = {
        "type": "UnschedulableOnNodePool",
        "status": "True",
        "reason": "Unschedulable",
        "message": message,
        "transitionID": "1",
        "reasons": list(reasons),
    }
    return {"status": {"schedulingConditions": [condition]}}


def test_kai_over_its_queues_limit_is_over_quota_in_kais_words() -> None:
    found = kai.view_of(kai_podgroup(OVER_LIMIT))
    assert found == why.Verdict("OverQuota", f"OverLimit: {OVER_LIMIT['message']}")


def test_kai_without_room_is_unschedulable_and_a_podgroup_it_never_held_says_nothing() -> None:
    no_room = {"reason": "Not enough resources for the workload", "message": "0/4 nodes fit"}
    found = kai.view_of(kai_podgroup(no_room))
    assert found is not None
    assert (found.reason, found.message) == ("Unschedulable", f"{no_room['reason']}: 0/4 nodes fit")
    older = kai.view_of(kai_podgroup(message="Unable to schedule podgroup"))
    assert older == why.Verdict("Unschedulable", "Unable to schedule podgroup")
    assert kai.view_of({"status": {}}) is None


def volcano_podgroup(phase: str, *conditions: tuple[str, str, str, str]) -> dict[str, Any]:
    return {
        "spec": {"queue": "team", "minResources": {"nvidia.com/gpu": "16"}},
        "status": {
            "phase": phase,
            "conditions": [
                {"type": t, "status": "True", "reason": r, "message": m, "lastTransitionTime": at}
                for t, r, m, at in conditions
            ],
        },
    }


# vc-scheduler 1.10's words for a gang it tried and could not place (JobInfo.FitError), and
# for one whose pods are all gated: the same reason, no origin.
TRIED_NO_ROOM = (
    "4/4 tasks in gang unschedulable: pod group is not ready, 4 Pending, 4 minAvailable; "
    "Pending: 4 Unschedulable. Origin reason is g-0: 0/3 nodes are unavailable: "
    "3 Insufficient nvidia.com/gpu."
)
ALL_GATED = (
    "2/2 tasks in gang unschedulable: pod group is not ready, 2 Pending, 2 minAvailable; "
    "Pending: 2 Unschedulable"
)


def test_volcano_says_the_newest_condition_and_leaves_too_few_pods_to_podgang() -> None:
    no_room = ("Unschedulable", "NotEnoughResources", TRIED_NO_ROOM, "t2")
    placed = ("Scheduled", "tasks in gang are ready to be scheduled", "", "t3")
    gated = ("Unschedulable", "NotEnoughTasks", "0/4 tasks valid", "t1")
    assert volcano.view_of(volcano_podgroup("Inqueue", gated, no_room)) == why.Verdict(
        "Unschedulable", TRIED_NO_ROOM
    )
    assert volcano.view_of(volcano_podgroup("Inqueue", no_room, placed)) is None
    assert volcano.view_of(volcano_podgroup("Pending", gated)) is None
    assert volcano.view_of(volcano_podgroup("Running", no_room)) is None


def test_volcano_saying_no_room_for_pods_it_did_not_try_is_no_verdict() -> None:
    """Every gang's pods wait behind Gangway's gate a moment, and vc-scheduler's gang plugin
    closes those sessions in its no-room words: not a verdict (two PodGang writes a gang)."""
    gated = ("Unschedulable", "NotEnoughResources", ALL_GATED, "t1")
    assert volcano.view_of(volcano_podgroup("Inqueue", gated)) is None
    backend = VolcanoBackend()
    assert (
        backend.view_also(podgang(), {VOLCANO_PODGROUPS.kind: [volcano_podgroup("Inqueue", gated)]})
        == []
    ), "let into its queue: the Queue is not read"


def test_volcano_keeping_a_gang_out_of_a_capped_queue_is_over_quota() -> None:
    """Refused by the enqueue action: Pending, in no-room words. Over quota where the queue
    caps a resource the gang's minimum asks for; no room where it caps none."""
    no_room = ("Unschedulable", "NotEnoughResources", TRIED_NO_ROOM, "t2")
    capped = {
        "spec": {"capability": {"nvidia.com/gpu": "16", "cpu": "8"}},
        "status": {"allocated": {"nvidia.com/gpu": "16"}},
    }
    found = volcano.view_of(volcano_podgroup("Pending", no_room), capped)
    assert found == why.Verdict(
        "OverQuota",
        "Volcano keeps the gang out of queue team: its minimum (nvidia.com/gpu 16) does not "
        "fit in the queue's capability (nvidia.com/gpu 16; taken: nvidia.com/gpu 16) "
        "(PodGroup Pending, not enqueued)",
    )
    uncapped: list[dict[str, Any] | None] = [{"spec": {"capability": {"cpu": "8"}}}, {}, None]
    for queue in uncapped:
        found = volcano.view_of(volcano_podgroup("Pending", no_room), queue)
        assert found is not None
        assert found.reason == "Unschedulable"
        assert "is more than the cluster has free" in found.message
    assert volcano.view_of(volcano_podgroup("Inqueue", no_room), capped) == why.Verdict(
        "Unschedulable", TRIED_NO_ROOM
    ), "let into its queue: no room"


def podgang() -> PodGang:
    return from_object(
        {"metadata": {"name": "g", "generation": 2}, "spec": {"podgroups": []}}, PodGang
    )


def test_the_kit_writes_a_view_once_and_clears_it_once() -> None:
    over = why.Verdict("OverQuota", "queue team: 8 > 4")
    assert wanted(podgang(), None) is None, "a gang never held back costs no write"
    first = wanted(podgang(), over)
    assert first is not None
    assert (first.status, first.reason, first.message) == ("True", "OverQuota", over.message)
    blocked = with_condition(podgang(), why.SCHEDULER_BLOCKED, True, over.reason, over.message)
    assert wanted(blocked, over) is None, "said already"
    cleared = wanted(blocked, None)
    assert cleared is not None
    assert (cleared.status, cleared.reason, cleared.message) == ("False", "NotBlocked", CLEARED)
    done = with_condition(blocked, why.SCHEDULER_BLOCKED, False, why.NOT_BLOCKED, CLEARED)
    assert wanted(done, None) is None


async def test_the_kit_hands_a_view_the_gangs_queue_from_the_mirror() -> None:
    """Volcano's view also reads the gang's Queue (``ViewsMore.view_also``): the kit reads
    it from the store by key and hands it over under its kind; a queue the store does not
    hold leaves the view with the PodGroup alone."""
    backend = VolcanoBackend()
    group = volcano_podgroup("Pending", ("Unschedulable", "NotEnoughResources", "0/4", "t"))
    queue = {"metadata": {"name": "team"}, "spec": {"capability": {"nvidia.com/gpu": "16"}}}
    stored = {
        ObjectKey(VOLCANO_QUEUES.kind, "volcano", "", "team"): ObjectRecord(
            kind=VOLCANO_QUEUES.kind,
            namespace="",
            name="team",
            uid="u",
            resource_version="1",
            observed_at="t",
            object=msgspec.Raw(msgspec.json.encode(queue)),
        )
    }

    async def read(key: ObjectKey) -> ObjectRecord | None:
        return stored.get(key)

    views = SchedulerViews(backend, cast(Kube, None), read)
    objects: dict[str, list[dict[str, Any]]] = {VOLCANO_PODGROUPS.kind: [group]}
    await views._also(podgang(), objects)
    assert objects[VOLCANO_QUEUES.kind] == [queue]
    said = backend.scheduler_view(podgang(), objects)
    assert said is not None
    assert said.reason == "OverQuota"
    stored.clear()
    alone: dict[str, list[dict[str, Any]]] = {VOLCANO_PODGROUPS.kind: [group]}
    await views._also(podgang(), alone)
    assert list(alone) == [VOLCANO_PODGROUPS.kind]
