"""``gangway why``: a gang's reason as podgang wrote it, and before that as its PodGang and
pods show it; counts against the gang's minimum; the next step; one screen."""

from __future__ import annotations

import io
from typing import Any

from gangway_cli.why import Workload, gang_state, show
from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodGang
from gangway_contracts.pods import Pod
from tests.support.simulated_cluster import with_condition

GATE = [{"name": labels.PODGANG_PENDING_CREATION_GATE}]


def podgang(name: str = "w-0", **labelled: str) -> PodGang:
    doc = {
        "metadata": {
            "name": name,
            "generation": 1,
            "labels": {labels.SCHEDULER_NAME: "kai-scheduler", **labelled},
        },
        "spec": {"podgroups": [{"name": "w", "minReplicas": 2, "podReferences": []}]},
    }
    return from_object(doc, PodGang)


def pod(name: str, **spec: Any) -> Pod:
    return from_object({"metadata": {"name": name}, "spec": spec}, Pod)


def released(gang: PodGang) -> PodGang:
    return with_condition(
        with_condition(gang, labels.INITIALIZED, True), labels.BACKEND_SYNCED, True
    )


def test_before_the_scheduler_it_says_what_the_gates_wait_on() -> None:
    gated = [pod("a", schedulingGates=GATE), pod("b", schedulingGates=GATE)]
    making = gang_state(podgang(), gated, {})
    assert (making.reason, making.message) == (
        "Gated",
        "scheduling gates on: its pods are being created",
    )
    initialized = with_condition(podgang(), labels.INITIALIZED, True)
    unsynced = gang_state(initialized, gated, {})
    assert unsynced.message == "scheduling gates on: kai-scheduler has not synced it yet"
    refused = with_condition(initialized, labels.BACKEND_SYNCED, False, "QueueMissing", "no queue")
    said = gang_state(refused, gated, {})
    assert (said.reason, said.message) == ("BackendNotSynced", "QueueMissing: no queue")
    assert said.next_step.startswith("fix what the backend names")
    scaled = released(podgang("w-0-s-0", **{labels.BASE_PODGANG: "w-0"}))
    waits = gang_state(scaled, gated, {"w-0": released(podgang())})
    assert waits.message == "scheduling gates on: its base gang w-0 is not scheduled"
    assert waits.waiting_on == "w-0"


def test_the_written_verdict_and_the_counts_against_the_minimum() -> None:
    bound = [pod("a", nodeName="n1"), pod("b")]
    written = with_condition(released(podgang()), labels.SCHEDULED, False, "OverQuota", "q: 8 > 4")
    said = gang_state(written, bound, {})
    assert (said.reason, said.message, said.scheduled, said.pods, said.minimum) == (
        "OverQuota",
        "q: 8 > 4",
        1,
        2,
        2,
    )
    assert gang_state(released(podgang()), [pod("a"), pod("b")], {}).reason == "AwaitingScheduler"


def test_one_screen_names_each_gang_not_scheduled_with_its_next_step() -> None:
    placed = with_condition(released(podgang("w-0")), labels.SCHEDULED, True, "PodGangScheduled")
    waiting = with_condition(
        released(podgang("w-1")), labels.SCHEDULED, False, "Unschedulable", "0/3 nodes fit"
    )
    gangs = [
        gang_state(placed, [pod("a", nodeName="n"), pod("b", nodeName="n")], {}),
        gang_state(waiting, [pod("c"), pod("d")], {}),
    ]
    out = io.StringIO()
    show(Workload("ns", "w", [], gangs), out)
    text = out.getvalue()
    assert text.startswith("ns/w: 2 gangs, 1 not scheduled\n")
    assert "w-1: Unschedulable\n  0/3 nodes fit\n  next: add nodes" in text
    assert "w-0:" not in text, "a placed gang needs no paragraph"


def test_a_gang_not_scheduled_says_what_its_backend_made_of_it() -> None:
    """BackendSynced's words: on the default scheduler, whether the gang is placed whole."""
    each = "Workload API v1beta1: each of its 2 podgroups is placed whole, the PodGang not"
    synced = with_condition(
        with_condition(podgang(), labels.INITIALIZED, True), labels.BACKEND_SYNCED, True, "", each
    )
    waiting = with_condition(synced, labels.SCHEDULED, False, "Unschedulable", "0/3 nodes fit")
    gang = gang_state(waiting, [pod("c"), pod("d")], {})
    assert gang.written_as == each
    out = io.StringIO()
    show(Workload("ns", "w", [], [gang]), out)
    assert f"  backend: {each}\n" in out.getvalue()
