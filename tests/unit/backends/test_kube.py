"""PodGang → Workload API (1.37 v1beta1, 1.36 v1alpha2, 1.35 v1alpha1), validation, pod
preparation."""

from __future__ import annotations

from typing import Any

import pytest

from gangway_backend_kube import translate
from gangway_backend_kube.backend import KubeBackend
from gangway_backend_kube.translate import CompositeVersion, WorkloadVersion
from gangway_backendkit.protocol import SyncFailed
from gangway_contracts import labels
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.rpc import PodsPrepared, PreparePodsRequest, ValidateRequest
from tests.unit.backends.builders import pod, podcliqueset, podgang

BASE = podgang(("pcs-0-leader", 1), ("pcs-0-sg-0-worker", 2), ("pcs-0-sg-0-idle", 0))
SCALED = podgang(
    ("pcs-0-sg-1-worker", 2), name="pcs-0-sg-0", extra_labels={labels.BASE_PODGANG: "pcs-0"}
)


@pytest.mark.parametrize(
    ("gang", "podgroup", "name"),
    [
        (BASE, "pcs-0-leader", "leader"),
        (BASE, "pcs-0-sg-0-worker", "sg-0-worker"),
        (SCALED, "pcs-0-sg-1-worker", "sg-1-worker"),  # relative to the base gang, not its own
    ],
)
def test_pod_group_names_are_relative_to_the_base_gang(gang: Any, podgroup: str, name: str) -> None:
    assert translate.template_name(gang, podgroup) == name


@pytest.mark.parametrize(
    ("version", "reference"),
    [
        ("v1beta1", {"workloadRef": {"workloadName": "pcs-0", "templateName": "sg-0-worker"}}),
        (
            "v1alpha2",
            {
                "podGroupTemplateRef": {
                    "workload": {"workloadName": "pcs-0", "podGroupTemplateName": "sg-0-worker"}
                }
            },
        ),
    ],
)
def test_workload_templates_and_one_podgroup_object_per_podgroup(
    version: WorkloadVersion, reference: dict[str, Any]
) -> None:
    workload, *groups = translate.resources(BASE, version)
    assert workload["apiVersion"] == f"scheduling.k8s.io/{version}"
    assert all(g["apiVersion"] == f"scheduling.k8s.io/{version}" for g in groups)
    assert workload["metadata"]["name"] == "pcs-0"
    assert workload["spec"] == {
        "controllerRef": {"apiGroup": "scheduler.grove.io", "kind": "PodGang", "name": "pcs-0"},
        "podGroupTemplates": [
            {"name": "leader", "schedulingPolicy": {"gang": {"minCount": 1}}},
            {"name": "sg-0-worker", "schedulingPolicy": {"gang": {"minCount": 2}}},
            {"name": "sg-0-idle", "schedulingPolicy": {"basic": {}}},
        ],
    }
    assert [(g["kind"], g["metadata"]["name"]) for g in groups] == [
        ("PodGroup", "pcs-0-leader"),
        ("PodGroup", "pcs-0-sg-0-worker"),
        ("PodGroup", "pcs-0-sg-0-idle"),
    ]
    assert groups[1]["spec"] == {**reference, "schedulingPolicy": {"gang": {"minCount": 2}}}
    assert all(g["metadata"]["ownerReferences"][0]["kind"] == "PodGang" for g in groups)


TWO_ROLES = podgang(("pcs-0-prefill", 2), ("pcs-0-decode", 2))


@pytest.mark.parametrize("composite", ["v1beta1", "v1alpha3"])
def test_where_composite_pod_groups_are_served_a_podgang_is_one_tree(
    composite: CompositeVersion,
) -> None:
    """One root template and one CompositePodGroup (gang of every podgroup), parent of
    each PodGroup: kube-scheduler places the whole PodGang or none of it."""
    workload, root, *groups = translate.resources(TWO_ROLES, "v1beta1", composite)
    [template] = workload["spec"]["compositePodGroupTemplates"]
    assert "podGroupTemplates" not in workload["spec"]
    assert template == {
        "name": "podgang",
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
        "podGroupTemplates": [
            {"name": "prefill", "schedulingPolicy": {"gang": {"minCount": 2}}},
            {"name": "decode", "schedulingPolicy": {"gang": {"minCount": 2}}},
        ],
    }
    assert (root["apiVersion"], root["kind"], root["metadata"]["name"]) == (
        f"scheduling.k8s.io/{composite}",
        "CompositePodGroup",
        "pcs-0",
    )
    assert root["spec"] == {
        "workloadRef": {"workloadName": "pcs-0", "templateName": "podgang"},
        "schedulingPolicy": {"gang": {"minGroupCount": 2}},
    }
    assert [g["spec"]["parentCompositePodGroupName"] for g in groups] == ["pcs-0", "pcs-0"]
    assert groups[0]["spec"]["workloadRef"] == {"workloadName": "pcs-0", "templateName": "prefill"}
    backend = KubeBackend(True, "v1beta1", composite)
    assert backend.write_as(root).resource == translate.composites_of(composite)
    assert [(r.plural, name) for r, name in backend.kept(TWO_ROLES)] == [
        ("workloads", "pcs-0"),
        ("compositepodgroups", "pcs-0"),
        ("podgroups", "pcs-0-prefill"),
        ("podgroups", "pcs-0-decode"),
    ]


def test_a_podgang_of_one_podgroup_or_with_one_needing_none_is_no_tree() -> None:
    """One podgroup is placed whole by itself; a podgroup of minReplicas 0 would count as
    placed with one pod in a tree, so that PodGang keeps a pod group per podgroup."""
    for gang in (SCALED, BASE):
        workload, *groups = translate.resources(gang, "v1beta1", "v1alpha3")
        assert "podGroupTemplates" in workload["spec"]
        assert all(g["kind"] == "PodGroup" for g in groups)
        assert not any("parentCompositePodGroupName" in g["spec"] for g in groups)


def test_the_backend_says_whether_a_podgang_is_placed_whole() -> None:
    """BackendSynced's message: one tree, or each podgroup whole and why not the PodGang."""
    assert "one tree" in KubeBackend(True, "v1beta1", "v1alpha3").describe(TWO_ROLES, [])
    said = KubeBackend(True, "v1beta1").describe(TWO_ROLES, [])
    assert said == (
        "Workload API v1beta1: each of its 2 podgroups is placed whole, the PodGang not "
        "(CompositePodGroup is not served)"
    )
    assert KubeBackend(True, "v1beta1").describe(SCALED, []) == "Workload API v1beta1"


def test_a_podgroup_named_like_another_template_fails_the_sync() -> None:
    gang = podgang(("pcs-0-podgang", 1), ("pcs-0-other", 1))
    with pytest.raises(SyncFailed) as failed:
        translate.resources(gang, "v1beta1", "v1alpha3")
    assert failed.value.reason == "InvalidPodGroupName"


def test_v1alpha1_workload_has_pod_groups_and_nothing_else() -> None:
    [workload] = translate.resources(BASE, "v1alpha1")
    assert workload["apiVersion"] == "scheduling.k8s.io/v1alpha1"
    assert workload["spec"]["podGroups"] == [
        {"name": "leader", "policy": {"gang": {"minCount": 1}}},
        {"name": "sg-0-worker", "policy": {"gang": {"minCount": 2}}},
        {"name": "sg-0-idle", "policy": {"basic": {}}},
    ]


def test_more_pod_groups_than_a_workload_holds_fail_the_sync() -> None:
    gang = podgang(*[(f"pcs-0-c{i}", 1) for i in range(9)])
    with pytest.raises(SyncFailed) as failed:
        translate.resources(gang, "v1beta1")
    assert failed.value.reason == "TooManyPodGroups"


@pytest.mark.parametrize(
    ("version", "spec"),
    [
        (None, {"schedulerName": "default-scheduler"}),
        *(
            (
                version,
                {
                    "schedulerName": "default-scheduler",
                    "schedulingGroup": {"podGroupName": "pcs-0-sg-1-worker"},
                },
            )
            for version in ("v1beta1", "v1alpha2")
        ),
        (
            "v1alpha1",
            {
                "schedulerName": "default-scheduler",
                "workloadRef": {"name": "pcs-0-sg-0", "podGroup": "sg-1-worker"},
            },
        ),
    ],
)
def test_prepared_pods_point_at_their_group(
    version: WorkloadVersion | None, spec: dict[str, Any]
) -> None:
    backend = KubeBackend(gang_scheduling=version is not None, workload_version=version)
    request = PreparePodsRequest(
        podgang=SCALED, pods=[pod("pcs-0-sg-1-worker-0", "pcs-0-sg-0", "pcs-0-sg-1-worker")]
    )
    reply = backend.prepare_pods(request)
    assert isinstance(reply, PodsPrepared)
    assert reply.pods[0]["spec"] == {"containers": [{"name": "c", "image": "i"}], **spec}


def test_gang_scheduling_comes_from_the_profile() -> None:
    on = parse_scheduler_config(
        {"profiles": [{"name": "default-scheduler", "config": {"gangScheduling": True}}]}
    )
    assert KubeBackend.from_config(on).gang_scheduling
    assert not KubeBackend.from_config(parse_scheduler_config(None)).gang_scheduling


async def validate(gang: bool, **kwargs: Any) -> Any:
    pcs = podcliqueset(**kwargs)
    backend = KubeBackend(gang_scheduling=gang)
    return await backend.validate_podcliqueset(
        ValidateRequest(operation="CREATE", podcliqueset=pcs), None
    )


async def test_required_packing_is_rejected_preferred_is_admitted_as_unsupported() -> None:
    reply = await validate(
        False,
        cliques=[{"name": "a", "topologyConstraint": {"pack": {"required": "rack"}}}],
        topology={"pack": {"preferred": "zone"}},
    )
    assert not reply.allowed
    assert [e.field for e in reply.errors] == [
        "spec.template.cliques[0].topologyConstraint.pack.required"
    ]
    assert [(u.field, u.feature) for u in reply.unsupported] == [
        ("spec.template.topologyConstraint.pack.preferred", "TopologyPreferredPacking")
    ]


async def test_where_the_gang_is_a_tree_required_packing_is_admitted_preferred_still_not() -> None:
    pcs = podcliqueset(
        cliques=[{"name": "a", "topologyConstraint": {"pack": {"required": "rack"}}}],
        topology={"pack": {"preferred": "zone"}},
    )
    backend = KubeBackend(True, "v1beta1", "v1alpha3")
    reply = await backend.validate_podcliqueset(
        ValidateRequest(operation="CREATE", podcliqueset=pcs), None
    )
    assert reply.allowed, reply.errors
    assert [u.feature for u in reply.unsupported] == ["TopologyPreferredPacking"]


def packed(key: str) -> dict[str, Any]:
    return {"packConstraint": {"required": key}}


def test_packing_is_the_trees_each_node_packed_where_grove_asks() -> None:
    """The PodGang's packing on the root, a group config's on its middle group (the parent
    of its podgroups), a podgroup's on its PodGroup."""
    gang = podgang(
        ("pcs-0-router", 1),
        ("pcs-0-prefill", 2),
        ("pcs-0-decode", 2),
        topology=packed("zone"),
        configs=[
            {
                "name": "pcs-0-pd",
                "podGroupNames": ["pcs-0-prefill", "pcs-0-decode"],
                "topologyConstraint": packed("rack"),
            }
        ],
        group_topology={"pcs-0-decode": packed("host")},
    )
    workload, root, middle, *groups = translate.resources(gang, "v1beta1", "v1alpha3")
    [template] = workload["spec"]["compositePodGroupTemplates"]
    assert template["schedulingPolicy"] == {"gang": {"minGroupCount": 2}}  # router + pd
    assert template["schedulingConstraints"] == {"topology": [{"key": "zone"}]}
    assert [t["name"] for t in template["podGroupTemplates"]] == ["router"]
    [pd] = template["compositePodGroupTemplates"]
    assert (pd["name"], pd["schedulingConstraints"]) == ("pd", {"topology": [{"key": "rack"}]})
    assert pd["podGroupTemplates"][1]["schedulingConstraints"] == {"topology": [{"key": "host"}]}
    assert (root["metadata"]["name"], middle["metadata"]["name"]) == ("pcs-0", "pcs-0-pd")
    assert middle["spec"]["parentCompositePodGroupName"] == "pcs-0"
    assert middle["spec"]["workloadRef"] == {"workloadName": "pcs-0", "templateName": "pd"}
    parents = {g["metadata"]["name"]: g["spec"]["parentCompositePodGroupName"] for g in groups}
    assert parents == {
        "pcs-0-router": "pcs-0",
        "pcs-0-prefill": "pcs-0-pd",
        "pcs-0-decode": "pcs-0-pd",
    }
    assert [n for _, n in KubeBackend(True, "v1beta1", "v1alpha3").kept(gang)][:3] == [
        "pcs-0",
        "pcs-0",
        "pcs-0-pd",
    ]


def test_a_group_config_of_none_of_the_gangs_podgroups_is_no_group() -> None:
    stray = {"name": "pcs-0-x", "podGroupNames": ["pcs-0-elsewhere"]}
    gang = podgang(("pcs-0-a", 1), ("pcs-0-b", 1), configs=[stray])
    _, root, *groups = translate.resources(gang, "v1beta1", "v1alpha3")
    assert root["spec"]["schedulingPolicy"] == {"gang": {"minGroupCount": 2}}
    assert [g["kind"] for g in groups] == ["PodGroup", "PodGroup"]


def test_a_single_podgroup_packed_as_a_whole_is_a_tree_of_one() -> None:
    gang = podgang(("pcs-0-worker", 4), topology=packed("rack"))
    _, root, group = translate.resources(gang, "v1beta1", "v1alpha3")
    assert root["spec"]["schedulingConstraints"] == {"topology": [{"key": "rack"}]}
    assert group["spec"]["parentCompositePodGroupName"] == "pcs-0"


def test_packing_above_the_podgroups_of_a_gang_that_cannot_be_a_tree_fails_the_sync() -> None:
    gang = podgang(("pcs-0-a", 1), ("pcs-0-b", 0), topology=packed("rack"))
    with pytest.raises(SyncFailed) as failed:
        translate.resources(gang, "v1beta1", "v1alpha3")
    assert failed.value.reason == "PackingNeedsWholeGang"


async def test_gangs_too_big_for_a_workload_are_rejected_only_with_gang_scheduling() -> None:
    shape = {
        "cliques": [{"name": f"c{i}"} for i in range(3)],
        "groups": [{"name": "sg", "cliqueNames": ["c1", "c2"], "replicas": 5, "minAvailable": 4}],
    }
    assert (await validate(False, **shape)).allowed
    reply = await validate(True, **shape)
    assert [e.field for e in reply.errors] == ["spec.template"]
    assert "9 pod groups" in reply.errors[0].reason


@pytest.mark.parametrize("version", ["v1beta1", "v1alpha2"])
def test_the_pod_groups_are_at_the_podgangs_priority(version: WorkloadVersion) -> None:
    """kube-scheduler refuses a pod whose priority is not its pod group's: the groups carry
    the PodGang's priority class (podgang gives every pod the same, as Grove does)."""
    gang = podgang(("pcs-0-leader", 1), priority="high")
    workload, group = translate.resources(gang, version)
    assert workload["spec"]["podGroupTemplates"][0]["priorityClassName"] == "high"
    assert group["spec"]["priorityClassName"] == "high"
    plain, plain_group = translate.resources(podgang(("pcs-0-leader", 1)), version)
    assert "priorityClassName" not in plain["spec"]["podGroupTemplates"][0]
    assert "priorityClassName" not in plain_group["spec"]


async def test_spare_pods_beside_another_podgroup_are_said() -> None:
    """kube-scheduler places a gang's pod groups one after another, each with every pod that
    fits (gangway conformance's podgroup-minimums): a clique with pods beyond its
    minAvailable, in a gang of several podgroups, is admitted and said."""
    cliques = [
        {"name": "leader", "spec": {"replicas": 3, "minAvailable": 1}},
        {"name": "worker", "spec": {"replicas": 2, "minAvailable": 2}},
    ]
    reply = await validate(True, cliques=cliques)
    assert reply.allowed
    [said] = reply.unsupported
    assert (said.field, said.feature) == (
        "spec.template.cliques[0].spec.minAvailable",
        "PerPodGroupMinimum",
    )
    assert "clique leader's pods beyond its minAvailable" in said.message
    alone = await validate(True, cliques=cliques[:1])
    assert alone.unsupported == [], "one podgroup alone keeps its minimum"
