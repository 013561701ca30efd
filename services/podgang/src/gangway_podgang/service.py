"""The podgang service, wired: read model, reconciler, worker."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from gangway_contracts.config import SchedulerConfig
from gangway_contracts.permissions import PODGANG
from gangway_podgang.dry_run import serve_dry_runs
from gangway_podgang.handler import PodgangHandler, consumer
from gangway_podgang.readmodel import ReadModel
from gangway_podgang.reconcile import Reconciler
from gangway_podgang.report import Reporter
from gangway_podgang.settings import PodgangSettings
from gangway_podgang.writes import Actuator
from gangway_runtime import tasks
from gangway_runtime.backends import BackendClient
from gangway_runtime.journal import JournalWriter
from gangway_runtime.kube import Kube

NAME = PODGANG  # its NATS user, durable consumer and journal writer


async def serve(
    nc: NatsClient,
    js: JetStreamContext,
    kube: Kube,
    settings: PodgangSettings,
    config: SchedulerConfig,
    *,
    ready: asyncio.Event | None = None,
    after_write: Callable[[str], None] | None = None,
) -> None:
    """Load the read model, then reconcile until cancelled; ``ready`` is set once the model
    holds what the stream held at start and the consumer is bound (the readiness probe).
    ``after_write`` runs after every API write (tests crash the service there)."""
    subjects = settings.subjects
    service = subjects.service_name(NAME)
    model = ReadModel(js, subjects)
    journal = JournalWriter(js, subjects, NAME)
    reporter = Reporter(kube, journal, service)
    backends = BackendClient(nc, subjects, settings.request_timeout_seconds)
    actuator = Actuator(
        kube,
        backends,
        subjects,
        reporter,
        write_concurrency=settings.write_concurrency,
        after_write=after_write,
        startup_image=settings.startup_image,
    )
    reconciler = Reconciler(
        model,
        actuator,
        reporter,
        config,
        max_rounds=settings.max_rounds,
        gangs_in_flight=settings.gangs_in_flight,
        wait_seconds=settings.read_model_timeout_seconds,
        limits=settings.limits,
    )
    handler = PodgangHandler(
        subjects, model, reconciler.reconcile, settings.read_model_timeout_seconds
    )
    worker = consumer(js, subjects, handler, settings)

    async def work() -> None:
        await worker.subscribe()
        await model.wait_until(lambda: model.loaded, float("inf"))
        if ready is not None:
            ready.set()
        await worker.run()

    # The read model and the worker end together: a model that stopped following (its task
    # died unseen before) left the worker deciding on a stale view, /readyz still 200.
    async with serve_dry_runs(nc, subjects, kube, settings.startup_image):
        await tasks.run_together(model.follow(), work(), journal.run())
