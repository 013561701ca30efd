"""The podgang service against the real API server and NATS, with the stub backend's process
answering prepare-pods: GREP-375's flow from a PodCliqueSet to pods the scheduler may see."""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator
from functools import partial
from typing import Any

import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient
from prometheus_client import REGISTRY

from gangway_contracts import labels
from gangway_contracts.subjects import Kind, ObjectKey, Subjects
from gangway_podgang import startup
from gangway_podgang.startup import INIT_CONTAINER
from tests.support.backends import running_backend
from tests.support.kube import ensure_priority_class, kube_of, server_side_apply
from tests.support.podgang import (
    Podgang,
    condition,
    gated,
    live_when,
    objects,
    podgangs,
    pods,
    running_podgang,
    services,
    workload,
)
from tests.support.store import dead_letters, eventually, journal
from tests.support.stub_backend import NAME, STUB_CONFIG, StubBackend

SAMPLE = "grove/samples/user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml"
PODCLIQUES_PATH = "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliques"
SCALING_GROUPS_PATH = "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliquescalinggroups"


@pytest.fixture
async def gangway(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> AsyncIterator[Podgang]:
    async with (
        running_backend(api, nc, subjects, namespace, StubBackend(), STUB_CONFIG),
        running_podgang(api, nc, subjects, namespace, STUB_CONFIG) as service,
    ):
        yield service


async def test_a_podcliqueset_becomes_an_initialized_gang_of_prepared_ungated_pods(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    pcs = workload(namespace, "trainer")
    await server_side_apply(api, pcs, namespace)

    async def converged() -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        gangs = await podgangs(api, namespace)
        return gangs.get("trainer-0", {}), await pods(api, namespace)

    gang, found = await eventually(
        converged, lambda r: bool(r[1]) and len(r[1]) == 4 and not any(map(gated, r[1].values()))
    )
    assert sorted(found) == [f"trainer-0-worker-{i}" for i in range(4)]
    assert condition(gang, labels.INITIALIZED)["status"] == "True"
    refs = gang["spec"]["podgroups"][0]["podReferences"]
    assert [r["name"] for r in refs] == sorted(found)
    for pod in found.values():
        assert pod["spec"]["schedulerName"] == NAME  # prepared by the backend
        owner = pod["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"]) == ("PodGang", gang["metadata"]["uid"])
    # Every request counted by what it asked and what it got.
    created = {"method": "POST", "resource": "pods", "code": "201"}
    assert (REGISTRY.get_sample_value("gangway_api_requests_total", created) or 0) >= 4
    status = {"method": "PATCH", "resource": "podgangs.scheduler.grove.io/status"}
    assert (REGISTRY.get_sample_value("gangway_api_request_seconds_count", status) or 0) >= 1


async def test_each_step_is_journaled_and_told_on_the_podcliqueset(
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    namespace: str,
    gangway: Podgang,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="gangway_podgang")
    await server_side_apply(api, workload(namespace, "trainer"), namespace)
    steps = ["PodGangPlanned", "PodGangCreated", "PodsCreated", "PodGangInitialized", "GatesLifted"]
    js = nc.jetstream()
    found = await eventually(
        partial(journal, js, subjects, namespace, "trainer"), lambda j: "GatesLifted" in j
    )
    ours = [step for step in found if step in steps]
    assert ours == steps
    assert "BackendSynced" in found  # the backend's own entry, in the same timeline

    async def reasons() -> set[str]:
        events = await objects(api, namespace, "/apis/events.k8s.io/v1/namespaces/{ns}/events")
        return {e["reason"] for e in events.values() if e["regarding"]["name"] == "trainer"}

    # Each Event is written after its journal entry: the last may trail GatesLifted a moment.
    await eventually(reasons, lambda found: set(steps[1:]) <= found)

    # The status write is the reconcile's last: it may trail the Events a moment too.
    trainer = workload(namespace, "trainer")
    pcs = await live_when(api, trainer, namespace, "PodGangsReady", status="True")
    status = pcs["status"]
    assert condition(pcs, "FeaturesSupported")["status"] == "True"
    assert condition(pcs, "BackendAvailable")["status"] == "True"
    assert status["observedGeneration"] == pcs["metadata"]["generation"]
    assert status["podGangStatuses"] == [{"name": "trainer-0", "phase": "Pending"}]
    # The reconciles that wrote, one INFO line each, with the workload's trace.
    told = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert any(
        re.fullmatch(rf"{namespace}/trainer: .* after \d+ write rounds \(trace [0-9a-f]{{32}}\)", m)
        for m in told
    ), told


async def test_a_large_workload_is_told_in_a_handful_of_events(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    """One Event per kind of step a write round took, counting the gangs and pods it did:
    40 gangs of 4 pods are told in a few Events, not 160 (the journal keeps each gang's)."""
    pcs = workload(namespace, "fleet")
    pcs["spec"]["replicas"] = 40
    await server_side_apply(api, pcs, namespace)

    async def told() -> list[dict[str, Any]]:
        found = await objects(api, namespace, "/apis/events.k8s.io/v1/namespaces/{ns}/events")
        return [e for e in found.values() if e["regarding"]["name"] == "fleet"]

    def counted(found: list[dict[str, Any]], reason: str) -> int:
        notes = [e["note"] for e in found if e["reason"] == reason]
        return sum(int(m[1]) for n in notes if (m := re.search(r"on (\d+) pods", n)))

    before = collisions()
    found = await eventually(told, lambda found: counted(found, "GatesLifted") == 160)
    assert len(found) <= 10, [(e["reason"], e["note"]) for e in found]
    # #22: podgang's and the backend's status writes never collide, so nothing is read again.
    assert collisions() == before


def collisions() -> dict[str, float]:
    """Status writes refused (409, a failed JSON-patch test) and status reads, so far."""
    asked = {
        "podcliquesets 409": ("PATCH", "podcliquesets.grove.io/status", "409"),
        "podcliquesets read": ("GET", "podcliquesets.grove.io/status", "200"),
        "podgangs 409": ("PATCH", "podgangs.scheduler.grove.io/status", "409"),
        "podgangs 422": ("PATCH", "podgangs.scheduler.grove.io/status", "422"),
        "podgangs read": ("GET", "podgangs.scheduler.grove.io/status", "200"),
    }
    return {
        name: REGISTRY.get_sample_value(
            "gangway_api_requests_total", {"method": method, "resource": resource, "code": code}
        )
        or 0.0
        for name, (method, resource, code) in asked.items()
    }


async def test_scaled_gangs_wait_until_their_base_gang_is_scheduled(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    pcs = workload(namespace, "llama", "podcliquesets/disaggregated-inference.yaml")
    pcs["spec"]["replicas"] = 1
    # Its pods carry the PodCliqueSet's priority class: the API server refuses them without it.
    await ensure_priority_class(api, pcs["spec"]["template"]["priorityClassName"], 1000)
    await server_side_apply(api, pcs, namespace)
    base, scaled = "llama-0", ["llama-0-prefill-0", "llama-0-prefill-1", "llama-0-decode-0"]

    def by_gang(found: dict[str, dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
        grouped: dict[str, list[dict[str, Any]]] = {}
        for pod in found.values():
            grouped.setdefault(pod["metadata"]["labels"][labels.PODGANG], []).append(pod)
        return grouped

    def base_lifted(found: dict[str, dict[str, Any]]) -> bool:
        grouped = by_gang(found)
        return base in grouped and not any(map(gated, grouped[base]))

    found = await eventually(partial(pods, api, namespace), base_lifted)
    gangs = await podgangs(api, namespace)
    assert sorted(gangs) == sorted([base, *scaled])
    for name in scaled:  # initialized and synced, yet held back
        assert condition(gangs[name], labels.INITIALIZED)["status"] == "True"
        assert all(map(gated, by_gang(found)[name]))
    pcs_live = await live_when(api, pcs, namespace, "PodGangsReady", reason="WaitingForBaseGang")
    assert condition(pcs_live, "PodGangsReady")["status"] == "False"
    # No scheduler runs here: their release once kube-scheduler binds the base gang is
    # tests/e2e/test_placement.py's.


async def trainer_running(api: ApiClient, namespace: str) -> dict[str, Any]:
    """The one-gang trainer applied, and its four pods there; its manifest."""
    pcs = workload(namespace, "trainer")
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), lambda f: len(f) == 4)
    return pcs


async def test_scaling_replicas_up_and_down_adds_and_removes_whole_gangs(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    pcs = await trainer_running(api, namespace)

    pcs["spec"]["replicas"] = 2
    await server_side_apply(api, pcs, namespace)
    found = await eventually(
        partial(pods, api, namespace),
        lambda f: len(f) == 8 and not any(map(gated, f.values())),
    )
    assert sorted(await podgangs(api, namespace)) == ["trainer-0", "trainer-1"]
    assert {p["metadata"]["labels"][labels.PODGANG] for p in found.values()} == {
        "trainer-0",
        "trainer-1",
    }

    assert sorted(await services(api, namespace)) == ["trainer-0", "trainer-1"]

    pcs["spec"]["replicas"] = 1
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(podgangs, api, namespace), lambda g: sorted(g) == ["trainer-0"])
    # The garbage collector takes the removed gang's pods with it.
    found = await eventually(partial(pods, api, namespace), lambda f: len(f) == 4)
    assert all(name.startswith("trainer-0-") for name in found)
    await eventually(partial(services, api, namespace), lambda s: sorted(s) == ["trainer-0"])


async def test_pods_are_found_by_name_through_their_replicas_headless_service(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    """Grove's discovery: hostname, subdomain and variables on every pod, the replica's
    headless Service selecting them; the Service made again when deleted and changed back
    when its spec drifts."""
    pcs = await trainer_running(api, namespace)
    found = await pods(api, namespace)
    service = (await services(api, namespace))["trainer-0"]
    assert service["spec"]["clusterIP"] == "None"
    assert service["spec"]["publishNotReadyAddresses"] is True
    for name, pod in found.items():
        assert (pod["spec"]["hostname"], pod["spec"]["subdomain"]) == (name, "trainer-0")
        assert service["spec"]["selector"].items() <= pod["metadata"]["labels"].items()
        env = {v["name"]: v.get("value") for v in pod["spec"]["containers"][0]["env"]}
        assert env["GROVE_HEADLESS_SERVICE"] == f"trainer-0.{namespace}.svc.cluster.local"

    path = f"/api/v1/namespaces/{namespace}/services/trainer-0"
    await kube_of(api).request("DELETE", path)
    again = await eventually(
        partial(services, api, namespace),
        lambda s: (
            "trainer-0" in s and s["trainer-0"]["metadata"]["uid"] != service["metadata"]["uid"]
        ),
    )
    drift = {"spec": {"publishNotReadyAddresses": False}}
    await kube_of(api).request(
        "PATCH", path, body=drift, content_type="application/merge-patch+json"
    )
    await eventually(
        partial(services, api, namespace),
        lambda s: (
            s["trainer-0"]["spec"].get("publishNotReadyAddresses") is True
            and s["trainer-0"]["metadata"]["uid"] == again["trainer-0"]["metadata"]["uid"]
        ),
    )

    # The PodCliqueSet asks otherwise: the Service follows.
    pcs["spec"]["template"]["headlessServiceConfig"] = {"publishNotReadyAddresses": False}
    await server_side_apply(api, pcs, namespace)
    await eventually(
        partial(services, api, namespace),
        lambda s: not s["trainer-0"]["spec"].get("publishNotReadyAddresses"),
    )


async def test_deleting_the_podcliqueset_deletes_its_gangs_and_pods(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    await trainer_running(api, namespace)
    await kube_of(api).request(
        "DELETE", f"/apis/grove.io/v1alpha1/namespaces/{namespace}/podcliquesets/trainer"
    )
    await eventually(partial(podgangs, api, namespace), lambda g: not g)
    await eventually(partial(pods, api, namespace), lambda f: not f)


async def test_a_malformed_message_goes_to_dead_letter_and_the_service_goes_on(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, gangway: Podgang
) -> None:
    js = nc.jetstream()
    junk = subjects.object(ObjectKey(Kind.POD, "", namespace, "junk"))
    await js.publish(junk, b"{not json")
    await server_side_apply(api, workload(namespace, "trainer"), namespace)
    await eventually(partial(pods, api, namespace), lambda f: len(f) == 4)
    letters = dict(await eventually(partial(dead_letters, js, subjects), bool))
    assert "malformed record" in letters[junk]


async def test_a_service_gangway_did_not_make_is_left_alone_and_said(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    theirs = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "trainer-0", "namespace": namespace},
        "spec": {"clusterIP": "None", "selector": {"app": "theirs"}},
    }
    await kube_of(api).request("POST", f"/api/v1/namespaces/{namespace}/services", body=theirs)
    await trainer_running(api, namespace)

    async def warnings() -> set[str]:
        events = await objects(api, namespace, "/apis/events.k8s.io/v1/namespaces/{ns}/events")
        return {e["reason"] for e in events.values() if e["type"] == "Warning"}

    await eventually(warnings, lambda found: "ServiceNameTaken" in found)
    kept = (await services(api, namespace))["trainer-0"]
    assert kept["spec"]["selector"] == {"app": "theirs"}  # never touched


async def test_every_clique_instance_and_scaling_group_has_grove_s_object_and_status(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    """Grove's discovery sample: a scaling group of a leader and three workers, twice. No
    scheduler runs here, so every PodClique counts its pods, none scheduled, and says its
    minimum is breached; the group says none of its replicas is available."""
    pcs = workload(namespace, "pcsg", path=SAMPLE)
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), lambda f: len(f) == 8)
    group = "pcsg-0-model-instance"

    def counted(found: dict[str, dict[str, Any]]) -> bool:
        """Every pod counted; the base gang's ungated, the scaled gang's still gated (it
        waits for the base gang to be scheduled)."""
        return len(found) == 4 and all(
            (c.get("status") or {}).get("replicas") == c["spec"]["replicas"]
            and (c.get("status") or {}).get("scheduleGatedReplicas", 0)
            == (0 if name.startswith(f"{group}-0-") else c["spec"]["replicas"])
            for name, c in found.items()
        )

    cliques = await eventually(partial(objects, api, namespace, PODCLIQUES_PATH), counted)
    assert sorted(cliques) == [f"{group}-{g}-{c}" for g in (0, 1) for c in ("leader", "worker")]
    groups = await eventually(partial(objects, api, namespace, SCALING_GROUPS_PATH), bool)
    scaling = groups[group]
    assert (scaling["spec"]["replicas"], scaling["spec"]["cliqueNames"]) == (
        2,
        ["leader", "worker"],
    )
    for name, clique in cliques.items():
        owner = clique["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["uid"]) == (
            "PodCliqueScalingGroup",
            scaling["metadata"]["uid"],
        )
        labels_ = clique["metadata"]["labels"]
        assert labels_[labels.SCALING_GROUP] == group
        # Group replica 0 is in the base gang (minAvailable 1), replica 1 a scaled gang.
        gang = "pcsg-0" if name.startswith(f"{group}-0-") else f"{group}-0"
        assert labels_[labels.PODGANG] == gang
        status = clique["status"]
        assert (status["scheduledReplicas"], status["readyReplicas"]) == (0, 0)
        assert status["hpaPodSelector"].endswith(f"{labels.PODCLIQUE}={name}")
        assert condition(clique, "PodCliqueScheduled")["status"] == "False"
        breached = condition(clique, "MinAvailableBreached")
        assert (breached["status"], breached["reason"]) == (
            "True",
            "ScheduledReplicasBelowMinAvailable",
        )
    status = await eventually(
        lambda: objects(api, namespace, SCALING_GROUPS_PATH),
        lambda g: "status" in g[group],
    )
    assert status[group]["status"]["availableReplicas"] == 0
    assert condition(status[group], "MinAvailableBreached")["status"] == "True"

    # Deleted by someone, long after it was made: made again.
    gone = f"{group}-0-leader"
    await kube_of(api).request("DELETE", f"{PODCLIQUES_PATH.format(ns=namespace)}/{gone}")
    await eventually(
        partial(objects, api, namespace, PODCLIQUES_PATH),
        lambda found: (
            gone in found and found[gone]["metadata"]["uid"] != cliques[gone]["metadata"]["uid"]
        ),
    )

    # Scaled in: the second group replica's PodCliques go with it.
    pcs["spec"]["template"]["podCliqueScalingGroups"][0]["replicas"] = 1
    await server_side_apply(api, pcs, namespace)
    await eventually(
        partial(objects, api, namespace, PODCLIQUES_PATH),
        lambda found: sorted(found) == [f"{group}-0-leader", f"{group}-0-worker"],
    )

    # Scaled to zero: none is left, the group neither.
    pcs["spec"]["replicas"] = 0
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(objects, api, namespace, PODCLIQUES_PATH), lambda found: not found)
    await eventually(partial(objects, api, namespace, SCALING_GROUPS_PATH), lambda g: not g)


async def test_cliques_that_start_after_others_wait_on_a_service_of_their_ready_pods(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    """Grove's discovery sample in order: each worker waits, in an init container of
    Gangway's image, until its own group replica's leader is ready, asking the DNS for a
    Service that lists that leader's ready pods only; the Service is made again if
    deleted, and goes when the order does."""
    pcs = workload(namespace, "ordered", path=SAMPLE)
    pcs["spec"]["template"]["cliqueStartupType"] = "CliqueStartupTypeInOrder"
    await server_side_apply(api, pcs, namespace)
    found = await eventually(partial(pods, api, namespace), lambda f: len(f) == 8)
    group = "ordered-0-model-instance"
    for name, pod in found.items():
        waiting = [c for c in pod["spec"].get("initContainers", []) if c["name"] == INIT_CONTAINER]
        if "-leader-" in name:
            assert waiting == [], name
            continue
        (init,) = waiting
        replica = name.removeprefix(f"{group}-").split("-", 1)[0]
        leader = f"{group}-{replica}-leader"
        assert init["args"] == [f"{leader}.{namespace}.svc.cluster.local=1"]
        assert init["image"] == startup.IMAGE
    ready = [f"{group}-{g}-leader" for g in (0, 1)]
    made = await eventually(
        partial(services, api, namespace), lambda s: sorted(s) == sorted(["ordered-0", *ready])
    )
    for name in ready:
        spec = made[name]["spec"]
        assert (spec["clusterIP"], spec.get("publishNotReadyAddresses")) == ("None", None)
        assert spec["selector"][labels.PODCLIQUE] == name

    path = f"/api/v1/namespaces/{namespace}/services/{ready[0]}"
    await kube_of(api).request("DELETE", path)
    await eventually(
        partial(services, api, namespace),
        lambda s: (
            ready[0] in s and s[ready[0]]["metadata"]["uid"] != made[ready[0]]["metadata"]["uid"]
        ),
    )
    # Any order again: nothing waits, so the Services of ready pods go.
    pcs["spec"]["template"]["cliqueStartupType"] = "CliqueStartupTypeAnyOrder"
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(services, api, namespace), lambda s: sorted(s) == ["ordered-0"])


async def scale(api: ApiClient, path: str, replicas: int) -> None:
    """What an HPA or ``kubectl scale`` writes: the object's /scale."""
    body = {"spec": {"replicas": replicas}}
    await kube_of(api).request(
        "PATCH", f"{path}/scale", body=body, content_type="application/merge-patch+json"
    )


async def test_what_a_podclique_s_or_scaling_group_s_scale_says_is_what_is_built(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    """/scale on one clique instance adds pods to its gang; on the scaling group adds and
    takes away whole gangs; the template's own change wins over an older scale."""
    pcs = workload(namespace, "scaled", path=SAMPLE)
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), lambda f: len(f) == 8)
    group = "scaled-0-model-instance"
    worker = f"{group}-0-worker"
    cliques = PODCLIQUES_PATH.format(ns=namespace)
    await eventually(partial(objects, api, namespace, PODCLIQUES_PATH), lambda c: worker in c)

    await scale(api, f"{cliques}/{worker}", 5)
    found = await eventually(partial(pods, api, namespace), lambda f: len(f) == 10)
    assert sorted(n for n in found if n.startswith(f"{worker}-")) == [
        f"{worker}-{i}" for i in range(5)
    ]

    async def references() -> list[str]:
        base = (await podgangs(api, namespace)).get("scaled-0", {})
        groups = base.get("spec", {}).get("podgroups", [])
        return [r["name"] for g in groups if g["name"] == worker for r in g["podReferences"]]

    await eventually(references, lambda refs: len(refs) == 5)

    groups_path = SCALING_GROUPS_PATH.format(ns=namespace)
    await scale(api, f"{groups_path}/{group}", 3)
    await eventually(
        partial(podgangs, api, namespace),
        lambda g: sorted(g) == ["scaled-0", f"{group}-0", f"{group}-1"],
    )
    await eventually(partial(pods, api, namespace), lambda f: len(f) == 14)
    await scale(api, f"{groups_path}/{group}", 1)
    await eventually(partial(podgangs, api, namespace), lambda g: sorted(g) == ["scaled-0"])
    await eventually(partial(pods, api, namespace), lambda f: len(f) == 6)

    # The template's replicas change: they win over the older scale, and say so.
    pcs["spec"]["template"]["cliques"][1]["spec"]["replicas"] = 2
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(pods, api, namespace), lambda f: len(f) == 3)
    # Set back once the gangs' writes are done (the PodCliques never hold a gang up).
    found = await eventually(
        partial(objects, api, namespace, PODCLIQUES_PATH),
        lambda c: c[worker]["spec"]["replicas"] == 2,
    )
    assert found[worker]["metadata"]["annotations"]["gangway.dev/template-replicas"] == "2"


async def test_grove_s_autoscaling_becomes_an_hpa_per_clique_and_group_of_each_replica(
    api: ApiClient, namespace: str, gangway: Podgang
) -> None:
    pcs = workload(namespace, "auto", path=SAMPLE)
    pcs["spec"]["template"]["podCliqueScalingGroups"][0]["scaleConfig"] = {"maxReplicas": 4}
    await server_side_apply(api, pcs, namespace)
    hpas = "/apis/autoscaling/v2/namespaces/{ns}/horizontalpodautoscalers"
    made = await eventually(partial(objects, api, namespace, hpas), bool)
    (hpa,) = made.values()
    assert hpa["metadata"]["name"] == "auto-0-model-instance"
    assert hpa["spec"]["scaleTargetRef"] == {
        "apiVersion": "grove.io/v1alpha1",
        "kind": "PodCliqueScalingGroup",
        "name": "auto-0-model-instance",
    }
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 4)
    # Deleted: made again. No longer asked for: deleted.
    await kube_of(api).request("DELETE", f"{hpas.format(ns=namespace)}/auto-0-model-instance")
    await eventually(
        partial(objects, api, namespace, hpas),
        lambda h: [x["metadata"]["uid"] for x in h.values()] not in ([], [hpa["metadata"]["uid"]]),
    )
    del pcs["spec"]["template"]["podCliqueScalingGroups"][0]["scaleConfig"]
    await server_side_apply(api, pcs, namespace)
    await eventually(partial(objects, api, namespace, hpas), lambda h: not h)
