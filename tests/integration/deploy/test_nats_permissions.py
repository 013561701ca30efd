"""Every service under its own NATS user, with the permissions deploy/ gives it, against a
real nats-server: the whole flow still converges and no service is refused anything; and
what a service must not do, the server refuses (a backend publishing another backend's
requests, reading admission's replies or the objects directly; admission writing objects;
the watcher asking backends)."""

from __future__ import annotations

import asyncio
import contextlib
import secrets
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field

import nats
import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_admission.backends import NatsBackends
from gangway_contracts.codec import from_object
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.grove import PodCliqueSet
from gangway_contracts.permissions import (
    ADMISSION,
    PODGANG,
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
from tests.support.backends import running_backend
from tests.support.kube import server_side_apply
from tests.support.podgang import gated, pods, running_podgang, workload
from tests.support.store import eventually
from tests.support.stub_backend import NAME, StubBackend

CONFIG = {"profiles": [{"name": NAME, "external": True, "default": True}]}
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


@contextlib.asynccontextmanager
async def connected(users: Users, *names: str) -> AsyncIterator[list[NatsClient]]:
    conns = [await users.connect(name) for name in names]
    try:
        yield conns
    finally:
        for conn in conns:
            await conn.close()


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
        ask = NatsBackends(admission, subjects, timeout=5)
        reply = await ask(NAME, ValidateRequest(operation="CREATE", podcliqueset=pcs))
        assert reply.allowed
        await admission.jetstream().publish(subjects.journal(namespace, "trainer", "X"), b"{}")
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
        (WATCHER, "publish", "{p}.backend.stub-scheduler.validate"),
        (WATCHER, "publish", "{p}.journal.ns.pcs.PodGangCreated"),
        (PODGANG, "publish", "{p}.objects.pod.-.ns.x"),
        (PODGANG, "publish", "{p}.deadletter.{p}-admission"),
    ],
)
async def test_what_a_service_must_not_do_is_refused(
    users: Users, subjects: Subjects, user: str, act: str, subject: str
) -> None:
    subject = subject.format(p=subjects.prefix)
    found = await refused(users, user, act, subject)
    kind = "subscription" if act == "subscribe" else "publish"
    # nats-py lowercases the server's error text.
    assert found == [f'nats: permissions violation for {kind} to "{subject.lower()}"']


def test_the_generated_configuration_names_passwords_by_variable(subjects: Subjects) -> None:
    text = nats_authorization(
        {"backend-kai-scheduler": Permissions(publish=("a",), subscribe=("b",))}
    )
    assert "password: $GANGWAY_NATS_PASSWORD_BACKEND_KAI_SCHEDULER" in text
