"""The admission service, wired: the webhook over HTTPS, backends over NATS, topology levels
from the API server, rejections into the journal."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Sequence
from functools import partial

import msgspec
from aiohttp import web
from nats.aio.client import Client as NatsClient
from nats.js import JetStreamContext

from gangway_admission.backends import NatsBackends
from gangway_admission.podgang import NatsPodgang
from gangway_admission.settings import AdmissionSettings
from gangway_admission.tls import ReloadingCertificate
from gangway_admission.verdict import Policy
from gangway_admission.webhook import Webhook
from gangway_contracts.config import SchedulerConfig
from gangway_contracts.grove import ClusterTopologyBinding, PodCliqueSet
from gangway_contracts.permissions import ADMISSION
from gangway_contracts.resources import CLUSTER_TOPOLOGY_BINDINGS
from gangway_runtime import tasks
from gangway_runtime.backends import BackendClient
from gangway_runtime.journal import JournalWriter
from gangway_runtime.kube import ApiResource, Kube, KubeError

log = logging.getLogger(__name__)

NAME = ADMISSION  # its NATS user and journal writer
BINDINGS = ApiResource(
    CLUSTER_TOPOLOGY_BINDINGS.group,
    CLUSTER_TOPOLOGY_BINDINGS.versions[0],
    CLUSTER_TOPOLOGY_BINDINGS.plural,
    namespaced=False,
)


def bound_port(site: web.TCPSite, asked: int) -> int:
    """The port a started site listens on: the one the OS chose when 0 was asked for."""
    sockets = getattr(site._server, "sockets", None) or []
    port: int = sockets[0].getsockname()[1] if sockets else asked
    return port


async def topology_levels(kube: Kube, pcs: PodCliqueSet) -> tuple[Sequence[str] | None, str | None]:
    """The levels of the ClusterTopologyBinding the PodCliqueSet names, broadest first."""
    name = pcs.topology_name
    if not name:
        return None, None
    try:
        body = await kube.request("GET", BINDINGS.path(name=name))
    except KubeError as exc:
        return (
            None,
            f'ClusterTopologyBinding "{name}" not read ({exc.status}): Grove\'s domains used',
        )
    try:
        binding = msgspec.json.decode(body, type=ClusterTopologyBinding)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        return None, f'ClusterTopologyBinding "{name}" unreadable ({exc}): Grove\'s domains used'
    return [level.domain for level in binding.spec.levels], None


@contextlib.asynccontextmanager
async def listening(
    nc: NatsClient,
    js: JetStreamContext,
    kube: Kube,
    settings: AdmissionSettings,
    config: SchedulerConfig,
) -> AsyncIterator[int]:
    """The webhook, listening; yields the port it bound (0 in settings: any free one)."""
    certificate = ReloadingCertificate(settings.tls_cert_file, settings.tls_key_file)
    certificate.load()
    subjects = settings.subjects
    rejections = JournalWriter(js, subjects, NAME)
    webhook = Webhook(
        config,
        NatsBackends(BackendClient(nc, subjects, settings.backend_timeout_seconds)),
        partial(topology_levels, kube),
        rejections.append,
        policy=Policy(fail_open=settings.failure_policy == "Ignore", limits=settings.limits),
        review_timeout=settings.review_timeout_seconds,
        service=subjects.service_name(NAME),
        dry_run=(
            NatsPodgang(nc, subjects, settings.dry_run_timeout_seconds)
            if settings.dry_run_pods
            else None
        ),
    )
    runner = web.AppRunner(webhook.app(settings.max_request_bytes), access_log=None)
    await runner.setup()
    watching = tasks.spawn(certificate.watch(settings.tls_reload_seconds), "certificate reload")
    journaling = tasks.spawn(rejections.run(), "journal")
    try:
        site = web.TCPSite(
            runner, settings.webhook_host, settings.webhook_port, ssl_context=certificate.context
        )
        await site.start()
        port = bound_port(site, settings.webhook_port)
        log.info("webhook listening on https://%s:%d", settings.webhook_host, port)
        yield port
    finally:
        watching.cancel()
        await tasks.stop(journaling)
        await runner.cleanup()


async def serve(
    nc: NatsClient,
    js: JetStreamContext,
    kube: Kube,
    settings: AdmissionSettings,
    config: SchedulerConfig,
    *,
    ready: asyncio.Event | None = None,
) -> None:
    """Answer reviews until cancelled; ``ready`` is set once the webhook listens."""
    async with listening(nc, js, kube, settings, config):
        if ready is not None:
            ready.set()
        await asyncio.Event().wait()
