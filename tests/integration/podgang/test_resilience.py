"""The podgang service when things go wrong: the backend away, the service killed between
two writes, every event delivered again."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator
from functools import partial

import msgspec
import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_contracts import labels
from gangway_contracts.codec import to_json
from gangway_contracts.records import ObjectRecord
from gangway_contracts.resources import PODCLIQUESETS, PODGANGS
from gangway_contracts.subjects import Kind, ObjectKey, Subjects
from gangway_podgang.readmodel import ReadModel
from gangway_runtime import tasks
from gangway_runtime.settings import StreamSettings
from gangway_runtime.status import PODCLIQUESETS as PODCLIQUESETS_API
from gangway_runtime.streams import ensure_streams
from tests.integration.watcher.conftest import only_this_test
from tests.support.backends import backend_synced, live, running_backend
from tests.support.kube import kube_of, merge_patch, server_side_apply
from tests.support.podgang import (
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
from tests.support.store import dead_letters, eventually, running_watcher
from tests.support.stub_backend import NAME, STUB_CONFIG, StubBackend

DISCOVERY_SAMPLE = (
    "grove/samples/user-guide/03_environment-variables-for-pod-discovery/pcsg-env-vars.yaml"
)
PODCLIQUES = "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliques"
SCALING_GROUPS = "/apis/grove.io/v1alpha1/namespaces/{ns}/podcliquescalinggroups"


async def converged(api: ApiClient, namespace: str) -> None:
    """trainer: one Initialized gang, its four pods, none gated, its replica's Service."""
    found = await eventually(
        partial(pods, api, namespace), lambda f: len(f) == 4 and not any(map(gated, f.values()))
    )
    assert sorted(found) == [f"trainer-0-worker-{i}" for i in range(4)]
    gangs = await podgangs(api, namespace)
    assert sorted(gangs) == ["trainer-0"]
    assert condition(gangs["trainer-0"], labels.INITIALIZED)["status"] == "True"
    assert sorted(await services(api, namespace)) == ["trainer-0"]


async def test_without_its_backend_no_pod_is_created_and_the_podcliqueset_says_why(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    pcs = workload(namespace, "trainer")
    resources = [only_this_test(r, namespace) for r in (PODCLIQUESETS, PODGANGS)]
    async with (
        running_watcher(api, nc.jetstream(), subjects, resources),
        running_podgang(api, nc, subjects, namespace, STUB_CONFIG),
    ):
        await server_side_apply(api, pcs, namespace)
        found = await live_when(api, pcs, namespace, "BackendAvailable", status="False")
        available = condition(found, "BackendAvailable")
        assert available["reason"] == "BackendUnavailable"
        assert NAME in available["message"]
        assert "trainer-0" in await podgangs(api, namespace)  # gangs come first, pods wait
        assert await pods(api, namespace) == {}

        async with running_backend(api, nc, subjects, namespace, StubBackend(), STUB_CONFIG):
            await converged(api, namespace)
            found = await live_when(api, pcs, namespace, "BackendAvailable", status="True")


@pytest.fixture
async def backend(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> AsyncIterator[None]:
    async with running_backend(api, nc, subjects, namespace, StubBackend(), STUB_CONFIG):
        yield


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize(
    "crash_after",
    [
        "podgang:create",
        "service:create",
        "podclique:create",
        "podclique:status",
        "podgang:status",
        "pod:create",
        "podgang:update",
        "pod:lift-gate",
    ],
)
async def test_killed_after_any_write_the_restarted_service_ends_where_it_would_have(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, crash_after: str
) -> None:
    lifts: list[asyncio.Task[bool]] = []

    async def gang_was_ready() -> bool:
        gang = (await podgangs(api, namespace))["trainer-0"]
        initialized = condition(gang, labels.INITIALIZED)
        synced = backend_synced(gang)
        return (
            initialized.get("status") == "True"
            and initialized.get("observedGeneration") == gang["metadata"]["generation"]
            and synced.get("status") == "True"
        )

    def on_write(write: str) -> None:
        if write == "pod:lift-gate":  # checked as the gate comes off
            lifts.append(asyncio.create_task(gang_was_ready()))

    async with running_podgang(api, nc, subjects, namespace, STUB_CONFIG) as service:
        service.crash_after, service.on_write = crash_after, on_write
        await server_side_apply(api, workload(namespace, "trainer"), namespace)
        await eventually(lambda: asyncio.sleep(0, service.crashed), bool)
        await service.start()
        await converged(api, namespace)
    # Names are deterministic, so "no duplicate" means nothing deleted and made again; a
    # write in flight when the service died may have landed uncounted, hence "at most".
    assert service.writes.count("pod:create") <= 4
    assert service.writes.count("podgang:create") <= 1
    assert service.writes.count("service:create") <= 1
    assert service.writes.count("podclique:create") <= 1
    assert not [w for w in service.writes if w.endswith(":delete")]
    assert lifts
    assert all(await asyncio.gather(*lifts)), "a gate came off before its gang was ready"


@pytest.mark.usefixtures("backend")
@pytest.mark.parametrize("crash_after", ["podgang:create", "pod:create", "podclique:create"])
async def test_killed_mid_scale_the_restarted_service_makes_each_new_gang_once(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str, crash_after: str
) -> None:
    """A scaling group scaled through /scale (as its HPA does) from 2 to 4 replicas: killed
    after the first write of the new gangs, the restarted service makes the rest, and
    nothing twice."""
    pcs = workload(namespace, "scaled", path=DISCOVERY_SAMPLE)
    pcs["spec"]["template"]["podCliqueScalingGroups"][0]["scaleConfig"] = {"maxReplicas": 4}
    group = "scaled-0-model-instance"
    async with running_podgang(api, nc, subjects, namespace, STUB_CONFIG) as service:
        await server_side_apply(api, pcs, namespace)
        await eventually(partial(pods, api, namespace), lambda f: len(f) == 8)
        # Every PodClique there with its status: its create was counted before that (statuses
        # are written a reconcile after the creates).
        await eventually(
            partial(objects, api, namespace, PODCLIQUES),
            lambda c: len(c) == 4 and all("status" in x for x in c.values()),
        )
        made = {w: service.writes.count(w) for w in set(service.writes)}
        service.crash_after = crash_after
        path = SCALING_GROUPS.format(ns=namespace) + f"/{group}/scale"
        body = {"spec": {"replicas": 4}}
        await merge_patch(api, path, body)
        await eventually(lambda: asyncio.sleep(0, service.crashed), bool)
        await service.start()
        await eventually(
            partial(podgangs, api, namespace),
            lambda g: sorted(g) == ["scaled-0", *(f"{group}-{i}" for i in range(3))],
        )
        await eventually(partial(pods, api, namespace), lambda f: len(f) == 16)
        await eventually(partial(objects, api, namespace, PODCLIQUES), lambda c: len(c) == 8)
    new = {w: service.writes.count(w) - made.get(w, 0) for w in set(service.writes)}
    # Two new gangs of 4 pods and 2 PodCliques each; a write in flight when the service
    # died may have landed uncounted, hence "at most".
    assert new.get("podgang:create", 0) <= 2
    assert new.get("pod:create", 0) <= 8
    assert new.get("podclique:create", 0) <= 4
    assert not [w for w in service.writes if w.endswith(":delete")]


@pytest.mark.usefixtures("backend")
async def test_every_event_delivered_again_changes_nothing(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    async with running_podgang(api, nc, subjects, namespace, STUB_CONFIG) as service:
        await server_side_apply(api, workload(namespace, "trainer"), namespace)
        await converged(api, namespace)
        await asyncio.sleep(1)  # the last writes' own events come back
        before = list(service.writes)

        # A new durable consumer starts from the first message: every event, once more.
        await service.stop()
        js = nc.jetstream()
        await js.delete_consumer(subjects.objects_stream, subjects.service_name("podgang"))
        await service.start()

        async def drained() -> bool:
            info = await js.consumer_info(subjects.objects_stream, subjects.service_name("podgang"))
            return not info.num_pending and not info.num_ack_pending

        await eventually(drained, bool)
        assert service.writes == before
        await converged(api, namespace)


async def test_ready_when_the_stream_ends_with_an_object_it_does_not_follow(
    nc: NatsClient, subjects: Subjects
) -> None:
    """The read model follows PodCliqueSets, PodGangs and pods; the stream's last record may
    be a backend's Workload. It is loaded once it holds what the stream held for its own
    subjects, not once it has seen the stream's last sequence (it never would)."""
    js = nc.jetstream()
    await ensure_streams(js, subjects, StreamSettings(storage="memory"))
    workload_key = ObjectKey("workloads.scheduling.k8s.io", "default-scheduler", "ns", "w")
    record = ObjectRecord(
        kind="Workload",
        namespace="ns",
        name="w",
        uid="u",
        resource_version="1",
        observed_at="2026-01-01T00:00:00Z",
        object=msgspec.Raw(b"{}"),
    )
    await js.publish(subjects.object(workload_key), to_json(record))
    model = ReadModel(js, subjects)
    following = asyncio.create_task(model.follow())
    try:
        assert await model.wait_until(lambda: model.loaded, 10)
    finally:
        await tasks.stop(following)


@pytest.mark.usefixtures("backend")
async def test_records_that_do_not_decode_are_dead_lettered_and_podgang_goes_on(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """On PodCliqueSet subjects: an object nested too deep to decode (it made msgspec raise
    RecursionError, which ended podgang at every start), objects of the wrong shape (labels,
    spec: the second was skipped with a warning, not dead-lettered), and bytes that are not
    JSON. Each is dead-lettered with why; a workload submitted after them
    converges, and so it does after a restart, which replays them."""
    js = nc.jetstream()
    envelope = {
        "kind": "PodCliqueSet",
        "namespace": namespace,
        "uid": "u",
        "resourceVersion": "1",
        "observedAt": "2026-11-24T00:00:00Z",
    }

    def record(name: str, obj: bytes) -> bytes:
        return msgspec.json.encode({**envelope, "name": name})[:-1] + b',"object":' + obj + b"}"

    poison = {
        "p-deep": record("p-deep", b"[" * 100_000 + b"]" * 100_000),
        "p-shape": record("p-shape", b'{"metadata":{"labels":3}}'),
        "p-spec": record("p-spec", b'{"metadata":{"name":"p-spec"},"spec":3}'),
        "p-bytes": b"\xff not json",
    }
    async with running_podgang(api, nc, subjects, namespace, STUB_CONFIG) as service:
        for name, data in poison.items():
            key = ObjectKey(Kind.PODCLIQUESET, "", namespace, name)
            await js.publish(subjects.object(key), data)
        await server_side_apply(api, workload(namespace, "trainer"), namespace)
        await converged(api, namespace)
        letters = await eventually(
            partial(dead_letters, js, subjects), lambda d: len(d) == len(poison), within=30
        )
        assert all("malformed record" in error for _, error in letters), letters
        await service.stop()
        await service.start()  # replays every record, the poison too
        await server_side_apply(api, workload(namespace, "second"), namespace)
        await eventually(partial(pods, api, namespace), lambda f: len(f) == 8)


@pytest.mark.usefixtures("backend")  # its watcher mirrors the PodCliqueSet
async def test_a_read_model_that_stops_following_ends_the_service(
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    namespace: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The read model and the worker end together: a model that died (here: a bug in filing a
    record) used to stop unseen, leaving the worker deciding on a stale view and /readyz
    still 200. Now the service ends with the model's error (and its process exits, said at
    ERROR, to be restarted)."""

    def broken(self: ReadModel, kind: str, record: ObjectRecord) -> None:
        raise RuntimeError("a bug in filing a record")

    async with running_podgang(api, nc, subjects, namespace, STUB_CONFIG) as service:
        monkeypatch.setattr(ReadModel, "apply", broken)
        await server_side_apply(api, workload(namespace, "trainer"), namespace)
        await eventually(lambda: asyncio.sleep(0, service.crashed), bool)
        with pytest.raises(RuntimeError, match="a bug in filing a record"):
            await service.stop()


@pytest.mark.usefixtures("backend")
async def test_a_podcliqueset_over_the_ceiling_gets_no_podgang_and_says_why(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """Admitted past the webhook (an older one, or one failing open), a PodCliqueSet asking
    for more than one may make is counted before it is planned: no PodGang, no pod, and
    PodGangsReady=False naming spec.replicas."""
    pcs = workload(namespace, "trainer")  # one replica of four pods
    pcs["spec"]["replicas"] = 3
    async with running_podgang(
        api, nc, subjects, namespace, STUB_CONFIG, max_pods_per_podcliqueset=8
    ):
        await server_side_apply(api, pcs, namespace)
        found = await live_when(api, pcs, namespace, "PodGangsReady", reason="OverLimit")
        ready = condition(found, "PodGangsReady")
        assert ready["status"] == "False"
        assert ready["message"].startswith("spec.replicas: 3 replicas make 12 pods, over the 8")
        assert await podgangs(api, namespace) == {}
        assert await pods(api, namespace) == {}


async def test_a_huge_podcliqueset_deleted_mid_creation_is_written_no_further(
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Deleted while its 3 000 PodGangs are being created: the writes stop as soon as the
    read model shows the deletion, instead of building the rest for the garbage collector."""
    caplog.set_level(logging.INFO, logger="gangway_podgang")
    pcs = workload(namespace, "trainer")
    pcs["spec"]["replicas"] = 3000
    async with (
        running_backend(api, nc, subjects, namespace, StubBackend(), STUB_CONFIG),
        running_podgang(api, nc, subjects, namespace, STUB_CONFIG) as service,
    ):
        await server_side_apply(api, pcs, namespace)
        await eventually(
            lambda: asyncio.sleep(0, service.writes.count("podgang:create")), lambda n: n >= 50
        )
        await kube_of(api).request("DELETE", PODCLIQUESETS_API.path(namespace, "trainer"))
        await eventually(lambda: asyncio.sleep(0, caplog.text), lambda log: "writes stopped" in log)
        made = service.writes.count("podgang:create")
    assert made < 3000


async def test_a_podcliqueset_only_the_bus_knows_is_built_once_then_left(
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    namespace: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A well-formed PodCliqueSet record forged onto the bus (only the watcher may publish
    objects; this is what a compromised or mistaken one would do): podgang built its
    PodGangs, the garbage collector took them away (their owner's uid does not exist), and
    podgang built them again, every ~30 s, for ever. Now the status write's 404, or its own
    writes not staying, make it ask the API server once; the uid is a phantom, and nothing
    more is made for it."""
    caplog.set_level(logging.WARNING, logger="gangway_podgang")
    ghost = workload(namespace, "ghost")
    uid = "00000000-0000-4000-8000-00000000dead"
    ghost["metadata"] |= {"uid": uid, "resourceVersion": "1", "generation": 1}
    record = {
        "kind": "PodCliqueSet",
        "namespace": namespace,
        "name": "ghost",
        "uid": uid,
        "resourceVersion": "1",
        "observedAt": "2026-11-25T00:00:00Z",
        "object": ghost,
    }
    async with (
        running_backend(api, nc, subjects, namespace, StubBackend(), STUB_CONFIG),
        running_podgang(api, nc, subjects, namespace, STUB_CONFIG) as service,
    ):
        key = ObjectKey(Kind.PODCLIQUESET, "", namespace, "ghost")
        await nc.jetstream().publish(subjects.object(key), msgspec.json.encode(record))
        await eventually(
            lambda: asyncio.sleep(0, caplog.text), lambda log: f"of uid {uid}" in log, within=90
        )
        await eventually(partial(podgangs, api, namespace), lambda found: not found, within=60)
        made = service.writes.count("podgang:create")
        await asyncio.sleep(5)  # the collected PodGang's deletion reaches podgang meanwhile
        assert await podgangs(api, namespace) == {}
        assert service.writes.count("podgang:create") == made
        # And podgang goes on with PodCliqueSets that exist.
        await server_side_apply(api, workload(namespace, "trainer"), namespace)
        await converged(api, namespace)
    assert caplog.text.count(f"of uid {uid}") == 1


@pytest.mark.usefixtures("backend")
async def test_pods_the_api_server_refuses_are_said_on_the_podcliqueset(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """Past admission (an older webhook, one failing open, a rule only the API server has):
    the pods' creates are refused as invalid. That was retried eight times and dead-lettered
    a minute later with nothing on the PodCliqueSet; now PodGangsReady=False says why, at
    once, and a fixed PodCliqueSet converges."""
    broken = workload(namespace, "trainer")
    del broken["spec"]["template"]["cliques"][0]["spec"]["podSpec"]["containers"][0]["image"]
    async with running_podgang(api, nc, subjects, namespace, STUB_CONFIG):
        await server_side_apply(api, broken, namespace)
        found = await live_when(api, broken, namespace, "PodGangsReady", reason="Refused")
        message = condition(found, "PodGangsReady")["message"]
        assert message.startswith("the API server refuses what this PodCliqueSet makes: HTTP 422")
        assert "image: Required value" in message
        assert await pods(api, namespace) == {}
        await server_side_apply(api, workload(namespace, "trainer"), namespace)  # fixed
        await converged(api, namespace)
    assert await dead_letters(nc.jetstream(), subjects) == []


@pytest.mark.usefixtures("backend")
async def test_a_read_model_whose_consumer_is_lost_follows_again(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """The read model's consumer is its own, in memory, on one server; lost with that server
    (a cluster node killed), its fetches just timed out, for ever, and podgang waited on its
    own writes to show (found by the chaos suite, killing a node). Deleted here by hand:
    podgang notices, follows again after the last record it applied, and converges."""
    js = nc.jetstream()
    async with running_podgang(api, nc, subjects, namespace, STUB_CONFIG):
        durables = {subjects.service_name("podgang"), subjects.backend_service_name(NAME)}
        stream = subjects.objects_stream
        readers = [c.name for c in await js.consumers_info(stream) if c.name not in durables]
        assert readers
        for name in readers:
            await js.delete_consumer(stream, name)
        await server_side_apply(api, workload(namespace, "trainer"), namespace)
        await converged(api, namespace)


@pytest.mark.usefixtures("backend")
async def test_a_podcliqueset_groves_operator_drives_is_left_alone_and_says_so(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    """One PodCliqueSet, one driver: Grove's finalizer on it means Grove's operator claimed it.
    podgang makes nothing and writes nothing to it, but an Event; once the finalizer is gone
    (the migration in docs/operations.md), Gangway builds it."""
    pcs = workload(namespace, "trainer")
    pcs["metadata"]["finalizers"] = [labels.GROVE_FINALIZER]
    events = "/apis/events.k8s.io/v1/namespaces/{ns}/events"
    async with running_podgang(api, nc, subjects, namespace, STUB_CONFIG):
        await server_side_apply(api, pcs, namespace)
        said = await eventually(
            partial(objects, api, namespace, events), lambda e: "trainer.drivenbygrove" in e
        )
        assert said["trainer.drivenbygrove"]["reason"] == "DrivenByGrove"
        assert await podgangs(api, namespace) == {}
        assert "status" not in await live(api, pcs, namespace), "Grove's to write"
        await merge_patch(
            api, PODCLIQUESETS_API.path(namespace, "trainer"), {"metadata": {"finalizers": None}}
        )
        await converged(api, namespace)
