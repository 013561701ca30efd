"""PodGang → KAI PodGroup, the queue, validation and pod preparation: tables, no cluster."""

from __future__ import annotations

from typing import Any

import pytest

from gangway_backend_kai import translate
from gangway_backend_kai.backend import KaiBackend
from gangway_backendkit.protocol import SyncFailed
from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import ClusterTopologyBinding
from gangway_contracts.rpc import (
    PodsPrepared,
    PreparePodsFailed,
    PreparePodsRequest,
    ValidateRequest,
)
from tests.unit.backends.builders import pod, podcliqueset, podgang

RACK = {"packConstraint": {"required": "example.com/rack"}}
ZONE = {"packConstraint": {"preferred": "topology.kubernetes.io/zone"}}
NAMED = {labels.TOPOLOGY_NAME: "dc-1"}


def spec_of(**kwargs: Any) -> dict[str, Any]:
    gang = podgang(("pcs-0-router", 2), ("pcs-0-worker", 3), **kwargs)
    spec: dict[str, Any] = translate.podgroup(gang, "team-a")["spec"]
    return spec


@pytest.mark.parametrize(
    ("case", "kwargs", "expected"),
    [
        (
            "one leaf per podgroup, minMember their sum",
            {},
            {
                "minMember": 5,
                "queue": "team-a",
                "subGroups": [
                    {"name": "pcs-0-router", "minMember": 2},
                    {"name": "pcs-0-worker", "minMember": 3},
                ],
            },
        ),
        (
            "priority class carried",
            {"priority": "high"},
            {"priorityClassName": "high"},
        ),
        (
            "gang topology with the PodGang's Topology name",
            {"topology": RACK, "annotations": NAMED},
            {
                "topologyConstraint": {
                    "topology": "dc-1",
                    "requiredTopologyLevel": "example.com/rack",
                }
            },
        ),
        (
            "KAI's own annotation names the Topology when Grove's is absent",
            {"topology": ZONE, "annotations": {translate.TOPOLOGY_ANNOTATION: "dc-2"}},
            {
                "topologyConstraint": {
                    "topology": "dc-2",
                    "preferredTopologyLevel": "topology.kubernetes.io/zone",
                }
            },
        ),
        (
            "a podgroup's own constraint on its leaf",
            {"group_topology": {"pcs-0-worker": RACK}, "annotations": NAMED},
            {
                "subGroups": [
                    {"name": "pcs-0-router", "minMember": 2},
                    {
                        "name": "pcs-0-worker",
                        "minMember": 3,
                        "topologyConstraint": {
                            "topology": "dc-1",
                            "requiredTopologyLevel": "example.com/rack",
                        },
                    },
                ]
            },
        ),
        (
            "a scaling-group replica packed together: an inner subgroup parents its leaves",
            {
                "configs": [
                    {
                        "name": "pcs-0-sg-0",
                        "podGroupNames": ["pcs-0-worker"],
                        "topologyConstraint": RACK,
                    }
                ],
                "annotations": NAMED,
            },
            {
                "subGroups": [
                    {"name": "pcs-0-router", "minMember": 2},
                    {"name": "pcs-0-worker", "minMember": 3, "parent": "pcs-0-sg-0"},
                    {
                        "name": "pcs-0-sg-0",
                        "topologyConstraint": {
                            "topology": "dc-1",
                            "requiredTopologyLevel": "example.com/rack",
                        },
                    },
                ]
            },
        ),
    ],
)
def test_podgroup_spec(case: str, kwargs: dict[str, Any], expected: dict[str, Any]) -> None:
    spec = spec_of(**kwargs)
    assert {k: spec[k] for k in expected} == expected, case


def test_podgroup_metadata_carries_the_podgangs_and_is_owned_by_it() -> None:
    gang = podgang(("pcs-0-a", 1), annotations={"note": "x"}, extra_labels={"app": "y"})
    meta = translate.podgroup(gang, "q")["metadata"]
    assert (meta["name"], meta["namespace"]) == ("pcs-0", "ns")
    assert meta["labels"] == {labels.PART_OF: "pcs", "app": "y", labels.MANAGED_BY: "gangway"}
    assert meta["annotations"] == {"note": "x", translate.SKIP_PODGROUPER: "true"}
    assert [(o["kind"], o["name"], o["uid"], o["controller"]) for o in meta["ownerReferences"]] == [
        ("PodGang", "pcs-0", "gang-uid", True)
    ]


@pytest.mark.parametrize(
    ("kwargs", "reason"),
    [
        ({"topology": RACK}, "TopologyNameMissing"),
        (
            {"configs": [{"name": "Not_A_Label", "podGroupNames": ["pcs-0-router"]}]},
            "InvalidSubGroupName",
        ),
    ],
)
def test_what_kai_cannot_take_fails_the_sync_with_a_reason(
    kwargs: dict[str, Any], reason: str
) -> None:
    with pytest.raises(SyncFailed) as failed:
        spec_of(**kwargs)
    assert failed.value.reason == reason


def test_an_update_keeps_what_kai_manages() -> None:
    desired = translate.podgroup(
        podgang(("pcs-0-a", 1), extra_labels={translate.QUEUE_LABEL: "new"}), "new"
    )
    live = {
        "metadata": {"labels": {translate.NODE_POOL_LABEL: "pool-1", translate.QUEUE_LABEL: "old"}},
        "spec": {"queue": "old", "markUnschedulable": True, "schedulingBackoff": 1, "minMember": 9},
    }
    kept = translate.keep_kai_managed(desired, live)
    assert kept["spec"]["queue"] == "old"
    assert (kept["spec"]["markUnschedulable"], kept["spec"]["schedulingBackoff"]) == (True, 1)
    assert kept["spec"]["minMember"] == 1, "ours is still ours"
    assert kept["metadata"]["labels"][translate.NODE_POOL_LABEL] == "pool-1"
    assert kept["metadata"]["labels"][translate.QUEUE_LABEL] == "old"


Q = translate.QUEUE_LABEL


@pytest.mark.parametrize(
    ("meta", "clique_labels", "queue", "errors"),
    [
        ({"labels": {Q: "a"}}, [{}, {}], "a", []),
        ({"annotations": {Q: "a"}}, [{}], "a", []),
        ({}, [{Q: "b"}, {}, {Q: "b"}], "b", []),
        ({"labels": {Q: "a"}}, [{Q: "a"}], "a", []),
        (
            {"labels": {Q: "a"}},
            [{}, {Q: "b"}],
            None,
            [f"spec.template.cliques[1].labels[{Q}]"],
        ),
        ({}, [{Q: "b"}, {Q: "c"}], None, [f"spec.template.cliques[1].labels[{Q}]"]),
        ({}, [{}], None, [f"metadata.labels[{Q}]"]),
        (  # a label and an annotation that disagree: refused, neither one chosen
            {"labels": {Q: "a"}, "annotations": {Q: "b"}},
            [{}],
            None,
            [f"metadata.annotations[{Q}]"],
        ),
    ],
)
def test_queue_resolution(
    meta: dict[str, Any], clique_labels: list[dict[str, str]], queue: str | None, errors: list[str]
) -> None:
    pcs = podcliqueset(
        [{"name": f"c{i}", "labels": lbl} for i, lbl in enumerate(clique_labels)], meta=meta
    )
    resolved = translate.resolve_queue(pcs)
    assert resolved.name == queue
    assert [e.field for e in resolved.errors] == errors


async def test_validation_names_each_field_and_why() -> None:
    long = "x" * 60
    pcs = podcliqueset(
        [{"name": "a", "topologyConstraint": {"pack": {"required": "rack"}}}, {"name": long}],
        meta={"labels": {Q: "team-a"}},
    )
    reply = await KaiBackend().validate_podcliqueset(
        ValidateRequest(operation="CREATE", podcliqueset=pcs), None
    )
    assert not reply.allowed
    assert [e.field for e in reply.errors] == [
        "spec.template.cliques[0].topologyConstraint.pack",
        "spec.template.cliques[1].name",
    ]
    assert "topologyName" in reply.errors[0].reason
    assert "63" in reply.errors[1].reason
    assert reply.warnings == ['not checked offline: KAI Queue "team-a" exists']


def test_prepared_pods_join_their_podgroup_and_subgroup() -> None:
    gang = podgang(("pcs-0-a", 1))
    request = PreparePodsRequest(podgang=gang, pods=[pod("pcs-0-a-0", "pcs-0", "pcs-0-a")])
    reply = KaiBackend().prepare_pods(request)
    assert isinstance(reply, PodsPrepared)
    prepared = reply.pods[0]
    assert prepared["spec"]["schedulerName"] == "kai-scheduler"
    assert prepared["spec"]["containers"] == [{"name": "c", "image": "i"}]
    assert prepared["metadata"]["annotations"] == {
        "pod-group-name": "pcs-0",
        "kai.scheduler/skip-podgrouper": "true",
    }
    assert prepared["metadata"]["labels"]["kai.scheduler/subgroup-name"] == "pcs-0-a"


def test_pods_of_another_gang_are_refused_with_their_fields() -> None:
    gang = podgang(("pcs-0-a", 1))
    request = PreparePodsRequest(
        podgang=gang,
        pods=[pod("ok", "pcs-0", "pcs-0-a"), pod("bad", "pcs-1", "pcs-0-zzz")],
    )
    reply = KaiBackend().prepare_pods(request)
    assert isinstance(reply, PreparePodsFailed)
    assert [e.field for e in reply.errors] == [
        "pods[1].metadata.labels[grove.io/podgang]",
        "pods[1].metadata.labels[grove.io/podclique]",
    ]


@pytest.mark.parametrize(
    ("kwargs", "packed"),
    [
        ({}, False),
        ({"topology": ZONE}, True),
        ({"group_topology": {"pcs-0-worker": RACK}}, True),
        (
            {
                "configs": [
                    {"name": "sg", "podGroupNames": ["pcs-0-worker"], "topologyConstraint": RACK}
                ]
            },
            True,
        ),
        ({"topology": {"packConstraint": {}}}, False),
    ],
)
def test_packs_when_any_constraint_packs(kwargs: dict[str, Any], packed: bool) -> None:
    assert translate.packs(podgang(("pcs-0-router", 2), ("pcs-0-worker", 3), **kwargs)) is packed


def test_kai_topology_is_the_bindings_levels_in_order_owned_by_it() -> None:
    binding = from_object(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "ClusterTopologyBinding",
            "metadata": {"name": "dc-1", "uid": "u-1"},
            "spec": {
                "levels": [
                    {"domain": "zone", "key": "topology.kubernetes.io/zone"},
                    {"domain": "rack", "key": "example.com/rack"},
                    {"domain": "host", "key": "kubernetes.io/hostname"},
                ]
            },
        },
        ClusterTopologyBinding,
    )
    made = translate.kai_topology(binding)
    assert (made["apiVersion"], made["kind"], made["metadata"]["name"]) == (
        "kai.scheduler/v1alpha1",
        "Topology",
        "dc-1",
    )
    assert made["spec"]["levels"] == [
        {"nodeLabel": "topology.kubernetes.io/zone"},
        {"nodeLabel": "example.com/rack"},
        {"nodeLabel": "kubernetes.io/hostname"},
    ]
    [owner] = made["metadata"]["ownerReferences"]
    assert (owner["kind"], owner["name"], owner["uid"]) == ("ClusterTopologyBinding", "dc-1", "u-1")
    assert made["metadata"]["labels"][labels.MANAGED_BY] == labels.MANAGED_BY_GANGWAY
