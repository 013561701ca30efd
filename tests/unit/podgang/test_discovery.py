"""Pods find each other by name as under Grove: hostname, subdomain, Grove's variables in
Grove's order, one headless Service per PodCliqueSet replica. Checked against Grove's own
discovery samples and the examples of its user guide, with the variables expanded the way
the kubelet expands them."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from gangway_contracts import labels
from gangway_contracts.codec import from_object
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.services import Service
from gangway_podgang.headless import services_to_write
from gangway_podgang.manifests import headless_service, pod_manifest
from gangway_podgang.plan import plan_podgangs
from tests.support.discovery import DYNAMO_LEADER, expanded, fqdn
from tests.support.manifests import fixture

SAMPLES = "grove/samples/user-guide/03_environment-variables-for-pod-discovery"


def _pcs(path: str, uid: str = "pcs-uid") -> PodCliqueSet:
    manifest = fixture(path)
    manifest["metadata"]["uid"] = uid
    return from_object(manifest, PodCliqueSet)


def _pods(pcs: PodCliqueSet) -> list[dict[str, Any]]:
    return [
        pod_manifest(gang, group, index, pcs, podgang_uid="gang-uid")
        for gang in plan_podgangs(pcs).gangs
        for group, index, _ in gang.pods
    ]


def test_grove_sample_pcsg_pods_carry_grove_variables_in_grove_order() -> None:
    pcs = _pcs(f"{SAMPLES}/pcsg-env-vars.yaml")
    pods = {p["metadata"]["name"]: p for p in _pods(pcs)}
    worker = pods["env-demo-pcsg-0-model-instance-1-worker-2"]
    env = worker["spec"]["containers"][0]["env"]
    assert [v["name"] for v in env] == [
        "GROVE_PCS_NAME",
        "GROVE_PCS_INDEX",
        "GROVE_PCLQ_NAME",
        "GROVE_HEADLESS_SERVICE",
        "GROVE_PCLQ_POD_INDEX",
        "GROVE_PCSG_NAME",
        "GROVE_PCSG_TEMPLATE_NUM_PODS",
        "GROVE_PCSG_INDEX",
    ]
    assert expanded(worker, worker["spec"]["containers"][0]) == {
        "GROVE_PCS_NAME": "env-demo-pcsg",
        "GROVE_PCS_INDEX": "0",
        "GROVE_PCLQ_NAME": "env-demo-pcsg-0-model-instance-1-worker",
        "GROVE_HEADLESS_SERVICE": "env-demo-pcsg-0.default.svc.cluster.local",
        "GROVE_PCLQ_POD_INDEX": "2",
        "GROVE_PCSG_NAME": "env-demo-pcsg-0-model-instance",
        "GROVE_PCSG_TEMPLATE_NUM_PODS": "4",  # 1 leader + 3 workers
        "GROVE_PCSG_INDEX": "1",
    }
    assert worker["spec"]["hostname"] == "env-demo-pcsg-0-model-instance-1-worker-2"
    assert worker["spec"]["subdomain"] == "env-demo-pcsg-0"


def test_grove_sample_standalone_pods_have_no_scaling_group_variables() -> None:
    pcs = _pcs(f"{SAMPLES}/standalone-env-vars.yaml")
    for pod in _pods(pcs):
        names = [v["name"] for v in pod["spec"]["containers"][0]["env"]]
        assert names[:5] == [
            "GROVE_PCS_NAME",
            "GROVE_PCS_INDEX",
            "GROVE_PCLQ_NAME",
            "GROVE_HEADLESS_SERVICE",
            "GROVE_PCLQ_POD_INDEX",
        ]
        assert not any(n.startswith("GROVE_PCSG") for n in names)
        assert pod["spec"]["hostname"] == pod["metadata"]["name"]


def test_template_variables_follow_and_may_use_grove_ones_a_reserved_name_is_replaced() -> None:
    manifest = fixture(f"{SAMPLES}/pcsg-env-vars.yaml")
    manifest["metadata"]["uid"] = "pcs-uid"
    worker = manifest["spec"]["template"]["cliques"][1]["spec"]["podSpec"]
    worker["containers"][0]["env"] = [
        {"name": "GROVE_PCS_INDEX", "value": "spoofed"},
        {"name": "LEADER_ADDRESS", "value": DYNAMO_LEADER},
    ]
    worker["initContainers"] = [{"name": "wait", "image": "busybox"}]
    pcs = from_object(manifest, PodCliqueSet)
    pods = {p["metadata"]["name"]: p for p in _pods(pcs)}
    pod = pods["env-demo-pcsg-0-model-instance-0-worker-1"]
    env = pod["spec"]["containers"][0]["env"]
    assert [v["name"] for v in env].count("GROVE_PCS_INDEX") == 1
    assert env[-1]["name"] == "LEADER_ADDRESS"
    resolved = expanded(pod, pod["spec"]["containers"][0])
    assert resolved["GROVE_PCS_INDEX"] == "0"
    leader = pods["env-demo-pcsg-0-model-instance-0-leader-0"]
    assert resolved["LEADER_ADDRESS"] == fqdn(leader)
    # Init containers get them too.
    assert [v["name"] for v in pod["spec"]["initContainers"][0]["env"]][:1] == ["GROVE_PCS_NAME"]


@settings(max_examples=30, deadline=None)
@given(
    replicas=st.integers(1, 3),
    group_replicas=st.integers(1, 4),
    min_available=st.integers(1, 4),
    workers=st.integers(1, 3),
)
def test_every_worker_reaches_its_own_replicas_leader(
    replicas: int, group_replicas: int, min_available: int, workers: int
) -> None:
    """A Dynamo-shaped leader/worker scaling group, in base and scaled gangs alike: the
    leader address each worker builds from its own variables names the leader pod of its
    own PodCliqueSet replica and scaling-group replica, through that replica's Service."""
    manifest = fixture(f"{SAMPLES}/pcsg-env-vars.yaml")
    manifest["metadata"]["uid"] = "pcs-uid"
    template = manifest["spec"]["template"]
    manifest["spec"]["replicas"] = replicas
    template["cliques"][1]["spec"]["replicas"] = workers
    template["cliques"][1]["spec"]["podSpec"]["containers"][0]["env"] = [
        {"name": "LEADER_ADDRESS", "value": DYNAMO_LEADER}
    ]
    group = template["podCliqueScalingGroups"][0]
    group["replicas"], group["minAvailable"] = group_replicas, min(min_available, group_replicas)
    pcs = from_object(manifest, PodCliqueSet)
    pods = _pods(pcs)
    by_fqdn = {fqdn(p): p for p in pods}
    services = {headless_service(pcs, r)["metadata"]["name"] for r in range(replicas)}
    for pod in pods:
        assert pod["spec"]["subdomain"] in services
        if pod["metadata"]["labels"][labels.PODCLIQUE].endswith("-worker"):
            address = expanded(pod, pod["spec"]["containers"][0])["LEADER_ADDRESS"]
            leader = by_fqdn[address]
            for same in (labels.PCS_REPLICA_INDEX, labels.SCALING_GROUP_REPLICA_INDEX):
                assert leader["metadata"]["labels"][same] == pod["metadata"]["labels"][same]


def test_headless_service_of_a_replica_is_grove_s() -> None:
    pcs = _pcs(f"{SAMPLES}/pcsg-env-vars.yaml")
    service = headless_service(pcs, 0)
    assert service["metadata"]["name"] == "env-demo-pcsg-0"
    assert service["metadata"]["labels"][labels.COMPONENT] == "pcs-headless-service"
    assert service["metadata"]["ownerReferences"][0]["uid"] == "pcs-uid"
    assert service["spec"] == {
        "clusterIP": "None",
        "selector": {
            labels.PART_OF: "env-demo-pcsg",
            labels.MANAGED_BY: "gangway",
            labels.PCS_REPLICA_INDEX: "0",
        },
        "publishNotReadyAddresses": True,  # Grove's default without headlessServiceConfig
    }
    pod = _pods(pcs)[0]
    assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()


def _live(manifest: dict[str, Any], **spec: Any) -> Service:
    live = {**manifest, "spec": {**manifest["spec"], **spec}}
    live["metadata"] = {**manifest["metadata"], "resourceVersion": "7", "uid": "svc-uid"}
    return from_object(live, Service)


def test_services_are_created_changed_back_and_deleted_with_their_replica() -> None:
    manifest = fixture(f"{SAMPLES}/pcsg-env-vars.yaml")
    manifest["metadata"]["uid"] = "pcs-uid"
    manifest["spec"]["replicas"] = 2
    manifest["spec"]["template"]["headlessServiceConfig"] = {"publishNotReadyAddresses": False}
    pcs = from_object(manifest, PodCliqueSet)
    writes, stale = services_to_write(pcs, plan_podgangs(pcs), {})
    assert [(w.name, w.live) for w in writes] == [
        ("env-demo-pcsg-0", None),
        ("env-demo-pcsg-1", None),
    ]
    assert writes[0].desired["spec"]["publishNotReadyAddresses"] is False
    assert stale == ()

    first = _live(headless_service(pcs, 0))
    drifted = _live(headless_service(pcs, 1), publishNotReadyAddresses=True)
    gone = _live(headless_service(pcs, 1))
    observed = {"env-demo-pcsg-0": first, "env-demo-pcsg-1": drifted}
    writes, stale = services_to_write(pcs, plan_podgangs(pcs), observed)
    assert [(w.name, w.live) for w in writes] == [("env-demo-pcsg-1", drifted)]

    manifest["spec"]["replicas"] = 1
    smaller = from_object(manifest, PodCliqueSet)
    writes, stale = services_to_write(
        smaller, plan_podgangs(smaller), {"env-demo-pcsg-0": first, "env-demo-pcsg-1": gone}
    )
    assert writes == ()
    assert stale == (gone,)
    # Focused on one gang: only its Service, nothing deleted.
    writes, stale = services_to_write(pcs, plan_podgangs(pcs), {}, focus={"env-demo-pcsg-1"})
    assert [w.name for w in writes] == ["env-demo-pcsg-1"]
    assert stale == ()


def test_a_namesake_service_gangway_did_not_make_is_left_alone() -> None:
    pcs = _pcs(f"{SAMPLES}/pcsg-env-vars.yaml")
    other = headless_service(pcs, 0)
    other["metadata"]["ownerReferences"][0]["uid"] = "another-pcs"
    writes, stale = services_to_write(
        pcs, plan_podgangs(pcs), {"env-demo-pcsg-0": _live(other, selector={})}
    )
    assert writes == ()
    assert stale == ()
