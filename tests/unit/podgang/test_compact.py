"""What podgang's read model keeps of pods and PodGangs: everything podgang reads, a pod's
answers the same as the decoded pod's, a PodGang equal to the decoded one, repeated strings
held once."""

from __future__ import annotations

from typing import Any

import msgspec

from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodGang
from gangway_contracts.pods import Pod
from gangway_podgang.compact import compact_pod, compact_podgang
from gangway_podgang.manifests import all_references, podgang_spec
from gangway_podgang.plan import plan_podgangs
from tests.support.manifests import inference_podcliqueset


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
        assert kept.verdict == pod.scheduler_verdict()
        assert kept.phase == pod.status.phase
        assert kept.node_name == pod.spec.node_name
        meta = pod.metadata
        assert (kept.name, kept.namespace, kept.uid, kept.resource_version) == (
            meta.name,
            meta.namespace,
            meta.uid,
            meta.resource_version,
        )
        assert kept.gang == meta.labels[labels.PODGANG]
        assert kept.template_hash == meta.labels[labels.POD_TEMPLATE_HASH]
        assert kept.controller_uid == "g"
        assert kept.deleting


def test_repeated_strings_are_held_once() -> None:
    first = compact_pod(from_object(pod_object("pcs-0-w-0"), Pod))
    second = compact_pod(from_object(pod_object("pcs-0-w-1"), Pod))
    assert first.namespace is second.namespace
    assert first.gang is second.gang
    assert first.template_hash is second.template_hash
    assert first.gates[0] is second.gates[0]


def test_a_compact_podgang_keeps_its_spec_status_and_identity_and_shares_its_pods_names() -> None:
    gang = plan_podgangs(inference_podcliqueset()).gangs[0]
    spec = podgang_spec(gang, "ml", None, all_references(gang, "ml"))
    meta = {
        "name": gang.name,
        "namespace": "ml",
        "uid": "u",
        "resourceVersion": "7",
        "generation": 2,
        "creationTimestamp": "2026-11-26T05:00:00Z",
        "labels": {labels.PART_OF: "pcs"},
        "annotations": {labels.TRACEPARENT_ANNOTATION: "00-1-2-01"},
        "ownerReferences": [
            {
                "apiVersion": "v1",
                "kind": "PodCliqueSet",
                "name": "pcs",
                "uid": "p",
                "controller": True,
            }
        ],
    }
    status = {"phase": "Pending", "conditions": []}
    podgang = from_object({"metadata": meta, "spec": spec, "status": status}, PodGang)
    kept = compact_podgang(msgspec.json.decode(msgspec.json.encode(podgang), type=PodGang))
    assert (kept.spec, kept.status) == (podgang.spec, podgang.status)
    was = podgang.metadata
    assert msgspec.structs.replace(was, labels={}) == kept.metadata  # annotations kept
    name = kept.spec.podgroups[0].pod_references[0].name
    pod = compact_pod(from_object(pod_object(name), Pod))
    assert pod.name is name
