"""PodGang → Volcano PodGroup (each podgroup a task with its minimum), the queue, validation
and pod preparation: tables and properties, no cluster."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given

from gangway_backend_volcano import translate
from gangway_backend_volcano.backend import VolcanoBackend
from gangway_backend_volcano.builtin import VolcanoConfig
from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.rpc import PodsPrepared, PreparePodsRequest, ValidateRequest
from gangway_podgang.manifests import podgang_manifest
from gangway_podgang.plan import plan_podgangs
from tests.support.manifests import fixture
from tests.support.strategies import podcliquesets
from tests.unit.backends.builders import pod, podcliqueset, podgang

GANG = podgang(("pcs-0-leader", 1), ("pcs-0-worker", 3), priority="high")
Q = translate.QUEUE_KEY


def test_one_podgroup_per_podgang_each_podgroup_a_task_with_its_minimum() -> None:
    group = translate.podgroup(GANG, "team-a")
    assert group["apiVersion"] == "scheduling.volcano.sh/v1beta1"
    assert group["metadata"]["name"] == "pcs-0"
    assert group["metadata"]["ownerReferences"][0]["uid"] == "gang-uid"
    assert group["spec"] == {
        "minMember": 4,
        "minTaskMember": {"pcs-0-leader": 1, "pcs-0-worker": 3},
        "queue": "team-a",
        "priorityClassName": "high",
    }


def test_no_minimum_is_one_pod_at_a_time() -> None:
    spec = translate.podgroup(podgang(("pcs-0-a", 0)), "default")["spec"]
    assert (spec["minMember"], spec["minTaskMember"]) == (1, {"pcs-0-a": 0})


def test_an_existing_podgroup_keeps_its_queue() -> None:
    desired = translate.podgroup(GANG, "new")
    assert translate.keep_queue(desired, {"spec": {"queue": "old"}})["spec"]["queue"] == "old"
    assert translate.keep_queue(desired, {"spec": {}})["spec"]["queue"] == "new"


def _prepared(
    gang: PodGang, podgroup: str, scheduler: str = "volcano", index: str | None = None
) -> dict[str, Any]:
    backend = VolcanoBackend(VolcanoConfig(scheduler_name=scheduler))
    member = pod("p-0", gang.metadata.name, podgroup)
    if index is not None:
        member["metadata"]["labels"][labels.POD_INDEX] = index
    reply = backend.prepare_pods(PreparePodsRequest(podgang=gang, pods=[member]))
    assert isinstance(reply, PodsPrepared)
    [prepared] = reply.pods
    return prepared


def test_prepared_pods_join_the_podgroup_as_their_podgroups_task() -> None:
    prepared = _prepared(GANG, "pcs-0-worker", scheduler="batch")
    assert prepared["spec"]["schedulerName"] == "batch"
    assert prepared["metadata"]["annotations"] == {
        translate.GROUP_NAME: "pcs-0",
        translate.VOLCANO_GROUP_NAME: "pcs-0",
        translate.TASK_SPEC: "pcs-0-worker",
        translate.TASK_PRIORITY: translate.MINIMUM_TASK_PRIORITY,
    }


@pytest.mark.parametrize(
    ("index", "priority"),
    [
        ("0", translate.MINIMUM_TASK_PRIORITY),
        ("2", translate.MINIMUM_TASK_PRIORITY),  # the worker's minimum is 3: 0, 1, 2
        ("3", translate.SPARE_TASK_PRIORITY),
        ("10", translate.SPARE_TASK_PRIORITY),
        (None, translate.MINIMUM_TASK_PRIORITY),  # no index: never ranked below a minimum
        ("x", translate.MINIMUM_TASK_PRIORITY),
    ],
)
def test_pods_within_their_minimum_are_tried_before_spare_ones(
    index: str | None, priority: str
) -> None:
    notes = _prepared(GANG, "pcs-0-worker", index=index)["metadata"]["annotations"]
    assert notes[translate.TASK_PRIORITY] == priority


@given(podcliquesets())
def test_every_pod_is_a_task_of_its_podgroup_and_every_minimum_is_kept(
    manifest: dict[str, Any],
) -> None:
    """For any PodCliqueSet: each planned PodGang's PodGroup has one task per podgroup with
    that podgroup's minimum, minMember is their sum (at least 1), and each pod prepared for it
    names its PodGroup and one of its tasks; exactly the podgroup's minimum (or all its pods,
    if fewer) are tried first."""
    manifest["spec"]["replicas"] = max(manifest["spec"]["replicas"], 1)
    pcs = from_object(manifest, PodCliqueSet)
    for planned in plan_podgangs(pcs).gangs:
        groups = [(g.name, g.min_replicas) for g in planned.podgroups]
        gang = podgang(*groups, name=planned.name)
        spec = translate.podgroup(gang, "q")["spec"]
        assert spec["minTaskMember"] == dict(groups)
        assert spec["minMember"] == max(1, sum(m for _, m in groups))
        for group in planned.podgroups:
            first = 0
            for index in range(len(group.pods)):
                notes = _prepared(gang, group.name, index=str(index))["metadata"]["annotations"]
                assert notes[translate.GROUP_NAME] == planned.name
                assert notes[translate.TASK_SPEC] in spec["minTaskMember"]
                first += notes[translate.TASK_PRIORITY] == translate.MINIMUM_TASK_PRIORITY
            assert first == min(group.min_replicas, len(group.pods))


@pytest.mark.parametrize(
    ("meta", "cliques", "queue", "errors"),
    [
        ({}, [{}], "default", []),  # nothing set: the profile's default
        ({"annotations": {Q: "team-a"}}, [{}], "team-a", []),  # Grove's place
        ({"labels": {Q: "team-a"}}, [{}], "team-a", []),
        ({}, [{"annotations": {Q: " team-b "}}, {}], "team-b", []),  # trimmed, as Grove does
        ({"annotations": {Q: "a"}}, [{"annotations": {Q: "a"}}], "a", []),
        (
            {"annotations": {Q: "a"}},
            [{}, {"annotations": {Q: "b"}}],
            None,
            [f"spec.template.cliques[1].annotations[{Q}]"],
        ),
        ({"annotations": {Q: "Team_A"}}, [{}], None, [f"metadata.annotations[{Q}]"]),
    ],
)
def test_queue_resolution(
    meta: dict[str, Any], cliques: list[dict[str, Any]], queue: str | None, errors: list[str]
) -> None:
    pcs = podcliqueset([{"name": f"c{i}", **c} for i, c in enumerate(cliques)], meta=meta)
    resolved = translate.resolve_queue(pcs, VolcanoConfig())
    assert resolved.name == queue
    assert [e.field for e in resolved.errors] == errors


CLOSED = 'Volcano Queue "q" is Closed: it takes no new PodGroups'
CLOSING = 'Volcano Queue "q" is Closing: it takes no new PodGroups'


@pytest.mark.parametrize(
    ("live", "problem"),
    [
        (None, 'Volcano Queue "q" does not exist in the cluster'),
        ({"status": {"state": "Closed"}}, CLOSED),
        ({"status": {"state": "Closing"}}, CLOSING),
        ({"status": {"state": "Open"}}, None),
        ({}, None),  # no queue controller has written a state: vc-scheduler takes it
    ],
)
def test_queue_problems(live: dict[str, Any] | None, problem: str | None) -> None:
    assert translate.queue_problem("q", live) == problem


async def test_validation_refuses_required_packing_and_a_bad_queue_offline() -> None:
    pcs = podcliqueset(
        [
            {"name": "a", "topologyConstraint": {"pack": {"required": "rack"}}},
            {"name": "b", "topologyConstraint": {"pack": {"preferred": "host"}}},
        ],
        meta={"annotations": {Q: "no way"}},
    )
    request = ValidateRequest(operation="CREATE", podcliqueset=pcs)
    reply = await VolcanoBackend().validate_podcliqueset(request, None)
    assert not reply.allowed
    assert [e.field for e in reply.errors] == [
        f"metadata.annotations[{Q}]",
        "spec.template.cliques[0].topologyConstraint.pack.required",
    ]
    assert "volcano has no topology-aware gang placement" in reply.errors[1].reason
    assert [u.feature for u in reply.unsupported] == ["TopologyPreferredPacking"]

    fine = podcliqueset([{"name": "a"}])
    reply = await VolcanoBackend().validate_podcliqueset(
        ValidateRequest(operation="CREATE", podcliqueset=fine), None
    )
    assert reply.allowed
    assert reply.warnings == ['not checked offline: Volcano Queue "default" is open']


def test_the_profile_configuration_reaches_the_backend() -> None:
    config = parse_scheduler_config(
        {"profiles": [{"name": "volcano", "config": {"schedulerName": "vc", "defaultQueue": "b"}}]}
    )
    backend = VolcanoBackend.from_config(config)
    assert (backend.config.scheduler_name, backend.config.default_queue) == ("vc", "b")
    assert config.resolve("vc") == "volcano"
    assert translate.resolve_queue(podcliqueset([{"name": "a"}]), backend.config).name == "b"


def test_the_podgroup_asks_for_what_the_gangs_minimum_needs() -> None:
    """minResources: each podgroup's minimum pods' requests (vc-scheduler's enqueue weighs
    them against the queue's capability)."""
    pcs = from_object(fixture("podcliquesets/disaggregated-inference.yaml"), PodCliqueSet)
    base, scaled = (
        from_object(podgang_manifest(gang, pcs, "volcano"), PodGang)
        for gang in plan_podgangs(pcs).gangs[:2]
    )
    # router 2 x (2 CPUs, 4Gi); prefill-0: 1 + 2 pods of 8 GPUs; decode-0 asks for nothing
    assert translate.podgroup(base, "q", pcs)["spec"]["minResources"] == {
        "cpu": "4",
        "memory": str(8 << 30),
        "nvidia.com/gpu": "24",
    }
    assert translate.podgroup(scaled, "q", pcs)["spec"]["minResources"] == {"nvidia.com/gpu": "24"}
    assert "minResources" not in translate.podgroup(base, "q")["spec"], "no PodCliqueSet known"
    foreign = podgang(("elsewhere-0-x", 1))
    assert "minResources" not in translate.podgroup(foreign, "q", pcs)["spec"]
