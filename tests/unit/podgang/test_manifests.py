"""PodGang and Pod manifests: Grove's labels, owners, the gate, pod references."""

from __future__ import annotations

from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_podgang.manifests import pod_manifest, podgang_manifest
from gangway_podgang.plan import plan_podgangs
from tests.support.manifests import fixture


def pcs() -> PodCliqueSet:
    manifest = fixture("podcliquesets/disaggregated-inference.yaml")
    manifest["metadata"]["uid"] = "pcs-uid"
    return from_object(manifest, PodCliqueSet)


def test_podgang_is_created_empty_and_owned_by_its_podcliqueset() -> None:
    gang = plan_podgangs(pcs()).gangs[1]
    manifest = podgang_manifest(gang, pcs(), "kai-scheduler")
    view = from_object(manifest, PodGang)  # a valid PodGang by our own contract
    assert all(g.pod_references == [] for g in view.spec.podgroups)
    assert manifest["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "PodCliqueSet",
            "name": "llama-disagg",
            "uid": "pcs-uid",
            "controller": True,
            "blockOwnerDeletion": True,
        }
    ]
    assert manifest["metadata"]["labels"] == {
        "app": "llama-disagg",  # the PodCliqueSet's own labels ride along
        "kai.scheduler/queue": "team-a",
        labels.MANAGED_BY: "gangway",
        labels.PART_OF: "llama-disagg",
        labels.COMPONENT: "podgang",
        labels.PCS_REPLICA_INDEX: "0",
        labels.SCHEDULER_NAME: "kai-scheduler",
        labels.BASE_PODGANG: "llama-disagg-0",
        labels.SCALING_GROUP: "llama-disagg-0-prefill",
    }
    full = from_object(podgang_manifest(gang, pcs(), "kai-scheduler", pod_references=True), PodGang)
    assert [r.name for r in full.spec.podgroups[0].pod_references] == [
        "llama-disagg-0-prefill-1-pleader-0"
    ]


def test_pod_is_gated_labelled_and_owned_by_its_podgang() -> None:
    gang = plan_podgangs(pcs()).gangs[0]
    group, index, name = list(gang.pods)[4]  # router-0, router-1, pleader-0, pworker-0, -1
    pod = pod_manifest(gang, group, index, pcs(), podgang_uid="gang-uid")
    assert name == pod["metadata"]["name"] == "llama-disagg-0-prefill-0-pworker-1"
    assert pod["spec"]["schedulingGates"] == [{"name": labels.PODGANG_PENDING_CREATION_GATE}]
    assert pod["spec"]["containers"][0]["image"] == "registry.example.com/llm/engine:0.9.1"
    assert pod["metadata"]["labels"] == {
        labels.MANAGED_BY: "gangway",
        labels.PART_OF: "llama-disagg",
        labels.PODGANG: "llama-disagg-0",
        labels.PODCLIQUE: "llama-disagg-0-prefill-0-pworker",
        labels.PCS_REPLICA_INDEX: "0",
        labels.POD_INDEX: "1",
        labels.SCALING_GROUP: "llama-disagg-0-prefill",
        labels.SCALING_GROUP_REPLICA_INDEX: "0",
        labels.POD_TEMPLATE_HASH: group.template_hash,
    }
    owner = pod["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("PodGang", "llama-disagg-0", "gang-uid")


def test_every_pod_is_at_the_podcliquesets_priority_class() -> None:
    """As Grove: the PodCliqueSet's priority class on every pod, a clique's own replaced, so
    that the scheduler's gang and its pods are at one priority on every backend."""
    doc = fixture("podcliquesets/disaggregated-inference.yaml")
    doc["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["priorityClassName"] = "own"
    named = from_object(doc, PodCliqueSet)
    gang = plan_podgangs(named).gangs[0]
    group, index, _ = next(iter(gang.pods))
    assert pod_manifest(gang, group, index, named, "u")["spec"]["priorityClassName"] == (
        "inference-high"
    )
    del doc["spec"]["template"]["priorityClassName"]
    unnamed = from_object(doc, PodCliqueSet)
    plain = plan_podgangs(unnamed).gangs[0]
    group, index, _ = next(iter(plain.pods))
    assert "priorityClassName" not in pod_manifest(plain, group, index, unnamed, "u")["spec"]
    # A pod's priority cannot change: another priority class makes other pods.
    assert group.template_hash != next(iter(gang.pods))[0].template_hash
