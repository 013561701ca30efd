"""PodGang → Koordinator gangs in one GangGroup, the profile's options, validation, pods."""

from __future__ import annotations

import json
from typing import Any

from gangway_backend_koordinator import translate
from gangway_backend_koordinator.backend import KoordinatorBackend
from gangway_backend_koordinator.builtin import KoordinatorConfig
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.rpc import PodsPrepared, PreparePodsRequest, ValidateRequest
from tests.unit.backends.builders import pod, podcliqueset, podgang, with_pods

GANG = podgang(("pcs-0-leader", 1), ("pcs-0-worker", 3))


def notes_of(group: dict[str, Any]) -> dict[str, str]:
    found: dict[str, str] = group["metadata"]["annotations"]
    return found


def test_one_gang_per_podgroup_each_with_its_own_minimum_all_in_one_group() -> None:
    groups = translate.podgroups(GANG, KoordinatorConfig())
    assert [g["metadata"]["name"] for g in groups] == ["pcs-0-leader", "pcs-0-worker"]
    assert [g["spec"] for g in groups] == [{"minMember": 1}, {"minMember": 3}]
    members = ["ns/pcs-0-leader", "ns/pcs-0-worker"]
    for group in groups:
        assert group["apiVersion"] == "scheduling.sigs.k8s.io/v1alpha1"
        assert group["metadata"]["ownerReferences"][0]["uid"] == "gang-uid"
        said = notes_of(group)
        assert json.loads(said[translate.GROUPS]) == members  # the same group in each
        assert said[translate.MODE] == "Strict"
        assert translate.MATCH_POLICY not in said  # the scheduler's default


def test_the_profile_options_reach_every_gang() -> None:
    config = parse_scheduler_config(
        {
            "profiles": [
                {
                    "name": "koordinator",
                    "config": {
                        "mode": "NonStrict",
                        "matchPolicy": "waiting-and-running",
                        "scheduleTimeoutSeconds": 30,
                    },
                }
            ]
        }
    )
    backend = KoordinatorBackend.from_config(config)
    for group in backend.resources(GANG, None):
        assert notes_of(group)[translate.MODE] == "NonStrict"
        assert notes_of(group)[translate.MATCH_POLICY] == "waiting-and-running"
        assert group["spec"]["scheduleTimeoutSeconds"] == 30
    assert config.resolve("koord-scheduler") == "koordinator"


def test_total_number_counts_the_pods_once_the_podgang_lists_them() -> None:
    early = translate.podgroups(GANG, KoordinatorConfig())  # no pods listed yet
    assert [notes_of(g)[translate.TOTAL_NUMBER] for g in early] == ["1", "3"]
    listed = with_pods(GANG, {"pcs-0-leader": 1, "pcs-0-worker": 5})
    later = translate.podgroups(listed, KoordinatorConfig())
    assert [notes_of(g)[translate.TOTAL_NUMBER] for g in later] == ["1", "5"]
    assert [g["spec"]["minMember"] for g in later] == [1, 3]


def test_prepared_pods_join_their_podgroups_gang_under_koord_scheduler() -> None:
    request = PreparePodsRequest(podgang=GANG, pods=[pod("w-0", "pcs-0", "pcs-0-worker")])
    reply = KoordinatorBackend().prepare_pods(request)
    assert isinstance(reply, PodsPrepared)
    [prepared] = reply.pods
    assert prepared["metadata"]["labels"][translate.POD_GROUP_LABEL] == "pcs-0-worker"
    assert prepared["spec"]["schedulerName"] == "koord-scheduler"


async def test_required_packing_is_refused_preferred_reported() -> None:
    pcs = podcliqueset(
        [
            {"name": "a", "topologyConstraint": {"pack": {"required": "rack"}}},
            {"name": "b", "topologyConstraint": {"pack": {"preferred": "host"}}},
        ]
    )
    reply = await KoordinatorBackend().validate_podcliqueset(
        ValidateRequest(operation="CREATE", podcliqueset=pcs), None
    )
    assert [e.field for e in reply.errors] == [
        "spec.template.cliques[0].topologyConstraint.pack.required"
    ]
    assert "koordinator has no topology-aware gang placement" in reply.errors[0].reason
    assert [u.feature for u in reply.unsupported] == ["TopologyPreferredPacking"]


def test_spare_pods_beside_other_roles_are_reported_per_clique() -> None:
    pcs = podcliqueset(
        [
            {"name": "leader", "spec": {"replicas": 3, "minAvailable": 1}},
            {"name": "worker", "spec": {"replicas": 2}},
        ]
    )
    _, unsupported = translate.validate(pcs)
    assert [(u.field, u.feature) for u in unsupported] == [
        ("spec.template.cliques[0].spec.minAvailable", "ElasticGangGroup")
    ]
    alone = podcliqueset([{"name": "leader", "spec": {"replicas": 3, "minAvailable": 1}}])
    assert translate.validate(alone) == ([], [])  # one gang alone is elastic
