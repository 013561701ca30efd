"""The store converges through what breaks in production: a restarted API server (410 Gone),
two watchers at once, NATS going away in the middle of a stream of changes."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_contracts.resources import PODCLIQUESETS
from gangway_contracts.subjects import Kind, Subjects
from gangway_localcluster.controlplane import ControlPlane
from gangway_localcluster.crds import crd_files
from gangway_localcluster.nats import NatsServer
from gangway_runtime import bus
from gangway_runtime.settings import ServiceSettings
from tests.integration.watcher.conftest import only_this_test, pcs_relists, podcliqueset
from tests.support.kube import (
    admin_client,
    delete_object,
    merge_patch,
    resource_path,
    server_side_apply,
)
from tests.support.store import (
    Store,
    body,
    eventually,
    holds,
    holds_deleted,
    holds_label,
    running_watcher,
    stored,
)


@pytest.fixture
def own_control_plane() -> Iterator[ControlPlane]:
    """A control plane of its own: this test restarts the API server."""
    with ControlPlane.start(controller_manager=False, crds=crd_files(schedulers=True)) as cp:
        yield cp


@contextlib.asynccontextmanager
async def client_for(cp: ControlPlane) -> AsyncIterator[ApiClient]:
    async with admin_client(cp.kubeconfig) as api:
        yield api


async def create_namespace(api: ApiClient, name: str) -> None:
    doc = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
    await server_side_apply(api, doc, "")


async def test_api_server_restart_and_expired_watch_converge(
    own_control_plane: ControlPlane, nc: NatsClient, subjects: Subjects
) -> None:
    js = nc.jetstream()
    namespace = "restarts"
    resources = [only_this_test(PODCLIQUESETS, namespace)]
    async with client_for(own_control_plane) as api:
        await create_namespace(api, namespace)
        for name in ("a", "b"):
            await server_side_apply(api, podcliqueset(namespace, name), namespace)
        async with running_watcher(api, js, subjects, resources) as watcher:
            await eventually(lambda: stored(js, subjects), lambda r: len(r) == 2)

            # 1. The watch breaks under a running watcher; it resumes when the server is back.
            await asyncio.to_thread(own_control_plane.restart_apiserver)
            await server_side_apply(api, podcliqueset(namespace, "c"), namespace)
            await eventually(lambda: stored(js, subjects), lambda r: len(r) == 3)

            # 2. A watcher that was away while the server restarted comes back with a
            # resourceVersion the new server has never heard of: 410, relist, no ghosts.
            reflector = watcher.reflector(Kind.PODCLIQUESET)
            away_at = reflector.resource_version
        assert away_at
        await delete_object(api, podcliqueset(namespace, "a"), namespace)
        path = await resource_path(api, podcliqueset(namespace, "b"), namespace)
        await merge_patch(api, path, {"metadata": {"labels": {"while": "away"}}})
        await asyncio.to_thread(own_control_plane.restart_apiserver)
        gone_before = pcs_relists("gone")

        reflector.resource_version = away_at  # resume exactly where it stopped
        run = asyncio.create_task(reflector.run())
        try:
            final: Store = await eventually(
                lambda: stored(js, subjects),
                lambda r: (
                    len(r) == 3
                    and r[(namespace, "a")].deleted
                    and body(r[(namespace, "b")])["metadata"]["labels"].get("while") == "away"
                ),
            )
        finally:
            run.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await run
    assert not final[(namespace, "c")].deleted
    assert pcs_relists("gone") == gone_before + 1


async def test_two_watchers_store_each_change_once(
    api: ApiClient, nc: NatsClient, subjects: Subjects, namespace: str
) -> None:
    js = nc.jetstream()
    resources = [only_this_test(PODCLIQUESETS, namespace)]
    async with (
        running_watcher(api, js, subjects, resources),
        running_watcher(api, js, subjects, resources),
    ):
        before = (await js.stream_info(subjects.objects_stream)).state.last_seq
        changes = 0

        async def step(until: Callable[[Store], bool]) -> None:
            await eventually(lambda: stored(js, subjects, "*", namespace), until)

        names = [f"pcs-{i}" for i in range(5)]
        for name in names:
            await server_side_apply(api, podcliqueset(namespace, name), namespace)
            changes += 1
            await step(holds((namespace, name)))
        for name in names:
            path = await resource_path(api, podcliqueset(namespace, name), namespace)
            await merge_patch(api, path, {"metadata": {"labels": {"step": "2"}}})
            changes += 1
            await step(holds_label((namespace, name), "step"))
        for name in names[:2]:
            await delete_object(api, podcliqueset(namespace, name), namespace)
            changes += 1
            await step(holds_deleted((namespace, name)))
        after = (await js.stream_info(subjects.objects_stream)).state.last_seq
    # Both watchers offered every change; the stream took each exactly once.
    assert after - before == changes


async def test_nats_restart_mid_stream_loses_nothing(
    api: ApiClient, subjects: Subjects, namespace: str
) -> None:
    resources = [only_this_test(PODCLIQUESETS, namespace)]
    with NatsServer.start() as server:
        settings = ServiceSettings(nats_url=server.url, subject_prefix=subjects.prefix)
        nc = await bus.connect(settings, "watcher-under-test")
        js = nc.jetstream()
        try:
            async with running_watcher(api, js, subjects, resources):
                for i in range(3):
                    await server_side_apply(api, podcliqueset(namespace, f"early-{i}"), namespace)
                await eventually(lambda: stored(js, subjects), lambda r: len(r) == 3)

                # NATS goes away while the cluster keeps changing.
                await asyncio.to_thread(server.stop_server)
                for i in range(10):
                    await server_side_apply(api, podcliqueset(namespace, f"late-{i}"), namespace)
                await delete_object(api, podcliqueset(namespace, "early-0"), namespace)
                path = await resource_path(api, podcliqueset(namespace, "early-1"), namespace)
                await merge_patch(api, path, {"metadata": {"labels": {"during": "outage"}}})
                await asyncio.sleep(2)  # the watcher keeps trying meanwhile
                await asyncio.to_thread(server.restart)

                final: Store = await eventually(
                    lambda: stored(js, subjects),
                    lambda r: len(r) == 13 and r[(namespace, "early-0")].deleted,
                )
        finally:
            await nc.close()
    assert sum(1 for r in final.values() if not r.deleted) == 12
    assert body(final[(namespace, "early-1")])["metadata"]["labels"]["during"] == "outage"
