"""``run(backend)``: the whole life of a backend process."""

from __future__ import annotations

import asyncio
from functools import partial

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from gangway_backendkit.context import BackendContext
from gangway_backendkit.handler import PodGangHandler
from gangway_backendkit.protocol import Backend
from gangway_backendkit.rpc import serve_requests
from gangway_backendkit.settings import BackendSettings
from gangway_contracts import durables
from gangway_runtime import tasks
from gangway_runtime.consumer import Consumer
from gangway_runtime.kube import Kube
from gangway_runtime.service import connections
from gangway_runtime.service import run as run_service
from gangway_runtime.settings import load_settings


async def serve(
    backend: Backend,
    nc: NatsClient,
    js: JetStreamContext,
    kube: Kube,
    settings: BackendSettings,
    *,
    ready: asyncio.Event | None = None,
) -> None:
    """Init, then consume PodGangs and answer requests until cancelled; ``ready`` is set
    once both are going (the readiness probe)."""
    subjects = settings.subjects
    ctx = BackendContext(
        backend=backend.name,
        kube=kube,
        js=js,
        subjects=subjects,
        field_manager=subjects.backend_service_name(backend.name),
    )
    await backend.init(ctx)
    handler = PodGangHandler(backend, ctx)
    durable = durables.backend(subjects, backend.name)
    consumer = Consumer(js, subjects, handler, settings, durable)
    async with serve_requests(nc, ctx, backend):
        await consumer.subscribe()
        if ready is not None:
            ready.set()
        await tasks.run_together(consumer.run(), handler.journal.run())


async def _main(backend: Backend, settings: BackendSettings) -> None:
    service_name = settings.subjects.backend_service_name(backend.name)
    async with connections(service_name, settings) as conn:
        ready = asyncio.Event()
        conn.probes.ready_when("serving", ready.is_set)
        await serve(backend, conn.nc, conn.js, conn.kube, settings, ready=ready)


def run(backend: Backend, settings: BackendSettings | None = None) -> None:
    settings = settings or load_settings(BackendSettings)
    run_service(partial(_main, backend, settings), settings)
