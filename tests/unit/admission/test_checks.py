"""Admission's structural rules: each broken rule named by field and reason, and what passes
them yields only valid, distinct names in the plan."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangway_admission.checks import check_podcliqueset, check_update
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.k8s import is_dns_label
from gangway_podgang.plan import plan_podgangs
from tests.support.manifests import fixture
from tests.support.strategies import podcliquesets


def pcs(doc: dict[str, Any]) -> PodCliqueSet:
    return from_object(doc, PodCliqueSet)


def disagg() -> dict[str, Any]:
    return copy.deepcopy(fixture("podcliquesets/disaggregated-inference.yaml"))


def errors(doc: dict[str, Any], levels: list[str] | None = None) -> list[str]:
    return [str(e) for e in check_podcliqueset(pcs(doc), levels).errors]


@pytest.mark.parametrize(
    "path",
    [
        "podcliquesets/single-clique.yaml",
        "podcliquesets/disaggregated-inference.yaml",
        "podcliquesets/scaletest-1000.yaml",
    ],
)
def test_fixtures_pass(path: str) -> None:
    assert errors(fixture(path)) == []


def test_clique_names_unique_and_dns_labels() -> None:
    doc = disagg()
    cliques = doc["spec"]["template"]["cliques"]
    cliques[1]["name"] = "router"
    cliques[2]["name"] = "Prefill_Worker"
    doc["spec"]["template"]["podCliqueScalingGroups"][0]["cliqueNames"] = ["router"]
    found = errors(doc)
    duplicate = 'Duplicate value: "router" (also spec.template.cliques[0].name)'
    assert f"spec.template.cliques[1].name: {duplicate}" in found
    assert any(
        e.startswith('spec.template.cliques[2].name: "Prefill_Worker" must be a DNS-1123 label')
        for e in found
    )


def test_scaling_group_members_exist_once() -> None:
    doc = disagg()
    groups = doc["spec"]["template"]["podCliqueScalingGroups"]
    groups[0]["cliqueNames"] = ["pleader", "nope"]
    groups[1]["cliqueNames"] = ["dleader", "pleader"]
    assert errors(doc) == [
        'spec.template.podCliqueScalingGroups[0].cliqueNames[1]: Not found: "nope" (no clique '
        "of that name)",
        'spec.template.podCliqueScalingGroups[1].cliqueNames[1]: clique "pleader" is already '
        'in scaling group "prefill": a clique belongs to one scaling group at most',
    ]


def test_min_available_within_replicas() -> None:
    doc = disagg()
    doc["spec"]["template"]["cliques"][2]["spec"]["minAvailable"] = 4
    doc["spec"]["template"]["podCliqueScalingGroups"][1]["minAvailable"] = 0
    assert errors(doc) == [
        "spec.template.cliques[2].spec.minAvailable: must be <= replicas (3), is 4",
        "spec.template.podCliqueScalingGroups[1].minAvailable: must be >= 1, is 0",
    ]


def test_generated_names_fit_for_the_replicas_asked() -> None:
    doc = fixture("podcliquesets/single-clique.yaml")
    doc["metadata"]["name"] = "a" * 50
    doc["spec"]["replicas"] = 1
    clique = doc["spec"]["template"]["cliques"][0]
    assert errors(doc) == []  # aaaa…-0-<clique>-<n> still fits in 63
    clique["spec"]["replicas"] = 10_000_000_000  # over the pod ceiling too: said apart
    (only,) = [e for e in errors(doc) if not e.startswith("spec.replicas")]
    assert only.startswith(f'spec.template.cliques[0].name: makes pod name: "{"a" * 50}-0-')
    assert "more than a DNS label's 63" in only


def test_names_a_scaling_group_would_collide_with() -> None:
    doc = disagg()
    doc["spec"]["template"]["cliques"][0]["name"] = "prefill-0-pleader"
    assert any(
        e.startswith(
            'spec.template.cliques[0].name: "prefill-0-pleader" collides with the '
            'names scaling group "prefill" gives its replicas'
        )
        for e in errors(doc)
    )


def test_template_labels_and_annotations_valid() -> None:
    doc = disagg()
    router = doc["spec"]["template"]["cliques"][0]
    router["labels"] = {"ok.example.com/x": "fine", "bad key": "v", "v": "-bad"}
    router["annotations"] = {"/nope": "x"}
    found = errors(doc)
    assert 'spec.template.cliques[0].labels: key "bad key" must read [prefix/]name' in found[0]
    assert found[1].startswith('spec.template.cliques[0].labels[v]: "-bad" must be')
    assert found[2].startswith('spec.template.cliques[0].annotations: key "/nope"')
    assert len(found) == 3


def test_child_topology_no_looser_than_parent() -> None:
    doc = disagg()
    group = doc["spec"]["template"]["podCliqueScalingGroups"][0]
    group["topologyConstraint"] = {"pack": {"required": "rack"}}
    doc["spec"]["template"]["cliques"][1]["topologyConstraint"] = {"pack": {"required": "zone"}}
    levels = ["zone", "block", "rack"]
    assert errors(doc, levels) == [
        'spec.template.cliques[1].topologyConstraint.pack.required: "zone" is broader than '
        '"rack" required by spec.template.podCliqueScalingGroups[0].topologyConstraint: a part '
        "must be packed at least as tightly as the whole"
    ]
    # Levels unknown to the order used: not judged, and said so.
    findings = check_podcliqueset(pcs(doc), ["rack"])
    assert findings.errors == []
    assert findings.skipped[0].startswith("spec.template.cliques[1].topologyConstraint: nesting")


@pytest.mark.parametrize("startup", ["CliqueStartupTypeInOrder", "CliqueStartupTypeExplicit"])
def test_an_ordered_startup_is_admitted(startup: str) -> None:
    doc = disagg()
    doc["spec"]["template"]["cliqueStartupType"] = startup
    assert errors(doc) == []


def test_starts_after_names_each_clique_once_and_never_in_a_circle() -> None:
    doc = disagg()
    template = doc["spec"]["template"]
    template["cliqueStartupType"] = "CliqueStartupTypeExplicit"
    names = [c["name"] for c in template["cliques"]]
    template["cliques"][0]["spec"]["startsAfter"] = [names[2]]
    template["cliques"][1]["spec"]["startsAfter"] = [names[0], names[0]]
    template["cliques"][2]["spec"]["startsAfter"] = [names[1]]
    assert errors(doc) == [
        f'spec.template.cliques[1].spec.startsAfter[1]: Duplicate value: "{names[0]}"',
        f"spec.template.cliques[0].spec.startsAfter: must not be circular: {names[0]} -> "
        f"{names[2]} -> {names[1]} -> {names[0]} would never start",
    ]


def test_an_autoscaler_keeps_within_what_the_gang_needs() -> None:
    doc = disagg()
    template = doc["spec"]["template"]
    standalone = next(
        i
        for i, c in enumerate(template["cliques"])
        if all(c["name"] not in g["cliqueNames"] for g in template["podCliqueScalingGroups"])
    )
    clique = template["cliques"][standalone]
    clique["spec"].update(replicas=3, minAvailable=2)
    clique["spec"]["autoScalingConfig"] = {"minReplicas": 1, "maxReplicas": 2}
    group = template["podCliqueScalingGroups"][0]
    group.update(replicas=2, minAvailable=1)
    group["scaleConfig"] = {"maxReplicas": 4}
    member = next(i for i, c in enumerate(template["cliques"]) if c["name"] in group["cliqueNames"])
    template["cliques"][member]["spec"]["autoScalingConfig"] = {"maxReplicas": 9}
    where = f"spec.template.cliques[{standalone}].spec.autoScalingConfig"
    assert errors(doc) == [
        f"{where}.minReplicas: must be >= minAvailable (2), is 1",
        f"{where}.maxReplicas: must be >= minReplicas (1) and replicas (3), is 2",
        f"spec.template.cliques[{member}].spec.autoScalingConfig: must not be set: "
        f'"{template["cliques"][member]["name"]}" scales with its scaling group (set the '
        "group's scaleConfig instead)",
    ]


def test_one_topology_name_however_many_constraints_name_it() -> None:
    """Grove lets any constraint name the topology and the others inherit it."""
    doc = disagg()
    template = doc["spec"]["template"]
    del template["topologyConstraint"]
    template["cliques"][4]["topologyConstraint"]["topologyName"] = "datacenter"
    assert errors(doc) == []
    assert pcs(doc).topology_name == "datacenter"
    template["podCliqueScalingGroups"][0]["topologyConstraint"]["topologyName"] = "lab"
    assert errors(doc) == [
        'spec.template.podCliqueScalingGroups[0].topologyConstraint.topologyName: "lab" differs '
        'from "datacenter" (spec.template.cliques[4].topologyConstraint.topologyName): '
        "a PodCliqueSet is placed within one topology"
    ]


def test_update_keeps_clique_names_and_scheduler() -> None:
    old = fixture("podcliquesets/single-clique.yaml")
    new = copy.deepcopy(old)
    new["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["schedulerName"] = "default-scheduler"
    assert [str(e) for e in check_update(pcs(old), pcs(new))] == [
        "spec.template.cliques[0].spec.podSpec.schedulerName: is immutable: was "
        '"kai-scheduler", now "default-scheduler"'
    ]
    new = copy.deepcopy(old)
    new["spec"]["template"]["cliques"][0]["name"] = "renamed"
    (only,) = check_update(pcs(old), pcs(new))
    assert only.field == "spec.template.cliques"
    assert "clique names are immutable" in only.reason
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 5
    assert check_update(pcs(old), pcs(new)) == []


@settings(max_examples=150, deadline=None)
@given(podcliquesets(), st.integers(0, 3), st.integers(1, 40))
def test_what_passes_plans_only_valid_distinct_names(
    doc: dict[str, Any], replicas: int, name_length: int
) -> None:
    doc["spec"]["replicas"] = replicas
    doc["metadata"]["name"] = ("p" * name_length)[:name_length]
    admitted = pcs(doc)
    if check_podcliqueset(admitted).errors:
        return
    plan = plan_podgangs(admitted)
    names = [g.name for g in plan.gangs]
    assert len(set(names)) == len(names)
    podgroups = [pg.name for g in plan.gangs for pg in g.podgroups]
    assert len(set(podgroups)) == len(podgroups)
    pods = [pod for g in plan.gangs for pg in g.podgroups for pod in pg.pods]
    assert len(set(pods)) == len(pods)
    assert all(is_dns_label(n) for n in [*names, *podgroups, *pods])


def test_a_cliques_own_priority_class_is_said_to_be_replaced() -> None:
    doc = disagg()
    doc["spec"]["template"]["cliques"][1]["spec"]["podSpec"]["priorityClassName"] = "own"
    findings = check_podcliqueset(pcs(doc))
    assert findings.errors == []
    [warning] = findings.warnings
    assert warning.startswith('spec.template.cliques[1].spec.podSpec.priorityClassName: "own"')
    assert 'every pod gets spec.template.priorityClassName ("inference-high")' in warning
    doc["spec"]["template"]["cliques"][1]["spec"]["podSpec"]["priorityClassName"] = "inference-high"
    assert check_podcliqueset(pcs(doc)).warnings == [], "the same class: nothing replaced"
