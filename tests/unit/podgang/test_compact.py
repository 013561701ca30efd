"""What podgang's read model keeps of pods and PodGangs: everything podgang reads, equal to
the decoded object where it keeps it whole, repeated strings held once."""

from __future__ import annotations

from typing import Any

import msgspec

from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodGang
from gangway_contracts.pods import Pod
from gangway_podgang.compact import compact_pod, interned
from gangway_podgang.manifests import all_references, podgang_spec
from gangway_podgang.plan import plan_podgangs
from tests.unit.podgang.test_progress import inference


def pod_object(name: str, verdict: str | None = None) -> dict[str, Any]:
    scheduled = {"type": "PodScheduled", "status": "True", "lastTransitionTime": "t"}
    if verdict:
        scheduled = {**scheduled, "status": "False", "reason": verdict, "message": "0/4 nodes"}
    return {
        "metadata": {
            "name": name,
            "namespace": "ml",
            "uid": f"uid-{name}",
            "resourceVersion": "42",
            "labels": {
                labels.PODGANG: "pcs-0",
                labels.PART_OF: "pcs",
                labels.POD_TEMPLATE_HASH: "h1",
                labels.MANAGED_BY: labels.MANAGED_BY_GANGWAY,
            },
            "annotations": {labels.TRACEPARENT_ANNOTATION: "00-1-2-01"},
            "ownerReferences": [
                {
                    "apiVersion": "v1",
                    "kind": "PodGang",
                    "name": "pcs-0",
                    "uid": "g",
                    "controller": True,
                }
            ],
            "deletionTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {
            "schedulerName": "default-scheduler",
            "schedulingGates": [{"name": labels.PODGANG_PENDING_CREATION_GATE}],
            "nodeName": None if verdict else "node-1",
        },
        "status": {
            "phase": "Pending" if verdict else "Running",
            "conditions": [
                {"type": "Initialized", "status": "True", "lastTransitionTime": "t"},
                scheduled,
                {"type": "Ready", "status": "True", "lastTransitionTime": "t"},
            ],
        },
    }


def test_a_compact_pod_answers_every_question_podgang_asks_as_the_pod_does() -> None:
    for verdict in (None, "Unschedulable"):
        pod = from_object(pod_object("pcs-0-w-0", verdict), Pod)
        kept = compact_pod(pod)
        gate = labels.PODGANG_PENDING_CREATION_GATE
        assert kept.is_gated(gate) == pod.is_gated(gate)
        assert kept.is_scheduled == pod.is_scheduled
        assert kept.scheduler_verdict() == pod.scheduler_verdict()
        assert kept.status.phase == pod.status.phase
        assert kept.spec == pod.spec
        meta, was = kept.metadata, pod.metadata
        assert (meta.name, meta.namespace, meta.uid, meta.resource_version) == (
            was.name,
            was.namespace,
            was.uid,
            was.resource_version,
        )
        assert meta.owner_references == was.owner_references
        assert meta.deletion_timestamp == was.deletion_timestamp
        assert meta.labels == {k: v for k, v in was.labels.items() if k != labels.MANAGED_BY}
        assert meta.annotations == {}, "annotations are not read"


def test_repeated_strings_are_held_once() -> None:
    first = compact_pod(from_object(pod_object("pcs-0-w-0"), Pod))
    second = compact_pod(from_object(pod_object("pcs-0-w-1"), Pod))
    assert first.metadata.namespace is second.metadata.namespace
    assert first.metadata.labels[labels.PODGANG] is second.metadata.labels[labels.PODGANG]
    assert (
        first.status.conditions[0].last_transition_time
        is second.status.conditions[0].last_transition_time
    )


def test_an_interned_podgang_equals_the_decoded_one_and_shares_its_pods_names() -> None:
    gang = plan_podgangs(inference()).gangs[0]
    spec = podgang_spec(gang, "ml", None, all_references(gang, "ml"))
    podgang = from_object(
        {"metadata": {"name": gang.name, "namespace": "ml"}, "spec": spec}, PodGang
    )
    decoded = msgspec.json.decode(msgspec.json.encode(podgang), type=PodGang)
    kept = interned(decoded)
    assert kept == podgang
    name = kept.spec.podgroups[0].pod_references[0].name
    pod = compact_pod(from_object(pod_object(name), Pod))
    assert pod.metadata.name is name
