"""The Kueue stage's life: its context, its durable consumer over every PodGang and its
Workloads, its journal; ready once consuming."""

from __future__ import annotations

import asyncio

from nats.js import JetStreamContext

from gangway_backendkit.context import BackendContext
from gangway_contracts import durables, kueue
from gangway_contracts.config import SchedulerConfig
from gangway_runtime import tasks
from gangway_runtime.consumer import Consumer
from gangway_runtime.kube import Kube
from gangway_runtime.settings import ConsumerSettings
from gangway_stage_kueue.handler import StageHandler
from gangway_stage_kueue.workload import WORKLOADS


async def serve(
    js: JetStreamContext,
    kube: Kube,
    settings: ConsumerSettings,
    *,
    config: SchedulerConfig,
    ready: asyncio.Event | None = None,
) -> None:
    """Consume until cancelled; refuse to start (one line) where Kueue is not installed."""
    subjects = settings.subjects
    ctx = BackendContext(
        backend=kueue.STAGE,
        kube=kube,
        js=js,
        subjects=subjects,
        field_manager=subjects.service_name(kueue.STAGE),
    )
    await ctx.require(WORKLOADS, "install Kueue (its CRDs and its manager) before enabling it")
    handler = StageHandler(ctx, config)
    consumer = Consumer(
        js, subjects, handler, settings, durables.stage_kueue(subjects, config.kueue_topology)
    )
    await consumer.subscribe()
    if ready is not None:
        ready.set()
    await tasks.run_together(consumer.run(), handler.journal.run())
