"""Planning PodGangs: Grove's names and layout, examples and properties."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from gangway_contracts.codec import from_object
from gangway_contracts.grove import (
    ClusterTopologyBinding,
    PackConstraint,
    PodCliqueSet,
    PodGangTopologyConstraint,
)
from gangway_podgang.plan import Plan, plan_podgangs
from tests.support.manifests import fixture
from tests.support.strategies import podcliquesets

DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def disagg() -> PodCliqueSet:
    return from_object(fixture("podcliquesets/disaggregated-inference.yaml"), PodCliqueSet)


def binding() -> ClusterTopologyBinding:
    return from_object(
        {
            "apiVersion": "grove.io/v1alpha1",
            "kind": "ClusterTopologyBinding",
            "metadata": {"name": "datacenter"},
            "spec": {
                "levels": [
                    {"domain": "zone", "key": "topology.kubernetes.io/zone"},
                    {"domain": "block", "key": "example.com/block"},
                    {"domain": "rack", "key": "example.com/rack"},
                ]
            },
        },
        ClusterTopologyBinding,
    )


def test_gangs_of_the_disaggregated_example() -> None:
    plan = plan_podgangs(disagg(), binding())
    # prefill: replicas 3, minAvailable 1 → 1 in the base gang, 2 scaled gangs;
    # decode: replicas 2, minAvailable 1 (default) → 1 in the base gang, 1 scaled gang.
    assert [g.name for g in plan.gangs] == [
        "llama-disagg-0",
        "llama-disagg-0-prefill-0",
        "llama-disagg-0-prefill-1",
        "llama-disagg-0-decode-0",
        "llama-disagg-1",
        "llama-disagg-1-prefill-0",
        "llama-disagg-1-prefill-1",
        "llama-disagg-1-decode-0",
    ]
    base = plan.gangs[0]
    assert [(p.name, p.min_replicas, len(p.pods)) for p in base.podgroups] == [
        ("llama-disagg-0-router", 2, 2),
        ("llama-disagg-0-prefill-0-pleader", 1, 1),
        ("llama-disagg-0-prefill-0-pworker", 2, 3),
        ("llama-disagg-0-decode-0-dleader", 1, 1),
        ("llama-disagg-0-decode-0-dworker", 2, 2),
    ]
    scaled = plan.gangs[2]
    # Scaled gang i holds scaling-group replica minAvailable + i: names keep the replica.
    assert (scaled.base, scaled.scaling_group) == ("llama-disagg-0", "llama-disagg-0-prefill")
    assert [p.name for p in scaled.podgroups] == [
        "llama-disagg-0-prefill-2-pleader",
        "llama-disagg-0-prefill-2-pworker",
    ]
    assert scaled.podgroups[1].pods == (
        "llama-disagg-0-prefill-2-pworker-0",
        "llama-disagg-0-prefill-2-pworker-1",
        "llama-disagg-0-prefill-2-pworker-2",
    )


def test_topology_levels_become_node_label_keys() -> None:
    plan = plan_podgangs(disagg(), binding())
    assert plan.unresolved_topology == ()
    base = plan.gangs[0]
    assert base.topology == PodGangTopologyConstraint(
        pack_constraint=PackConstraint(preferred="topology.kubernetes.io/zone")
    )
    dworker = next(p for p in base.podgroups if p.name.endswith("dworker"))
    assert dworker.topology == PodGangTopologyConstraint(
        pack_constraint=PackConstraint(required="example.com/rack")
    )
    # The prefill scaling group's constraint packs each of its replicas' cliques together.
    assert [(c.name, c.podgroups) for c in base.group_configs] == [
        (
            "llama-disagg-0-prefill-0",
            ("llama-disagg-0-prefill-0-pleader", "llama-disagg-0-prefill-0-pworker"),
        ),
    ]
    assert base.group_configs[0].topology.pack_constraint == PackConstraint(
        required="example.com/block"
    )


def test_unresolvable_topology_is_left_out_and_reported() -> None:
    plan = plan_podgangs(disagg(), binding=None)
    assert plan.gangs[0].topology is None
    assert plan.gangs[0].group_configs == ()
    assert [u.field for u in plan.unresolved_topology] == [
        "spec.template.cliques[4].topologyConstraint.pack.required",
        "spec.template.topologyConstraint.pack.preferred",
        "spec.template.podCliqueScalingGroups[0].topologyConstraint.pack.required",
    ]


# --- properties -----------------------------------------------------------------------------


def pods_of(plan: Plan) -> list[str]:
    return [pod for gang in plan.gangs for _, _, pod in gang.pods]


@given(podcliquesets())
def test_deterministic_unique_valid_names(manifest: dict[str, Any]) -> None:
    plan = plan_podgangs(from_object(manifest, PodCliqueSet))
    assert plan == plan_podgangs(from_object(manifest, PodCliqueSet))
    gangs = [g.name for g in plan.gangs]
    podgroups = [p.name for g in plan.gangs for p in g.podgroups]
    pods = pods_of(plan)
    for names in (gangs, podgroups, pods):
        assert [n for n, c in Counter(names).items() if c > 1] == []
        assert all(DNS1123_SUBDOMAIN.match(n) for n in names)


@given(podcliquesets())
def test_pods_are_the_sum_of_replicas(manifest: dict[str, Any]) -> None:
    pcs = from_object(manifest, PodCliqueSet)
    template = pcs.spec.template
    replicas = {c.name: c.spec.replicas for c in template.cliques}
    grouped = {n for g in template.pod_clique_scaling_groups for n in g.clique_names}
    per_pcs_replica = sum(r for n, r in replicas.items() if n not in grouped) + sum(
        g.replicas * sum(replicas[n] for n in g.clique_names)
        for g in template.pod_clique_scaling_groups
    )
    assert len(pods_of(plan_podgangs(pcs))) == pcs.spec.replicas * per_pcs_replica


@given(podcliquesets(), st.data())
def test_shrinking_removes_only_the_highest_indices(
    manifest: dict[str, Any], data: st.DataObject
) -> None:
    before = plan_podgangs(from_object(manifest, PodCliqueSet))
    where = {pod: (gang, group, index) for gang in before.gangs for group, index, pod in gang.pods}
    spec = manifest["spec"]
    what = data.draw(st.sampled_from(["pcs", "clique", "group"]))
    shrinkable = {
        "pcs": [spec] if spec["replicas"] > 0 else [],
        "clique": [c["spec"] for c in spec["template"]["cliques"] if c["spec"]["replicas"] > 1],
        "group": [g for g in spec["template"]["podCliqueScalingGroups"] if g["replicas"] > 1],
    }[what]
    if not shrinkable or not where:
        return
    target = data.draw(st.sampled_from(shrinkable))
    target["replicas"] -= 1
    if "minAvailable" in target:
        target["minAvailable"] = min(target["minAvailable"], target["replicas"])
    top = target["replicas"]  # the index that no longer exists

    after = set(pods_of(plan_podgangs(from_object(manifest, PodCliqueSet))))
    assert after <= set(where)
    for pod in set(where) - after:
        gang, group, index = where[pod]
        position = {
            "pcs": gang.pcs_replica,
            "clique": index,
            "group": group.scaling_group_replica,
        }[what]
        assert position == top, pod
