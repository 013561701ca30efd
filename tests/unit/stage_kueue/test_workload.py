"""PodGang → Kueue Workload, and Kueue's decision read back, table by table."""

from __future__ import annotations

from typing import Any

import msgspec

from gangway_contracts import kueue, labels, why
from gangway_contracts.grove import PodCliqueSet, PodGang
from gangway_contracts.kueue_topology import podgang_requests
from gangway_stage_kueue.workload import podset_name, unreserved, verdict_of, workload


def clique(name: str, requests: dict[str, str], **pod: Any) -> dict[str, Any]:
    return {
        "name": name,
        "spec": {
            "roleName": name,
            "replicas": 2,
            "podSpec": {
                "containers": [{"name": "c", "image": "i", "resources": {"requests": requests}}],
                **pod,
            },
        },
    }


PCS = msgspec.json.decode(
    msgspec.json.encode(
        {
            "metadata": {"name": "serve", "namespace": "ns", "labels": {kueue.QUEUE_LABEL: "team"}},
            "spec": {
                "replicas": 1,
                "template": {
                    "cliques": [
                        clique("leader", {"cpu": "500m", "nvidia.com/gpu": "1"}),
                        clique(
                            "worker",
                            {"nvidia.com/gpu": "4"},
                            nodeSelector={"pool": "a"},
                            tolerations=[{"key": "gpu", "operator": "Exists"}],
                        ),
                    ],
                    "podCliqueScalingGroups": [
                        {"name": "sg", "cliqueNames": ["worker"], "replicas": 2, "minAvailable": 1}
                    ],
                },
            },
        }
    ),
    type=PodCliqueSet,
)


def gang(priority_class: str | None = None) -> PodGang:
    def group(name: str, pods: int) -> dict[str, Any]:
        refs = [{"namespace": "ns", "name": f"{name}-{i}"} for i in range(pods)]
        return {"name": name, "podReferences": refs, "minReplicas": pods}

    spec: dict[str, Any] = {
        "podgroups": [group("serve-0-leader", 1), group("serve-0-sg-0-worker", 2)]
    }
    if priority_class:
        spec["priorityClassName"] = priority_class
    meta = {
        "name": "serve-0",
        "namespace": "ns",
        "uid": "u1",
        "labels": {
            labels.PART_OF: "serve",
            labels.PCS_REPLICA_INDEX: "0",
            labels.SCHEDULER_NAME: "default-scheduler",
            kueue.QUEUE_LABEL: "team",
        },
    }
    return msgspec.json.decode(msgspec.json.encode({"metadata": meta, "spec": spec}), type=PodGang)


def test_one_podset_per_podgroup_counting_its_pods_asking_what_each_pod_asks() -> None:
    made = workload(gang(), PCS, "team", None)
    assert made["metadata"]["name"] == "serve-0"
    assert made["metadata"]["ownerReferences"][0]["kind"] == "PodGang"
    assert made["metadata"]["labels"][labels.SCHEDULER_NAME] == "default-scheduler"
    assert made["spec"]["queueName"] == "team"
    assert "priority" not in made["spec"]
    leader, workers = made["spec"]["podSets"]
    assert (leader["name"], leader["count"]) == ("leader", 1)
    assert leader["template"]["spec"] == {
        "containers": [
            {"name": "pod", "resources": {"requests": {"cpu": "500m", "nvidia.com/gpu": "1"}}}
        ]
    }
    assert (workers["name"], workers["count"]) == ("sg-0-worker", 2)
    spec = workers["template"]["spec"]
    assert spec["nodeSelector"] == {"pool": "a"}
    assert spec["tolerations"] == [{"key": "gpu", "operator": "Exists"}]


def test_the_gangs_priority_class_and_its_value_go_to_kueue() -> None:
    made = workload(gang("high"), PCS, "team", 1000)
    assert made["spec"]["priority"] == 1000
    assert made["spec"]["priorityClassRef"] == {
        "group": "scheduling.k8s.io",
        "kind": "PriorityClass",
        "name": "high",
    }


def test_a_podset_name_too_long_for_kueue_is_shortened_and_stays_unique() -> None:
    long_group = "x" * 70
    first = podset_name(gang(), f"serve-0-{long_group}-a")
    second = podset_name(gang(), f"serve-0-{long_group}-b")
    assert len(first) <= 63
    assert first != second


def status(*conditions: tuple[str, str, str, str], queue: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {
        "metadata": {"name": "serve-0", "resourceVersion": "7", "generation": 1},
        "status": {
            "conditions": [
                {"type": t, "status": s, "reason": r, "message": m} for t, s, r, m in conditions
            ]
        },
    }
    if queue:
        found["status"]["admission"] = {"clusterQueue": queue}
    return found


def test_kueues_decision_in_the_one_vocabulary() -> None:
    assert verdict_of(None).reason == why.GATED
    assert verdict_of(status()).reason == why.GATED
    admitted = verdict_of(
        status(
            ("QuotaReserved", "True", "QuotaReserved", ""),
            ("Admitted", "True", "Admitted", ""),
            queue="gpus",
        )
    )
    assert (admitted.admitted, admitted.reason, admitted.cluster_queue) == (
        True,
        "Admitted",
        "gpus",
    )
    assert admitted.message == "admitted by Kueue in ClusterQueue gpus"
    over = verdict_of(status(("QuotaReserved", "False", "Pending", "8 more needed")))
    assert (over.admitted, over.reason, over.message) == (
        False,
        why.OVER_QUOTA,
        "Kueue: 8 more needed",
    )
    closed = verdict_of(
        status(("QuotaReserved", "False", "Inadmissible", "LocalQueue team doesn't exist"))
    )
    assert closed.reason == why.QUEUE_CLOSED
    evicted = verdict_of(
        status(
            ("QuotaReserved", "True", "QuotaReserved", ""),
            ("Admitted", "True", "Admitted", ""),
            ("Evicted", "True", "Preempted", "Preempted to accommodate a workload"),
            queue="gpus",
        )
    )
    assert (evicted.admitted, evicted.reason, evicted.evicted) == (False, why.PREEMPTED, True)
    assert evicted.message == "evicted by Kueue: Preempted to accommodate a workload"
    handed_back = verdict_of(
        status(("QuotaReserved", "False", "Pending", "x"), ("Evicted", "True", "Preempted", "y"))
    )
    assert (handed_back.reason, handed_back.evicted) == (why.PREEMPTED, False)


def test_the_quota_is_handed_back_as_kueues_integrations_do_under_its_version() -> None:
    live = status(
        ("QuotaReserved", "True", "QuotaReserved", ""),
        ("Admitted", "True", "Admitted", ""),
        ("Evicted", "True", "Preempted", "to make room"),
        queue="gpus",
    )
    patch = unreserved(live, "2026-11-29T00:00:00Z")
    assert patch["metadata"] == {"resourceVersion": "7"}
    assert patch["status"]["admission"] is None
    said = {c["type"]: (c["status"], c["reason"]) for c in patch["status"]["conditions"]}
    assert said == {
        "Evicted": ("True", "Preempted"),
        "QuotaReserved": ("False", "Pending"),
        "Admitted": ("False", "NoReservation"),
        "Requeued": ("True", "Preempted"),
    }


def packed(constraint: dict[str, Any]) -> PodGang:
    found = msgspec.to_builtins(gang())
    found["spec"]["topologyConstraint"] = {"packConstraint": constraint}
    return msgspec.convert(found, type=PodGang)


def test_with_kueues_topology_the_gangs_pack_becomes_its_podsets_request() -> None:
    """A leader of one pod and its workers in one rack: one podSet group, as Kueue keeps a
    LeaderWorkerSet's; without ``topology`` nothing is asked of Kueue's topology."""
    racked = packed({"required": "example.com/rack"})
    made = workload(racked, PCS, "team", None, podgang_requests(racked))
    asked = [p["topologyRequest"] for p in made["spec"]["podSets"]]
    assert asked == [{"required": "example.com/rack", "podSetGroupName": "gang"}] * 2
    plain = workload(packed({"required": "example.com/rack"}), PCS, "team", None)
    assert all("topologyRequest" not in p for p in plain["spec"]["podSets"])
    near = packed({"preferred": "example.com/rack"})
    preferred = workload(near, PCS, "team", None, podgang_requests(near))
    assert preferred["spec"]["podSets"][0]["topologyRequest"]["preferred"] == "example.com/rack"


def test_kueue_holding_a_gang_for_want_of_a_domain_is_unschedulable_not_over_quota() -> None:
    words = 'couldn\'t assign flavors to pod set w: topology "racks" allows to fit only 2 of 4'
    held = verdict_of(status(("QuotaReserved", "False", "Pending", words)))
    assert held.reason == why.UNSCHEDULABLE


def test_a_queue_whose_flavors_have_no_topology_is_closed_to_a_packed_gang() -> None:
    words = (
        'couldn\'t assign flavors to pod set w: Flavor "f" does not support TopologyAwareScheduling'
    )
    assert (
        verdict_of(status(("QuotaReserved", "False", "Pending", words))).reason == why.QUEUE_CLOSED
    )
