"""PodGang → scheduler-plugins' Coscheduling PodGroup, validation, pod preparation, and the
per-role minimum one PodGroup cannot keep."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from gangway_backend_coscheduling import translate
from gangway_backend_coscheduling.backend import CoschedulingBackend
from gangway_backend_coscheduling.builtin import CoschedulingConfig
from gangway_contracts.codec import from_object
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.rpc import PodsPrepared, PreparePodsRequest, ValidateRequest
from gangway_podgang.plan import plan_podgangs
from tests.support.strategies import podcliquesets
from tests.unit.backends.builders import pod, podcliqueset, podgang, with_pods

GANG = podgang(("pcs-0-leader", 1), ("pcs-0-worker", 3))


def test_one_podgroup_per_podgang_its_minimum_the_sum_owned_by_it() -> None:
    group = translate.podgroup(GANG, CoschedulingConfig(schedule_timeout_seconds=30))
    assert group["apiVersion"] == "scheduling.x-k8s.io/v1alpha1"
    assert group["metadata"]["name"] == "pcs-0"
    assert group["metadata"]["ownerReferences"][0]["kind"] == "PodGang"
    assert group["metadata"]["ownerReferences"][0]["uid"] == "gang-uid"
    assert group["spec"] == {"minMember": 4, "scheduleTimeoutSeconds": 30}


def test_no_timeout_leaves_the_plugins_own_and_no_minimum_is_one() -> None:
    spec = translate.podgroup(podgang(("pcs-0-a", 0)), CoschedulingConfig())["spec"]
    assert spec == {"minMember": 1}  # the CRD's least: pods placed one by one


def test_prepared_pods_join_the_podgangs_podgroup_under_the_configured_scheduler() -> None:
    backend = CoschedulingBackend(CoschedulingConfig(scheduler_name="gangs"))
    request = PreparePodsRequest(podgang=GANG, pods=[pod("p-0", "pcs-0", "pcs-0-worker")])
    reply = backend.prepare_pods(request)
    assert isinstance(reply, PodsPrepared)
    prepared = reply.pods[0]
    assert prepared["metadata"]["labels"][translate.POD_GROUP_LABEL] == "pcs-0"
    assert prepared["spec"]["schedulerName"] == "gangs"


def test_the_profile_configuration_reaches_the_backend() -> None:
    config = parse_scheduler_config(
        {"profiles": [{"name": "coscheduling", "config": {"scheduleTimeoutSeconds": 9}}]}
    )
    backend = CoschedulingBackend.from_config(config)
    assert backend.config.schedule_timeout_seconds == 9
    assert backend.config.scheduler_name == "scheduler-plugins-scheduler"
    assert config.resolve("scheduler-plugins-scheduler") == "coscheduling"


async def test_required_packing_is_refused_preferred_reported() -> None:
    pcs = podcliqueset(
        [
            {"name": "a", "topologyConstraint": {"pack": {"required": "rack"}}},
            {"name": "b", "topologyConstraint": {"pack": {"preferred": "host"}}},
        ]
    )
    reply = await CoschedulingBackend().validate_podcliqueset(
        ValidateRequest(operation="CREATE", podcliqueset=pcs), None
    )
    assert not reply.allowed
    assert [e.field for e in reply.errors] == [
        "spec.template.cliques[0].topologyConstraint.pack.required"
    ]
    assert "coscheduling has no topology-aware gang placement" in reply.errors[0].reason
    assert [u.field for u in reply.unsupported] == [
        "spec.template.cliques[1].topologyConstraint.pack.preferred"
    ]


@pytest.mark.parametrize(
    ("cliques", "groups", "flagged"),
    [
        ([{"name": "a", "replicas": 3}], None, []),  # one podgroup: exact
        ([{"name": "a", "replicas": 3, "spec_min": 1}], None, []),  # alone in its gang
        ([{"name": "a", "replicas": 2}, {"name": "b", "replicas": 3}], None, []),  # all needed
        (
            [{"name": "a", "replicas": 1}, {"name": "b", "replicas": 3, "spec_min": 2}],
            None,
            ["spec.template.cliques[1].spec.minAvailable"],
        ),
        (  # a scaling group of one clique: its scaled gangs hold one podgroup each
            [{"name": "w", "replicas": 4, "spec_min": 2}],
            [{"name": "sg", "cliqueNames": ["w"], "replicas": 3, "minAvailable": 1}],
            [],
        ),
        (  # … but its base replicas share the base gang with a standalone clique
            [{"name": "l", "replicas": 1}, {"name": "w", "replicas": 4, "spec_min": 2}],
            [{"name": "sg", "cliqueNames": ["w"], "replicas": 3, "minAvailable": 1}],
            ["spec.template.cliques[1].spec.minAvailable"],
        ),
    ],
)
def test_spare_pods_in_a_gang_of_several_podgroups_are_reported(
    cliques: list[dict[str, Any]], groups: list[dict[str, Any]] | None, flagged: list[str]
) -> None:
    pcs = podcliqueset(
        [
            {
                "name": c["name"],
                "spec": {"replicas": c["replicas"], **_min(c)},
            }
            for c in cliques
        ],
        groups=groups,
    )
    reported = translate.shared_minimums(pcs)
    assert [u.field for u in reported] == flagged
    assert all(u.feature == "PerPodGroupMinimum" for u in reported)


def _min(clique: dict[str, Any]) -> dict[str, Any]:
    return {"minAvailable": clique["spec_min"]} if "spec_min" in clique else {}


@given(podcliquesets())
def test_admission_reports_exactly_the_cliques_whose_podgangs_share_a_minimum(
    manifest: dict[str, Any],
) -> None:
    """What admission says up front is what the PodGangs planned from it show: a clique is
    reported if and only if one of its podgroups has spare pods in a PodGang of several."""
    manifest["spec"]["replicas"] = max(manifest["spec"]["replicas"], 1)
    pcs = from_object(manifest, PodCliqueSet)
    reported = {u.field for u in translate.shared_minimums(pcs)}
    index = {c.name: i for i, c in enumerate(pcs.spec.template.cliques)}
    planned = {
        f"spec.template.cliques[{index[group.clique.name]}].spec.minAvailable"
        for gang in plan_podgangs(pcs).gangs
        if len(gang.podgroups) > 1
        for group in gang.podgroups
        if len(group.pods) > group.min_replicas
    }
    assert reported == planned


def test_the_sync_message_names_podgroups_whose_spare_pods_count_for_others() -> None:
    assert translate.spare_pods(with_pods(GANG, {"pcs-0-leader": 1, "pcs-0-worker": 3})) == []
    spare = with_pods(GANG, {"pcs-0-leader": 1, "pcs-0-worker": 5})
    assert translate.spare_pods(spare) == ["pcs-0-worker"]
    alone = podgang(("pcs-0-worker", 1))
    assert translate.spare_pods(with_pods(alone, {"pcs-0-worker": 4})) == []
