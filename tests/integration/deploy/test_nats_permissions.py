"""Every service under its own NATS user, with the permissions deploy/ gives it, against a
real nats-server the setup user has provisioned: the whole flow still converges and no
service is refused anything; and what a service must not do, the server refuses: a backend
publishing another backend's requests, reading admission's replies or the objects directly;
admission writing objects; the watcher asking backends — and on the JetStream API, every
cross-service action: deleting, taking over or pulling from another service's consumer,
acknowledging its messages, changing or deleting a stream, forging another's journal."""

from __future__ import annotations

import asyncio
import contextlib
import json
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import nats
import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient
from nats.js.api import AckPolicy, ConsumerConfig

from gangway_admission.backends import NatsBackends
from gangway_admission.podgang import NatsPodgang
from gangway_contracts.codec import from_object
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.durables import durables
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.permissions import (
    ADMISSION,
    PODGANG,
    SETUP,
    VIEWER,
    WATCHER,
    Permissions,
    backend_user,
    inbox_prefix,
    nats_authorization,
    service_permissions,
)
from gangway_contracts.rpc import ValidateRequest
from gangway_contracts.subjects import Subjects
from gangway_localcluster.nats import NatsServer
from gangway_runtime.backends import BackendClient
from gangway_runtime.service import wait_for_streams
from gangway_runtime.settings import ConsumerSettings, ServiceSettings
from gangway_runtime.streams import provision
from tests.support.backends import running_backend
from tests.support.kube import server_side_apply
from tests.support.podgang import gated, pods, running_podgang, workload
from tests.support.store import eventually
from tests.support.stub_backend import NAME, StubBackend

OTHER = "other-scheduler"
CONFIG = {
    "profiles": [
        {"name": NAME, "external": True, "default": True},
        {"name": OTHER, "external": True},
    ]
}
BACKEND = backend_user(NAME)


@dataclass
class Users:
    server: NatsServer
    subjects: Subjects
    passwords: dict[str, str]
    refused: dict[str, list[str]] = field(default_factory=dict)

    async def connect(self, user: str) -> NatsClient:
        """As ``gangway_runtime.bus`` connects: the service's user and inbox prefix."""
        refused = self.refused.setdefault(user, [])

        async def on_error(exc: Exception) -> None:
            refused.append(str(exc))

        host = self.server.url.removeprefix("nats://")
        return await nats.connect(
            f"nats://{host}",
            user=user,
            password=self.passwords[user],
            inbox_prefix=inbox_prefix(self.subjects.service_name(user)).encode(),
            error_cb=on_error,
        )


@pytest.fixture
def users(subjects: Subjects) -> Iterator[Users]:
    permissions = service_permissions(subjects, parse_scheduler_config(CONFIG))
    passwords = {user: secrets.token_hex(8) for user in permissions}
    text = nats_authorization(permissions, passwords)
    with NatsServer.start(config=text) as server:
        yield Users(server, subjects, passwords)


@pytest.fixture
async def provisioned(users: Users, subjects: Subjects) -> None:
    """The bus as the setup step leaves it: streams, durable consumers, lease buckets."""
    async with connected(users, SETUP) as (setup,):
        settings = ConsumerSettings(subject_prefix=subjects.prefix)
        config = parse_scheduler_config(CONFIG)
        await provision(setup.jetstream(), subjects, settings, durables(subjects, config))
    assert users.refused.pop(SETUP) == []


@contextlib.asynccontextmanager
async def connected(users: Users, *names: str) -> AsyncIterator[list[NatsClient]]:
    conns = [await users.connect(name) for name in names]
    try:
        yield conns
    finally:
        for conn in conns:
            await conn.close()


@pytest.mark.usefixtures("provisioned")
async def test_every_service_works_under_its_own_user(
    api: ApiClient, users: Users, subjects: Subjects, namespace: str
) -> None:
    async with (
        connected(users, WATCHER, PODGANG, BACKEND, ADMISSION) as (
            watcher,
            podgang,
            backend,
            admission,
        ),
        running_backend(
            api, backend, subjects, namespace, StubBackend(), CONFIG, watcher_nc=watcher
        ),
        running_podgang(api, podgang, subjects, namespace, CONFIG, watcher_nc=watcher),
    ):
        await server_side_apply(api, workload(namespace, "trainer"), namespace)
        await eventually(
            lambda: pods(api, namespace),
            lambda found: len(found) == 4 and not any(map(gated, found.values())),
        )
        # Admission asks the backend to validate, and journals.
        pcs = from_object(workload(namespace, "trainer"), PodCliqueSet)
        ask = NatsBackends(BackendClient(admission, subjects, timeout=5))
        reply = await ask(NAME, ValidateRequest(operation="CREATE", podcliqueset=pcs))
        assert reply.allowed
        # ...and podgang to dry-run its pods (podgang answering as itself).
        tried = await NatsPodgang(admission, subjects, timeout=5)(pcs)
        assert tried.errors == []
        await admission.jetstream().publish(
            subjects.journal(namespace, "trainer", "AdmissionRejected", writer=ADMISSION), b"{}"
        )
    assert {user: found for user, found in users.refused.items() if found} == {}


async def refused(users: Users, user: str, act: str, subject: str) -> list[str]:
    async with connected(users, user) as (conn,):
        if act == "publish":
            await conn.publish(subject, b"x")
        else:
            await conn.subscribe(subject)
        await conn.flush()
        await asyncio.sleep(0.3)  # the server reports a violation asynchronously
    return users.refused.pop(user)


@pytest.mark.parametrize(
    ("user", "act", "subject"),
    [
        (BACKEND, "publish", "{p}.backend.default-scheduler.validate"),
        (BACKEND, "subscribe", "{p}.backend.default-scheduler.>"),
        (BACKEND, "subscribe", "_INBOX_{p}-admission.>"),
        (BACKEND, "subscribe", "{p}.objects.>"),
        (BACKEND, "publish", "{p}.objects.podgang.stub-scheduler.ns.x"),
        (ADMISSION, "publish", "{p}.objects.podcliqueset.-.ns.x"),
        (ADMISSION, "subscribe", "{p}.backend.*.validate"),
        # Only admission asks podgang for a dry run, and only podgang serves it.
        (BACKEND, "publish", "{p}.podgang.dry-run-pods"),
        (WATCHER, "subscribe", "{p}.podgang.dry-run-pods"),
        (ADMISSION, "subscribe", "{p}.podgang.dry-run-pods"),
        (WATCHER, "publish", "{p}.backend.stub-scheduler.validate"),
        (WATCHER, "publish", "{p}.journal.ns.pcs.PodGangCreated.-.podgang"),
        (PODGANG, "publish", "{p}.objects.pod.-.ns.x"),
        (PODGANG, "publish", "{p}.deadletter.{p}-admission"),
        (SETUP, "publish", "{p}.objects.podcliqueset.-.ns.x"),
        (VIEWER, "publish", "{p}.objects.podcliqueset.-.ns.x"),
        (VIEWER, "publish", "{p}.journal.ns.pcs.GatesLifted.x.podgang"),
    ],
)
async def test_what_a_service_must_not_do_is_refused(
    users: Users, subjects: Subjects, user: str, act: str, subject: str
) -> None:
    await expect_refused(users, user, act, subject.format(p=subjects.prefix))


async def expect_refused(users: Users, user: str, act: str, subject: str) -> None:
    found = await refused(users, user, act, subject)
    kind = "subscription" if act == "subscribe" else "publish"
    # nats-py lowercases the server's error text.
    assert found == [f'nats: permissions violation for {kind} to "{subject.lower()}"']


@pytest.mark.parametrize(
    ("user", "subject"),
    [
        # A backend deleting podgang's consumer, pulling another backend's messages or
        # acknowledging them, taking over a consumer by name (or without one: the server
        # takes the name from the request's body), changing its own, reading another
        # backend's objects, any stream message, or changing and deleting streams.
        (BACKEND, "$JS.API.CONSUMER.DELETE.{S}.{podgang}"),
        (BACKEND, "$JS.API.CONSUMER.MSG.NEXT.{S}.{other}"),
        (BACKEND, "$JS.API.CONSUMER.INFO.{S}.{other}"),
        (BACKEND, "$JS.ACK.{S}.{other}.1.7.7.1764000000000000000.0"),
        (BACKEND, "$JS.API.CONSUMER.CREATE.{S}.{other}"),
        (BACKEND, "$JS.API.CONSUMER.CREATE.{S}.{other}.{p}.objects.*.stub-scheduler.>"),
        (BACKEND, "$JS.API.CONSUMER.CREATE.{S}.{own}.{p}.objects.*.stub-scheduler.>"),
        (BACKEND, "$JS.API.CONSUMER.CREATE.{S}"),
        (BACKEND, "$JS.API.CONSUMER.DURABLE.CREATE.{S}.{own}"),
        (BACKEND, "$JS.API.CONSUMER.CREATE.{S}.mine.{p}.objects.podgang.other-scheduler.>"),
        (BACKEND, "$JS.API.DIRECT.GET.{S}.{p}.objects.podgang.other-scheduler.ns.x"),
        (BACKEND, "$JS.API.DIRECT.GET.{S}"),
        (BACKEND, "$JS.API.STREAM.MSG.GET.{S}"),
        (BACKEND, "$JS.API.STREAM.UPDATE.{D}"),
        (BACKEND, "$JS.API.STREAM.DELETE.{S}"),
        (BACKEND, "$JS.API.STREAM.CREATE.KV_{own}-leases"),
        (BACKEND, "$KV.{other}-leases.x"),
        (BACKEND, "{p}.journal.ns.pcs.PodGangCreated.x.{me}"),
        # Another backend's history, under its name or none (the subjects before writers).
        (BACKEND, "{p}.journal.ns.pcs.BackendSynced.x.{them}"),
        (BACKEND, "{p}.journal.ns.pcs.BackendSynced.x"),
        (BACKEND, "{p}.deadletter.{other}"),
        # Admission shrinking the objects stream, purging it, forging others' journal.
        (ADMISSION, "$JS.API.STREAM.UPDATE.{S}"),
        (ADMISSION, "$JS.API.STREAM.PURGE.{S}"),
        (ADMISSION, "$JS.API.STREAM.MSG.DELETE.{J}"),
        (ADMISSION, "{p}.journal.ns.pcs.PodGangCreated.x.admission"),
        (ADMISSION, "{p}.journal.ns.pcs.AdmissionRejected.x.podgang"),
        (ADMISSION, "{p}.journal.ns.pcs.BackendSynced.x.{me}"),
        (ADMISSION, "$JS.API.CONSUMER.CREATE.{S}.mine.{p}.objects.>"),
        # podgang taking over or reading a backend's consumer, deleting its own, streams.
        (PODGANG, "$JS.API.CONSUMER.CREATE.{S}.{own}"),
        (PODGANG, "$JS.API.CONSUMER.MSG.NEXT.{S}.{own}"),
        (PODGANG, "$JS.API.CONSUMER.DELETE.{S}.{podgang}"),
        (PODGANG, "$JS.API.CONSUMER.CREATE.{S}.{podgang}"),
        (PODGANG, "$JS.API.STREAM.CREATE.{S}"),
        (PODGANG, "{p}.journal.ns.pcs.BackendSynced.x.{me}"),
        (PODGANG, "{p}.journal.ns.pcs.BackendSynced.x.podgang"),
        # The watcher (it writes objects) reading a service's consumer, dropping streams.
        (WATCHER, "$JS.API.CONSUMER.MSG.NEXT.{S}.{podgang}"),
        (WATCHER, "$JS.API.STREAM.DELETE.{S}"),
        (WATCHER, "$JS.API.STREAM.PURGE.{S}"),
        # The viewer reads; it neither acknowledges, pulls a service's work, nor deletes.
        (VIEWER, "$JS.ACK.{S}.{podgang}.1.7.7.1764000000000000000.0"),
        (VIEWER, "$JS.API.CONSUMER.MSG.NEXT.{S}.{podgang}"),
        (VIEWER, "$JS.API.CONSUMER.DELETE.{S}.{own}"),
        (VIEWER, "$JS.API.STREAM.DELETE.{J}"),
        # The setup user makes streams and consumers, and never deletes them.
        (SETUP, "$JS.API.STREAM.DELETE.{S}"),
        (SETUP, "$JS.API.CONSUMER.DELETE.{S}.{podgang}"),
    ],
)
async def test_no_service_reaches_into_another_through_jetstream(
    users: Users, subjects: Subjects, user: str, subject: str
) -> None:
    names = {
        "p": subjects.prefix,
        "S": subjects.objects_stream,
        "J": subjects.journal_stream,
        "D": subjects.deadletter_stream,
        "podgang": subjects.service_name(PODGANG),
        "own": subjects.backend_service_name(NAME),
        "other": subjects.backend_service_name(OTHER),
        "me": BACKEND,
        "them": backend_user(OTHER),
    }
    await expect_refused(users, user, "publish", subject.format(**names))


@pytest.mark.usefixtures("provisioned")
async def test_a_refused_takeover_leaves_the_consumer_as_it_was(
    users: Users, subjects: Subjects
) -> None:
    """Found by trying: a create without a name in its subject, whose body names podgang's
    durable consumer, changed that consumer's filter. Unnamed or named, both are refused."""
    stream, podgang = subjects.objects_stream, durables(subjects, parse_scheduler_config(CONFIG))[0]
    takeover = ConsumerConfig(
        name=podgang.name,
        filter_subject=subjects.objects_filter("*", NAME),
        ack_policy=AckPolicy.EXPLICIT,
    )
    request = {"stream_name": stream, "config": takeover.as_dict()}
    async with connected(users, BACKEND, VIEWER, SETUP) as (backend, viewer, setup):
        for conn in (backend, viewer):
            with pytest.raises(TimeoutError):
                await conn.request(
                    f"$JS.API.CONSUMER.CREATE.{stream}", json.dumps(request).encode(), timeout=1
                )
            with pytest.raises(TimeoutError):
                await conn.jetstream().add_consumer(stream, takeover, timeout=1)
        info = await setup.jetstream().consumer_info(stream, podgang.name)
    assert info.config.filter_subjects == list(podgang.filters)
    users.refused.clear()


def test_the_generated_configuration_names_passwords_by_variable(subjects: Subjects) -> None:
    text = nats_authorization(
        {"backend-kai-scheduler": Permissions(publish=("a",), subscribe=("b",))}
    )
    assert "password: $GANGWAY_NATS_PASSWORD_BACKEND_KAI_SCHEDULER" in text


async def test_a_service_waits_for_the_setup_step(
    users: Users, subjects: Subjects, caplog: pytest.LogCaptureFixture
) -> None:
    """Under its own user a service may not make the streams: it waits (not ready), saying
    why, and goes on once the setup user has made them."""
    settings = ServiceSettings(subject_prefix=subjects.prefix)
    async with connected(users, PODGANG) as (podgang,):
        waiting = asyncio.create_task(wait_for_streams(podgang.jetstream(), settings))
        await eventually(
            lambda: asyncio.sleep(0, caplog.text), lambda log: "waiting for the setup step" in log
        )
        assert not waiting.done()
        async with connected(users, SETUP) as (setup,):
            config = parse_scheduler_config(CONFIG)
            consumer_settings = ConsumerSettings(subject_prefix=subjects.prefix)
            await provision(
                setup.jetstream(), subjects, consumer_settings, durables(subjects, config)
            )
        await asyncio.wait_for(waiting, 30)
    users.refused.clear()  # the creates it tried
