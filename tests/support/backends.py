"""A backend under test: the watcher (this test's objects) and the backend's process body,
both in the test's event loop, against the real API server and NATS."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any, TypeVar

import msgspec
from kubernetes_asyncio.client.api_client import ApiClient
from nats.aio.client import Client as NatsClient

from gangway_backendkit.protocol import Backend
from gangway_backendkit.run import serve
from gangway_backendkit.settings import BackendSettings
from gangway_contracts import labels
from gangway_contracts.codec import from_object, to_json
from gangway_contracts.config import parse_scheduler_config
from gangway_contracts.grove import PodGang
from gangway_contracts.resources import mirrored_resources
from gangway_contracts.rpc import PodsPrepared, PreparePodsRequest
from gangway_contracts.subjects import BackendOperation, Kind, Subjects
from gangway_runtime import tasks
from gangway_runtime.kube import KubeError
from tests.integration.watcher.conftest import only_this_test
from tests.support.kube import kube_of, resource_path, server_side_apply
from tests.support.store import running_watcher, until_ready

B = TypeVar("B", bound=Backend)


@contextlib.asynccontextmanager
async def running_backend(
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    namespace: str,
    backend: B,
    config: dict[str, Any],
    watcher_nc: NatsClient | None = None,
    **settings: Any,
) -> AsyncIterator[B]:
    """Ready once the watcher (on ``watcher_nc``, else the backend's connection) has listed
    and the backend consumes and answers requests."""
    resources = [
        only_this_test(r, namespace)
        for r in mirrored_resources(parse_scheduler_config(config))
        if r.kind != Kind.POD
    ]
    backend_settings = BackendSettings(subject_prefix=subjects.prefix, **settings)
    js = nc.jetstream()
    async with running_watcher(api, (watcher_nc or nc).jetstream(), subjects, resources):
        ready = asyncio.Event()
        task = asyncio.create_task(
            serve(backend, nc, js, kube_of(api), backend_settings, ready=ready)
        )
        try:
            await until_ready(task, ready, f"backend {backend.name}")
            yield backend
        finally:
            await tasks.stop(task)


async def live(api: ApiClient, doc: dict[str, Any], namespace: str) -> dict[str, Any]:
    """The object a manifest names as the API server has it now; {} when absent."""
    try:
        body = await kube_of(api).request("GET", await resource_path(api, doc, namespace))
    except KubeError as exc:
        if exc.status == 404:
            return {}
        raise
    found: dict[str, Any] = msgspec.json.decode(body)
    return found


def backend_synced(podgang: dict[str, Any]) -> dict[str, Any]:
    """The PodGang's BackendSynced condition, with the generation it should have observed."""
    status = podgang.get("status") or {}
    found = [c for c in status.get("conditions") or [] if c["type"] == labels.BACKEND_SYNCED]
    return {**found[0], "generation": podgang["metadata"]["generation"]} if found else {}


async def prepared_and_created(
    api: ApiClient,
    nc: NatsClient,
    subjects: Subjects,
    backend: str,
    gang: dict[str, Any],
    pod: dict[str, Any],
) -> dict[str, Any]:
    """``pod`` prepared by ``backend`` over NATS for ``gang``, as podgang asks, then created:
    the pod as the API server stored it (so the API accepts what the backend wrote)."""
    request = PreparePodsRequest(podgang=from_object(gang, PodGang), pods=[pod])
    subject = subjects.backend(backend, BackendOperation.PREPARE_PODS)
    reply = await nc.request(subject, to_json(request), timeout=10)
    [prepared] = msgspec.json.decode(reply.data, type=PodsPrepared).pods
    return await server_side_apply(api, prepared, pod["metadata"]["namespace"])


def gated_pod(namespace: str, name: str, gang: dict[str, Any]) -> dict[str, Any]:
    """A gated pod of ``gang``, as podgang would make it (for a backend's own tests)."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {
                labels.PODGANG: gang["metadata"]["name"],
                labels.PODCLIQUE: "llama-disagg-0-prefill-0-pworker",
            },
        },
        "spec": {
            "schedulingGates": [{"name": labels.PODGANG_PENDING_CREATION_GATE}],
            "containers": [{"name": "main", "image": "registry.k8s.io/pause:3.10"}],
        },
    }
